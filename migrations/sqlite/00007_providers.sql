-- +goose NO TRANSACTION
-- +goose Up
-- Providers become organisations that sign up and are verified. The nodes
-- table is rebuilt because a provider adds a node before its agent has
-- said which GPUs it holds: gpu_model becomes nullable (detected from NVML
-- at the first heartbeat). SQLite cannot drop NOT NULL in place, and a
-- rebuild needs foreign keys off, which only works outside a transaction;
-- the writer pool is one connection, so the pragmas hold for every
-- statement below.
PRAGMA foreign_keys = OFF;
BEGIN;

CREATE TABLE nodes_new (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    provider_id       INTEGER NOT NULL REFERENCES providers(id),
    datacenter_id     INTEGER NOT NULL REFERENCES datacenters(id),
    name              TEXT NOT NULL,
    -- NULL until the agent's first inventory names a catalogue model.
    gpu_model         TEXT REFERENCES gpu_models(slug),
    -- active, draining (current rentals finish, no new ones) or removed.
    status            TEXT NOT NULL DEFAULT 'active',
    demo              BOOLEAN NOT NULL DEFAULT FALSE,
    synthetic         BOOLEAN NOT NULL DEFAULT FALSE,
    created_at        DATETIME NOT NULL,
    reg_token_hash    TEXT,
    cred_hash         TEXT,
    health            TEXT NOT NULL DEFAULT 'unknown',
    last_heartbeat_at DATETIME,
    simulated         BOOLEAN NOT NULL DEFAULT FALSE,
    agent_info        TEXT NOT NULL DEFAULT '{}',
    latest_report_id  INTEGER,
    uptime_30d_pct    REAL,
    uptime_updated_at DATETIME,
    ping_url          TEXT NOT NULL DEFAULT '',
    removed_at        DATETIME,
    UNIQUE (provider_id, name)
);
INSERT INTO nodes_new (id, provider_id, datacenter_id, name, gpu_model, status, demo, synthetic, created_at,
    reg_token_hash, cred_hash, health, last_heartbeat_at, simulated, agent_info, latest_report_id,
    uptime_30d_pct, uptime_updated_at, ping_url)
SELECT id, provider_id, datacenter_id, name, gpu_model, status, demo, synthetic, created_at,
    reg_token_hash, cred_hash, health, last_heartbeat_at, simulated, agent_info, latest_report_id,
    uptime_30d_pct, uptime_updated_at, ping_url FROM nodes;
DROP TABLE nodes;
ALTER TABLE nodes_new RENAME TO nodes;
CREATE UNIQUE INDEX nodes_reg_token ON nodes (reg_token_hash);
CREATE UNIQUE INDEX nodes_cred ON nodes (cred_hash);
CREATE INDEX nodes_heartbeat ON nodes (last_heartbeat_at);

-- A provider's profile; its verification status is its organisation's.
-- Demo and synthetic providers have no organisation.
ALTER TABLE providers ADD COLUMN org_id INTEGER REFERENCES orgs(id);
ALTER TABLE providers ADD COLUMN contact_name TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN contact_phone TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN contact_email TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN licence_no TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN bank_name TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN bank_account_name TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN bank_account_no TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN stripe_account_id TEXT NOT NULL DEFAULT '';
ALTER TABLE providers ADD COLUMN stripe_charges_enabled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE providers ADD COLUMN stripe_payouts_enabled BOOLEAN NOT NULL DEFAULT FALSE;
CREATE UNIQUE INDEX providers_org ON providers (org_id);

-- Datacentres a provider created (NULL: the shared demo ones).
ALTER TABLE datacenters ADD COLUMN provider_id INTEGER REFERENCES providers(id);
CREATE INDEX datacenters_provider ON datacenters (provider_id);

