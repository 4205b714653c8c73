-- +goose Up
-- A renter's credential for pulling a rental's custom image from a
-- private registry. The password is sealed (AES-256-GCM under a key
-- derived from the platform's secret key, bound to the rental and the
-- username); the server opens it only to hand a launch task to the
-- node's agent, so it is in no other row (agent_tasks.payload holds no
-- credential). Deleted when the rental is released.
CREATE TABLE rental_registry_auths (
    rental_id       INTEGER PRIMARY KEY REFERENCES rentals(id),
    username        TEXT NOT NULL,
    sealed_password TEXT NOT NULL,
    created_at      DATETIME NOT NULL
);

-- +goose Down
DROP TABLE rental_registry_auths;
