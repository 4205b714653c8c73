-- +goose Up
-- A bounded history of rented GPUs' telemetry, for the rental's usage
-- page and API. The heartbeat writes a row when it rewrites a busy GPU's
-- reading (about every 30 s per GPU, and on each change of its verdict);
-- the purge job deletes rows older than 24 hours, so a GPU keeps at
-- most about 2,880 samples. A rental's samples are those of the GPUs it
-- held while it held them (rental_gpus' attached_at..released_at).
CREATE TABLE gpu_samples (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    gpu_id       INTEGER NOT NULL REFERENCES gpus(id) ON DELETE CASCADE,
    at           DATETIME NOT NULL,
    util_pct     INTEGER NOT NULL,
    mem_used_mib INTEGER NOT NULL,
    power_w      REAL NOT NULL,
    temp_c       INTEGER NOT NULL,
    sm_clock_mhz INTEGER NOT NULL
);
CREATE INDEX gpu_samples_gpu_at ON gpu_samples (gpu_id, at);
CREATE INDEX gpu_samples_at ON gpu_samples (at);

-- +goose Down
DROP TABLE gpu_samples;