ALTER TABLE offers ADD COLUMN min_duration_s INTEGER NOT NULL DEFAULT 60 CHECK (min_duration_s >= 60);
-- Comma-separated SLA tiers the offer sells (pricing.SLATiers slugs).
ALTER TABLE offers ADD COLUMN sla_tiers TEXT NOT NULL DEFAULT 'standard,premium';
-- A listed offer is shown only once its node's NVML inventory has healthy
-- GPUs of its model; until then awaiting_node is true and listing_note
-- says what is missing.
ALTER TABLE offers ADD COLUMN awaiting_node BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE offers ADD COLUMN listing_note TEXT NOT NULL DEFAULT '';
CREATE INDEX offers_provider ON offers (provider_id);

-- The minimum billed duration agreed at rent.
ALTER TABLE rentals ADD COLUMN min_billed_s INTEGER NOT NULL DEFAULT 60;
CREATE INDEX rentals_provider ON rentals (provider_id, created_at);

ALTER TABLE users ADD COLUMN suspended_at DATETIME;
ALTER TABLE orgs ADD COLUMN suspended_at DATETIME;

-- Payouts: one per provider and month ('YYYY-MM', Asia/Shanghai). The
-- unique key is what makes a second run of the monthly job a no-op.
CREATE TABLE payouts (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    provider_id        INTEGER NOT NULL REFERENCES providers(id),
    period             TEXT NOT NULL,
    amount_fen         INTEGER NOT NULL CHECK (amount_fen > 0),
    method             TEXT NOT NULL CHECK (method IN ('stripe', 'bank_transfer')),
    status             TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
    stripe_transfer_id TEXT NOT NULL DEFAULT '',
    bank_reference     TEXT NOT NULL DEFAULT '',
    failure            TEXT NOT NULL DEFAULT '',
    txn_id             INTEGER,
    paid_by            INTEGER REFERENCES users(id),
    created_at         DATETIME NOT NULL,
    paid_at            DATETIME,
    UNIQUE (provider_id, period)
);
CREATE INDEX payouts_status ON payouts (status);

-- The audit log: append-only (the triggers refuse changes).
CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         DATETIME NOT NULL,
    -- NULL for the system (a worker).
    actor_id   INTEGER,
    actor_ip   TEXT NOT NULL DEFAULT '',
    action     TEXT NOT NULL,
    -- What it was done to, e.g. 'org:12', 'payout:3', 'topup:9'.
    subject    TEXT NOT NULL DEFAULT '',
    amount_fen INTEGER,
    detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_subject ON audit_log (subject);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
DROP TABLE audit_log;
DROP TABLE payouts;
DROP INDEX rentals_provider;
ALTER TABLE rentals DROP COLUMN min_billed_s;
ALTER TABLE orgs DROP COLUMN suspended_at;
ALTER TABLE users DROP COLUMN suspended_at;
DROP INDEX offers_provider;
ALTER TABLE offers DROP COLUMN listing_note;
ALTER TABLE offers DROP COLUMN awaiting_node;
ALTER TABLE offers DROP COLUMN sla_tiers;
ALTER TABLE offers DROP COLUMN min_duration_s;
DROP INDEX datacenters_provider;
ALTER TABLE datacenters DROP COLUMN provider_id;
DROP INDEX providers_org;
ALTER TABLE providers DROP COLUMN stripe_payouts_enabled;
ALTER TABLE providers DROP COLUMN stripe_charges_enabled;
ALTER TABLE providers DROP COLUMN stripe_account_id;
ALTER TABLE providers DROP COLUMN bank_account_no;
ALTER TABLE providers DROP COLUMN bank_account_name;
ALTER TABLE providers DROP COLUMN bank_name;
ALTER TABLE providers DROP COLUMN licence_no;
ALTER TABLE providers DROP COLUMN contact_email;
ALTER TABLE providers DROP COLUMN contact_phone;
ALTER TABLE providers DROP COLUMN contact_name;
ALTER TABLE providers DROP COLUMN org_id;
ALTER TABLE nodes DROP COLUMN removed_at;
