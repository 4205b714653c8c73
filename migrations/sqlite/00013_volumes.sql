-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN;

-- A volume is an organisation's persistent storage in one datacentre,
-- mounted at /workspace. On local storage its files live on one node
-- (node_id); on shared storage every node of the datacentre mounts them.
-- It is billed per GB and second while it exists, at the storage price
-- agreed when it was created (price_per_gb_month_fen, a month being 30
-- days), from billed_until on; carry_num is the sub-fen remainder in
-- units of 1/2,592,000 fen. A volume made together with a rental is
-- 'pending' (and costs nothing) until that rental first runs; a rental
-- that never ran deletes it unbilled.
CREATE TABLE volumes (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id                 INTEGER NOT NULL REFERENCES orgs(id),
    user_id                INTEGER NOT NULL REFERENCES users(id),
    offer_id               INTEGER NOT NULL REFERENCES offers(id),
    provider_id            INTEGER NOT NULL REFERENCES providers(id),
    datacenter_id          INTEGER NOT NULL REFERENCES datacenters(id),
    node_id                INTEGER REFERENCES nodes(id),
    storage                TEXT NOT NULL CHECK (storage IN ('local', 'shared')),
    name                   TEXT NOT NULL DEFAULT '',
    -- The docker volume or directory name on the node(s).
    workspace_key          TEXT NOT NULL UNIQUE,
    size_gb                INTEGER NOT NULL CHECK (size_gb BETWEEN 1 AND 10000),
    price_per_gb_month_fen INTEGER NOT NULL CHECK (price_per_gb_month_fen >= 0),
    status                 TEXT NOT NULL CHECK (status IN ('pending', 'active', 'deleted')),
    billed_until           DATETIME,
    carry_num              INTEGER NOT NULL DEFAULT 0,
    billed_fen             INTEGER NOT NULL DEFAULT 0,
    -- Set while the volume's rental is stopped: deleted then unless it starts.
    delete_after           DATETIME,
    -- The smallest number of days before deletion already mailed (0: none).
    reminded_days          INTEGER NOT NULL DEFAULT 0,
    delete_reason          TEXT NOT NULL DEFAULT '',
    created_at             DATETIME NOT NULL,
    deleted_at             DATETIME
);
CREATE INDEX volumes_org ON volumes (org_id, status);
CREATE INDEX volumes_status ON volumes (status, id);

ALTER TABLE rentals ADD COLUMN image TEXT NOT NULL DEFAULT '';
ALTER TABLE rentals ADD COLUMN volume_id INTEGER REFERENCES volumes(id);
-- A released rental is stopped for good: it never starts again.
ALTER TABLE rentals ADD COLUMN released_at DATETIME;
-- A volume belongs to at most one rental that is not released or failed.
CREATE UNIQUE INDEX rentals_volume_attached ON rentals (volume_id)
    WHERE volume_id IS NOT NULL AND released_at IS NULL AND status <> 'failed';

-- agent_tasks is rebuilt for the new task kind (delete_volume) and a
-- progress column (an image pull's progress while a launch runs); SQLite
-- cannot change a CHECK in place, so as in 00009.
CREATE TABLE agent_tasks_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id    INTEGER NOT NULL REFERENCES nodes(id),
    rental_id  INTEGER REFERENCES rentals(id),
    kind       TEXT NOT NULL CHECK (kind IN ('verify', 'launch', 'stop', 'benchmark', 'delete_volume')),
    idem_key   TEXT NOT NULL UNIQUE,
    payload    TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'done')),
    ok         BOOLEAN,
    result     TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL,
    sent_at    DATETIME,
    done_at    DATETIME,
    progress   TEXT NOT NULL DEFAULT ''
);
INSERT INTO agent_tasks_new (id, node_id, rental_id, kind, idem_key, payload, status, ok, result, created_at, sent_at, done_at)
    SELECT id, node_id, rental_id, kind, idem_key, payload, status, ok, result, created_at, sent_at, done_at FROM agent_tasks;
DROP TABLE agent_tasks;
ALTER TABLE agent_tasks_new RENAME TO agent_tasks;
CREATE INDEX agent_tasks_node ON agent_tasks (node_id, status);

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
DROP INDEX rentals_volume_attached;
ALTER TABLE rentals DROP COLUMN released_at;
ALTER TABLE rentals DROP COLUMN volume_id;
ALTER TABLE rentals DROP COLUMN image;
DROP TABLE volumes;
