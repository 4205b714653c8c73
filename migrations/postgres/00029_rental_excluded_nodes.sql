-- +goose Up
-- rental_excluded_nodes: the nodes a launch by instance type was told to
-- avoid (exclude_nodes, a launcher's failover after a bad node, issue
-- 19). Written with the rental; the nodes a failed check or a move tries
-- next (rentalstore.CandidateNodes) and a start (StartNodes) skip them
-- for the rental's whole life. node_id has no foreign key: a launcher may
-- name a node that no longer exists, which excludes nothing.
CREATE TABLE rental_excluded_nodes (
    rental_id BIGINT NOT NULL REFERENCES rentals(id),
    node_id   BIGINT NOT NULL,
    PRIMARY KEY (rental_id, node_id)
);

-- +goose Down
DROP TABLE rental_excluded_nodes;
