-- +goose Up
-- Node agents: a one-time registration token and, once exchanged, the
-- node credential (both stored as SHA-256 hashes); what the agent last said.
ALTER TABLE nodes ADD COLUMN reg_token_hash TEXT;
ALTER TABLE nodes ADD COLUMN cred_hash TEXT;
ALTER TABLE nodes ADD COLUMN health TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE nodes ADD COLUMN last_heartbeat_at DATETIME;
ALTER TABLE nodes ADD COLUMN simulated BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE nodes ADD COLUMN agent_info TEXT NOT NULL DEFAULT '{}';
CREATE UNIQUE INDEX nodes_reg_token ON nodes (reg_token_hash);
CREATE UNIQUE INDEX nodes_cred ON nodes (cred_hash);
CREATE INDEX nodes_heartbeat ON nodes (last_heartbeat_at);

-- Each GPU's inventory and latest NVML verdict from its agent.
ALTER TABLE gpus ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE gpus ADD COLUMN pci_bus_id TEXT NOT NULL DEFAULT '';
ALTER TABLE gpus ADD COLUMN memory_mib INTEGER NOT NULL DEFAULT 0;
ALTER TABLE gpus ADD COLUMN health TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE gpus ADD COLUMN reasons TEXT NOT NULL DEFAULT '';
ALTER TABLE gpus ADD COLUMN telemetry TEXT NOT NULL DEFAULT '{}';
ALTER TABLE gpus ADD COLUMN checked_at DATETIME;

CREATE TABLE rentals (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id                 INTEGER NOT NULL REFERENCES orgs(id),
    user_id                INTEGER NOT NULL REFERENCES users(id),
    offer_id               INTEGER NOT NULL REFERENCES offers(id),
    provider_id            INTEGER NOT NULL REFERENCES providers(id),
    -- The node it runs on now (it changes when the rental migrates).
    node_id                INTEGER REFERENCES nodes(id),
    gpus                   INTEGER NOT NULL CHECK (gpus BETWEEN 1 AND 64),
    sla                    TEXT NOT NULL,
    term                   TEXT NOT NULL CHECK (term IN ('on_demand', 'week', 'month')),
    status                 TEXT NOT NULL CHECK (status IN ('pending', 'provisioning', 'running', 'migrating', 'stopping', 'stopped', 'failed')),
    ssh_public_key         TEXT NOT NULL,
    workspace_id           TEXT NOT NULL UNIQUE,
    -- The price agreed at the start; later offer changes do not touch it.
    price_per_gpu_hour_fen INTEGER NOT NULL,
    offpeak_pct            INTEGER NOT NULL,
    student_pct            INTEGER NOT NULL,
    sla_surcharge_pct      INTEGER NOT NULL,
    term_price_fen         INTEGER,
    auto_renew             BOOLEAN NOT NULL DEFAULT FALSE,
    access                 TEXT NOT NULL DEFAULT '',
    checks                 TEXT NOT NULL DEFAULT '',
    failure                TEXT NOT NULL DEFAULT '',
    stop_reason            TEXT NOT NULL DEFAULT '',
    attempts               INTEGER NOT NULL DEFAULT 0,
    -- Billing: from running_since, billed up to billed_until; carry_num is
    -- the sub-fen remainder in units of 1/3,600,000,000 fen.
    running_since          DATETIME,
    billed_until           DATETIME,
    carry_num              INTEGER NOT NULL DEFAULT 0,
    billed_fen             INTEGER NOT NULL DEFAULT 0,
    downtime_secs          INTEGER NOT NULL DEFAULT 0,
    down_since             DATETIME,
    free                   BOOLEAN NOT NULL DEFAULT FALSE,
    ends_at                DATETIME,
    low_balance_mailed     BOOLEAN NOT NULL DEFAULT FALSE,
    stopped_at             DATETIME,
    created_at             DATETIME NOT NULL,
    updated_at             DATETIME NOT NULL
);
CREATE INDEX rentals_status ON rentals (status);
CREATE INDEX rentals_org ON rentals (org_id, created_at);
CREATE INDEX rentals_node ON rentals (node_id, status);

