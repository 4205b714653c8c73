-- +goose Up
-- Benchmark reports: what an agent measured on a node, beside a snapshot of
-- the catalogue's nominal figures taken when the report was stored (so a
-- report never changes when the catalogue does).
CREATE TABLE benchmark_reports (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id        INTEGER NOT NULL REFERENCES nodes(id),
    gpu_model      TEXT NOT NULL,
    gpus           INTEGER NOT NULL,
    -- trigger: 'verified' (after the node's GPUs first passed), 'weekly', 'on_demand'.
    trigger        TEXT NOT NULL,
    simulated      BOOLEAN NOT NULL,
    task_id        INTEGER UNIQUE,
    nominal        TEXT NOT NULL,
    report         TEXT NOT NULL,
    -- Headline figures (per GPU), null when the load was absent.
    bf16_tflops    REAL,
    fp16_tflops    REAL,
    mem_bw_gbps    REAL,
    pct_of_nominal REAL,
    peak_temp_c    INTEGER,
    measured_at    DATETIME NOT NULL,
    created_at     DATETIME NOT NULL
);
CREATE INDEX benchmark_reports_node ON benchmark_reports (node_id, measured_at);

-- The latest report per node and its 30-day uptime, kept on the node for
-- the offer list (one read per node, not per offer view).
ALTER TABLE nodes ADD COLUMN latest_report_id INTEGER;
ALTER TABLE nodes ADD COLUMN uptime_30d_pct REAL;
ALTER TABLE nodes ADD COLUMN uptime_updated_at DATETIME;
ALTER TABLE nodes ADD COLUMN ping_url TEXT NOT NULL DEFAULT '';

-- SLA credits: one per rental and period ('YYYY-MM' in Asia/Shanghai),
-- with the computation that produced it.
CREATE TABLE sla_credits (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    rental_id     INTEGER NOT NULL REFERENCES rentals(id),
    period        TEXT NOT NULL,
    tier          TEXT NOT NULL,
    period_secs   INTEGER NOT NULL,
    downtime_secs INTEGER NOT NULL,
    uptime_pct    REAL NOT NULL,
    credit_pct    INTEGER NOT NULL,
    billed_fen    INTEGER NOT NULL,
    credit_fen    INTEGER NOT NULL,
    txn_id        INTEGER,
    created_at    DATETIME NOT NULL,
    UNIQUE (rental_id, period)
);

-- +goose Down
DROP TABLE sla_credits;
ALTER TABLE nodes DROP COLUMN ping_url;
ALTER TABLE nodes DROP COLUMN uptime_updated_at;
ALTER TABLE nodes DROP COLUMN uptime_30d_pct;
ALTER TABLE nodes DROP COLUMN latest_report_id;
DROP INDEX benchmark_reports_node;
DROP TABLE benchmark_reports;
