-- +goose Up
-- Witnesses beyond the provider (DESIGN.md §8): what the verifier run
-- inside a rental's container measured on the rented GPUs, posted with a
-- credential scoped to that one rental; and the platform's audit rentals.
--
-- witness_credentials: the SHA-256 (hex) of each token handed to a
-- rental's container with a launch task (a task handed out again gets a
-- new one; the ones before stay valid for that rental, and none is worth
-- anything once the rental no longer runs).
CREATE TABLE witness_credentials (
    token_hash TEXT PRIMARY KEY,
    rental_id  INTEGER NOT NULL REFERENCES rentals(id) ON DELETE CASCADE,
    issued_at  DATETIME NOT NULL
);
CREATE INDEX witness_credentials_rental ON witness_credentials (rental_id);

-- witness_results: one verifier run. source is 'renter' (a renter's
-- rental) or 'audit' (a platform audit rental); simulated is the node's
-- server-side state when the result came (a simulated node's verifier
-- has no GPU to measure). bf16_tflops is NULL when no GEMM ran (an image
-- without CUDA PyTorch). detail is the verifier's per-GPU report (JSON).
CREATE TABLE witness_results (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    rental_id   INTEGER NOT NULL REFERENCES rentals(id) ON DELETE CASCADE,
    offer_id    INTEGER NOT NULL,
    node_id     INTEGER NOT NULL,
    source      TEXT NOT NULL,
    simulated   BOOLEAN NOT NULL DEFAULT FALSE,
    gpus        INTEGER NOT NULL,
    gpu_name    TEXT NOT NULL DEFAULT '',
    healthy     BOOLEAN NOT NULL DEFAULT TRUE,
    bf16_tflops REAL,
    gemm_note   TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT '',
    created_at  DATETIME NOT NULL
);
CREATE INDEX witness_results_offer_at ON witness_results (offer_id, created_at);
CREATE INDEX witness_results_rental ON witness_results (rental_id);

-- audit_runs: the platform's audit rentals, one per offer and run:
-- status 'running' until the verifier's result came ('passed'), the
-- deadline passed ('timed_out') or the rent failed ('failed').
CREATE TABLE audit_runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    offer_id    INTEGER NOT NULL,
    rental_id   INTEGER,
    status      TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    started_at  DATETIME NOT NULL,
    deadline    DATETIME NOT NULL,
    finished_at DATETIME
);
CREATE INDEX audit_runs_offer ON audit_runs (offer_id, started_at);
CREATE INDEX audit_runs_status ON audit_runs (status);

-- +goose Down
DROP TABLE audit_runs;
DROP TABLE witness_results;
DROP TABLE witness_credentials;