-- Which GPUs a rental holds. The partial unique index is the rule that a
-- GPU is in at most one live rental, kept by the database itself.
CREATE TABLE rental_gpus (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    rental_id   INTEGER NOT NULL REFERENCES rentals(id),
    gpu_id      INTEGER NOT NULL REFERENCES gpus(id),
    node_id     INTEGER NOT NULL REFERENCES nodes(id),
    attached_at DATETIME NOT NULL,
    released_at DATETIME
);
CREATE UNIQUE INDEX rental_gpus_live ON rental_gpus (gpu_id) WHERE released_at IS NULL;
CREATE INDEX rental_gpus_rental ON rental_gpus (rental_id);

-- Work for node agents, picked up by their long-poll.
CREATE TABLE agent_tasks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id    INTEGER NOT NULL REFERENCES nodes(id),
    rental_id  INTEGER REFERENCES rentals(id),
    kind       TEXT NOT NULL CHECK (kind IN ('verify', 'launch', 'stop', 'benchmark')),
    idem_key   TEXT NOT NULL UNIQUE,
    payload    TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'done')),
    ok         BOOLEAN,
    result     TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL,
    sent_at    DATETIME,
    done_at    DATETIME
);
CREATE INDEX agent_tasks_node ON agent_tasks (node_id, status);

-- A node gone silent or a GPU failing its checks; gpu_id 0 for the node.
CREATE TABLE incidents (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id   INTEGER NOT NULL REFERENCES nodes(id),
    gpu_id    INTEGER NOT NULL DEFAULT 0,
    kind      TEXT NOT NULL CHECK (kind IN ('node_silent', 'gpu_failing')),
    reasons   TEXT NOT NULL DEFAULT '',
    opened_at DATETIME NOT NULL,
    closed_at DATETIME
);
CREATE UNIQUE INDEX incidents_open ON incidents (node_id, gpu_id, kind) WHERE closed_at IS NULL;

-- A rental's timeline: checks, start, incidents, migrations, stop.
CREATE TABLE rental_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    rental_id   INTEGER NOT NULL REFERENCES rentals(id),
    at          DATETIME NOT NULL,
    kind        TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '',
    incident_id INTEGER
);
CREATE INDEX rental_events_rental ON rental_events (rental_id, id);

-- Charges and refunds name the rental they are for.
ALTER TABLE ledger_txns ADD COLUMN rental_id INTEGER;
CREATE INDEX ledger_txns_rental ON ledger_txns (rental_id);

-- +goose Down
DROP INDEX ledger_txns_rental;
ALTER TABLE ledger_txns DROP COLUMN rental_id;
DROP TABLE rental_events;
DROP TABLE incidents;
DROP TABLE agent_tasks;
DROP TABLE rental_gpus;
DROP TABLE rentals;
DROP INDEX nodes_heartbeat;
DROP INDEX nodes_cred;
DROP INDEX nodes_reg_token;
ALTER TABLE gpus DROP COLUMN checked_at;
ALTER TABLE gpus DROP COLUMN telemetry;
ALTER TABLE gpus DROP COLUMN reasons;
ALTER TABLE gpus DROP COLUMN health;
ALTER TABLE gpus DROP COLUMN memory_mib;
ALTER TABLE gpus DROP COLUMN pci_bus_id;
ALTER TABLE gpus DROP COLUMN name;
ALTER TABLE nodes DROP COLUMN agent_info;
ALTER TABLE nodes DROP COLUMN simulated;
ALTER TABLE nodes DROP COLUMN last_heartbeat_at;
ALTER TABLE nodes DROP COLUMN health;
ALTER TABLE nodes DROP COLUMN cred_hash;
ALTER TABLE nodes DROP COLUMN reg_token_hash;
