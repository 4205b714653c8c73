-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN;

-- Interruptible rentals (issue 18). An offer opts in with a floor price
-- per GPU-hour (NULL: not interruptible); a rental with a bid is
-- interruptible and runs at its bid. An interrupted rental holds no GPUs,
-- keeps its volume and resumes by itself when GPUs at its bid are free
-- (unless its renter stopped it). rentals is rebuilt for the new status
-- (SQLite cannot change a CHECK in place, as in 00013 and 00024).
ALTER TABLE offers ADD COLUMN interruptible_floor_per_gpu_hour_fen INTEGER CHECK (interruptible_floor_per_gpu_hour_fen > 0);
CREATE TABLE rentals_new (
    id                        INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id                    INTEGER NOT NULL REFERENCES orgs(id),
    user_id                   INTEGER NOT NULL REFERENCES users(id),
    offer_id                  INTEGER NOT NULL REFERENCES offers(id),
    provider_id               INTEGER NOT NULL REFERENCES providers(id),
    node_id                   INTEGER REFERENCES nodes(id),
    gpus                      INTEGER NOT NULL CHECK (gpus BETWEEN 1 AND 64),
    sla                       TEXT NOT NULL,
    term                      TEXT NOT NULL CHECK (term IN ('on_demand', 'week', 'month')),
    status                    TEXT NOT NULL CHECK (status IN ('pending', 'provisioning', 'running', 'migrating', 'stopping', 'stopped', 'failed', 'interrupted')),
    ssh_public_key            TEXT NOT NULL,
    workspace_id              TEXT NOT NULL UNIQUE,
    price_per_gpu_hour_fen    INTEGER NOT NULL,
    offpeak_pct               INTEGER NOT NULL,
    student_pct               INTEGER NOT NULL,
    sla_surcharge_pct         INTEGER NOT NULL,
    term_price_fen            INTEGER,
    auto_renew                BOOLEAN NOT NULL DEFAULT FALSE,
    access                    TEXT NOT NULL DEFAULT '',
    checks                    TEXT NOT NULL DEFAULT '',
    failure                   TEXT NOT NULL DEFAULT '',
    stop_reason               TEXT NOT NULL DEFAULT '',
    attempts                  INTEGER NOT NULL DEFAULT 0,
    running_since             DATETIME,
    billed_until              DATETIME,
    carry_num                 INTEGER NOT NULL DEFAULT 0,
    billed_fen                INTEGER NOT NULL DEFAULT 0,
    downtime_secs             INTEGER NOT NULL DEFAULT 0,
    down_since                DATETIME,
    free                      BOOLEAN NOT NULL DEFAULT FALSE,
    ends_at                   DATETIME,
    low_balance_mailed        BOOLEAN NOT NULL DEFAULT FALSE,
    stopped_at                DATETIME,
    created_at                DATETIME NOT NULL,
    updated_at                DATETIME NOT NULL,
    min_billed_s              INTEGER NOT NULL DEFAULT 60,
    earned_fen                INTEGER NOT NULL DEFAULT 0 CHECK (earned_fen >= 0),
    failure_msg               TEXT NOT NULL DEFAULT '',
    image                     TEXT NOT NULL DEFAULT '',
    volume_id                 INTEGER REFERENCES volumes(id),
    released_at               DATETIME,
    no_gpu                    BOOLEAN NOT NULL DEFAULT FALSE,
    no_gpu_price_per_hour_fen INTEGER NOT NULL DEFAULT 0 CHECK (no_gpu_price_per_hour_fen >= 0),
    ports                     TEXT NOT NULL DEFAULT '',
    idle_stop_below_pct       INTEGER NOT NULL DEFAULT 0 CHECK (idle_stop_below_pct BETWEEN 0 AND 100),
    idle_stop_minutes         INTEGER NOT NULL DEFAULT 0 CHECK (idle_stop_minutes = 0 OR idle_stop_minutes BETWEEN 5 AND 1440),
    idle_warned_at            DATETIME,
    bid_per_gpu_hour_fen      INTEGER CHECK (bid_per_gpu_hour_fen > 0),
    interrupted_at            DATETIME,
    interrupt_reason          TEXT NOT NULL DEFAULT '',
    interrupt_msg             TEXT NOT NULL DEFAULT '',
    grace_until               DATETIME
);
INSERT INTO rentals_new (id, org_id, user_id, offer_id, provider_id, node_id, gpus, sla, term, status, ssh_public_key, workspace_id, price_per_gpu_hour_fen, offpeak_pct, student_pct, sla_surcharge_pct, term_price_fen, auto_renew, access, checks, failure, stop_reason, attempts, running_since, billed_until, carry_num, billed_fen, downtime_secs, down_since, free, ends_at, low_balance_mailed, stopped_at, created_at, updated_at, min_billed_s, earned_fen, failure_msg, image, volume_id, released_at, no_gpu, no_gpu_price_per_hour_fen, ports, idle_stop_below_pct, idle_stop_minutes, idle_warned_at)
    SELECT id, org_id, user_id, offer_id, provider_id, node_id, gpus, sla, term, status, ssh_public_key, workspace_id, price_per_gpu_hour_fen, offpeak_pct, student_pct, sla_surcharge_pct, term_price_fen, auto_renew, access, checks, failure, stop_reason, attempts, running_since, billed_until, carry_num, billed_fen, downtime_secs, down_since, free, ends_at, low_balance_mailed, stopped_at, created_at, updated_at, min_billed_s, earned_fen, failure_msg, image, volume_id, released_at, no_gpu, no_gpu_price_per_hour_fen, ports, idle_stop_below_pct, idle_stop_minutes, idle_warned_at FROM rentals;
