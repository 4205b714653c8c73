-- +goose Up
-- Browser access to a rental's container through its node's tunnel.
--
-- ports: the container ports the renter declared (comma-separated, e.g.
-- "6006,7860"), which the marketplace proxies at /rentals/{id}/ports/{port}/.
ALTER TABLE rentals ADD COLUMN ports TEXT NOT NULL DEFAULT '';

-- A share link: a declared port of a rental opened to anyone holding the
-- link, until it expires or is revoked. Only the token's SHA-256 is kept.
CREATE TABLE port_shares (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    rental_id  INTEGER NOT NULL REFERENCES rentals (id),
    port       INTEGER NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_by INTEGER NOT NULL REFERENCES users (id),
    created_at DATETIME NOT NULL,
    expires_at DATETIME NOT NULL,
    revoked_at DATETIME
);
CREATE INDEX port_shares_rental ON port_shares (rental_id);

-- Which web replica holds a node's tunnel now, so that another replica
-- can pass a renter's request on to it (PostgreSQL with several web
-- replicas; a single process finds its own tunnels in memory).
CREATE TABLE tunnel_holders (
    node_id      INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
    replica_url  TEXT NOT NULL,
    connected_at DATETIME NOT NULL
);

-- The catalogue's image with Jupyter that the tests build locally (as
-- debian-sshd; it is on no registry): Debian's Notebook 6.4 beside sshd.
INSERT INTO images (slug, name, framework, framework_version, cuda_version, reference, jupyter, created_at) VALUES
    ('debian-jupyter', 'Debian 12 (sshd, python3, Jupyter Notebook 6.4)', 'Debian', '12', '', 'suanli-test/jupyter:bookworm', TRUE, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'));

-- +goose Down
DELETE FROM images WHERE slug = 'debian-jupyter';
DROP TABLE tunnel_holders;
DROP TABLE port_shares;
ALTER TABLE rentals DROP COLUMN ports;
