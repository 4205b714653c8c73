-- +goose Up
-- The image references a node pulled with a renter's registry
-- credentials. The daemon keeps one copy per reference for everyone: a
-- later launch of such a reference without those credentials must pull
-- again (the registry then says whether that renter may have it) rather
-- than run the copy another renter was allowed to pull.
CREATE TABLE node_private_pulls (
    node_id   INTEGER NOT NULL REFERENCES nodes (id),
    reference TEXT NOT NULL,
    pulled_at DATETIME NOT NULL,
    PRIMARY KEY (node_id, reference)
);

-- +goose Down
DROP TABLE node_private_pulls;
