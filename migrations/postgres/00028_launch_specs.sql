-- +goose Up
-- What a launcher gives a rental beside the offer (issue 19).
--
-- rental_launch_specs: the rental's name (free text, not unique; a
-- launcher finds its rentals by labels), and the container's
-- environment and on-start script, each sealed like a registry password
-- (secrets.Box, bound to the rental: an environment holds API keys and
-- a script may too). The server opens them only to hand a launch task
-- to the node's agent, so agent_tasks.payload holds neither. The sealed
-- columns are emptied when the rental is released.
CREATE TABLE rental_launch_specs (
    rental_id      BIGINT PRIMARY KEY REFERENCES rentals(id),
    name           TEXT NOT NULL DEFAULT '',
    sealed_env     TEXT NOT NULL DEFAULT '',
    sealed_onstart TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX rental_launch_specs_name ON rental_launch_specs (name);

-- rental_labels: key=value labels a launcher lists its rentals by
-- (GET /api/v1/rentals?label=k=v).
CREATE TABLE rental_labels (
    rental_id BIGINT NOT NULL REFERENCES rentals(id),
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (rental_id, key)
);
CREATE INDEX rental_labels_key_value ON rental_labels (key, value);

-- +goose Down
DROP TABLE rental_labels;
DROP TABLE rental_launch_specs;