DROP TABLE rentals;
ALTER TABLE rentals_new RENAME TO rentals;
CREATE INDEX rentals_status ON rentals (status);
CREATE INDEX rentals_org ON rentals (org_id, created_at);
CREATE INDEX rentals_node ON rentals (node_id, status);
CREATE INDEX rentals_provider ON rentals (provider_id, created_at);
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND earned_fen < billed_fen;
CREATE UNIQUE INDEX rentals_volume_attached ON rentals (volume_id)
    WHERE volume_id IS NOT NULL AND released_at IS NULL AND status <> 'failed';
-- The resume pass reads the interrupted rentals by offer, highest bid first.
CREATE INDEX rentals_interrupted ON rentals (offer_id, bid_per_gpu_hour_fen DESC, id) WHERE status = 'interrupted';
-- Victims are chosen among a node's live bids.
CREATE INDEX rentals_node_bids ON rentals (node_id, bid_per_gpu_hour_fen, id) WHERE bid_per_gpu_hour_fen IS NOT NULL;

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
PRAGMA foreign_keys = OFF;
BEGIN;
UPDATE rentals SET status = 'stopped' WHERE status = 'interrupted';
CREATE TABLE rentals_new (
    id                        INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id                    INTEGER NOT NULL REFERENCES orgs(id),
    user_id                   INTEGER NOT NULL REFERENCES users(id),
    offer_id                  INTEGER NOT NULL REFERENCES offers(id),
    provider_id               INTEGER NOT NULL REFERENCES providers(id),
    node_id                   INTEGER REFERENCES nodes(id),
    gpus                      INTEGER NOT NULL CHECK (gpus BETWEEN 1 AND 64),
    sla                       TEXT NOT NULL,
    term                      TEXT NOT NULL CHECK (term IN ('on_demand', 'week', 'month')),
    status                    TEXT NOT NULL CHECK (status IN ('pending', 'provisioning', 'running', 'migrating', 'stopping', 'stopped', 'failed')),
    ssh_public_key            TEXT NOT NULL,
    workspace_id              TEXT NOT NULL UNIQUE,
    price_per_gpu_hour_fen    INTEGER NOT NULL,
    offpeak_pct               INTEGER NOT NULL,
    student_pct               INTEGER NOT NULL,
    sla_surcharge_pct         INTEGER NOT NULL,
    term_price_fen            INTEGER,
    auto_renew                BOOLEAN NOT NULL DEFAULT FALSE,
    access                    TEXT NOT NULL DEFAULT '',
    checks                    TEXT NOT NULL DEFAULT '',
    failure                   TEXT NOT NULL DEFAULT '',
    stop_reason               TEXT NOT NULL DEFAULT '',
    attempts                  INTEGER NOT NULL DEFAULT 0,
    running_since             DATETIME,
    billed_until              DATETIME,
    carry_num                 INTEGER NOT NULL DEFAULT 0,
    billed_fen                INTEGER NOT NULL DEFAULT 0,
    downtime_secs             INTEGER NOT NULL DEFAULT 0,
    down_since                DATETIME,
    free                      BOOLEAN NOT NULL DEFAULT FALSE,
    ends_at                   DATETIME,
    low_balance_mailed        BOOLEAN NOT NULL DEFAULT FALSE,
    stopped_at                DATETIME,
    created_at                DATETIME NOT NULL,
    updated_at                DATETIME NOT NULL,
    min_billed_s              INTEGER NOT NULL DEFAULT 60,
    earned_fen                INTEGER NOT NULL DEFAULT 0 CHECK (earned_fen >= 0),
    failure_msg               TEXT NOT NULL DEFAULT '',
    image                     TEXT NOT NULL DEFAULT '',
    volume_id                 INTEGER REFERENCES volumes(id),
    released_at               DATETIME,
    no_gpu                    BOOLEAN NOT NULL DEFAULT FALSE,
    no_gpu_price_per_hour_fen INTEGER NOT NULL DEFAULT 0 CHECK (no_gpu_price_per_hour_fen >= 0),
    ports                     TEXT NOT NULL DEFAULT '',
    idle_stop_below_pct       INTEGER NOT NULL DEFAULT 0 CHECK (idle_stop_below_pct BETWEEN 0 AND 100),
    idle_stop_minutes         INTEGER NOT NULL DEFAULT 0 CHECK (idle_stop_minutes = 0 OR idle_stop_minutes BETWEEN 5 AND 1440),
    idle_warned_at            DATETIME
);
INSERT INTO rentals_new (id, org_id, user_id, offer_id, provider_id, node_id, gpus, sla, term, status, ssh_public_key, workspace_id, price_per_gpu_hour_fen, offpeak_pct, student_pct, sla_surcharge_pct, term_price_fen, auto_renew, access, checks, failure, stop_reason, attempts, running_since, billed_until, carry_num, billed_fen, downtime_secs, down_since, free, ends_at, low_balance_mailed, stopped_at, created_at, updated_at, min_billed_s, earned_fen, failure_msg, image, volume_id, released_at, no_gpu, no_gpu_price_per_hour_fen, ports, idle_stop_below_pct, idle_stop_minutes, idle_warned_at)
    SELECT id, org_id, user_id, offer_id, provider_id, node_id, gpus, sla, term, status, ssh_public_key, workspace_id, price_per_gpu_hour_fen, offpeak_pct, student_pct, sla_surcharge_pct, term_price_fen, auto_renew, access, checks, failure, stop_reason, attempts, running_since, billed_until, carry_num, billed_fen, downtime_secs, down_since, free, ends_at, low_balance_mailed, stopped_at, created_at, updated_at, min_billed_s, earned_fen, failure_msg, image, volume_id, released_at, no_gpu, no_gpu_price_per_hour_fen, ports, idle_stop_below_pct, idle_stop_minutes, idle_warned_at FROM rentals;
DROP TABLE rentals;
ALTER TABLE rentals_new RENAME TO rentals;
CREATE INDEX rentals_status ON rentals (status);
CREATE INDEX rentals_org ON rentals (org_id, created_at);
CREATE INDEX rentals_node ON rentals (node_id, status);
CREATE INDEX rentals_provider ON rentals (provider_id, created_at);
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND earned_fen < billed_fen;
CREATE UNIQUE INDEX rentals_volume_attached ON rentals (volume_id)
    WHERE volume_id IS NOT NULL AND released_at IS NULL AND status <> 'failed';
ALTER TABLE offers DROP COLUMN interruptible_floor_per_gpu_hour_fen;

COMMIT;
PRAGMA foreign_keys = ON;
