-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN;

-- agent_tasks is rebuilt for the new task kind clear_xids (an operator's
-- `suanli admin clear-xids`: the node's agent forgets the critical XIDs it
-- keeps for a GPU); SQLite cannot change a CHECK in place, so as in 00013.
CREATE TABLE agent_tasks_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id    INTEGER NOT NULL REFERENCES nodes(id),
    rental_id  INTEGER REFERENCES rentals(id),
    kind       TEXT NOT NULL CHECK (kind IN ('verify', 'launch', 'stop', 'benchmark', 'delete_volume', 'clear_xids')),
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
INSERT INTO agent_tasks_new (id, node_id, rental_id, kind, idem_key, payload, status, ok, result, created_at, sent_at, done_at, progress)
    SELECT id, node_id, rental_id, kind, idem_key, payload, status, ok, result, created_at, sent_at, done_at, progress FROM agent_tasks;
DROP TABLE agent_tasks;
ALTER TABLE agent_tasks_new RENAME TO agent_tasks;
CREATE INDEX agent_tasks_node ON agent_tasks (node_id, status);

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
PRAGMA foreign_keys = OFF;
BEGIN;
DELETE FROM agent_tasks WHERE kind = 'clear_xids';
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
INSERT INTO agent_tasks_new SELECT * FROM agent_tasks;
DROP TABLE agent_tasks;
ALTER TABLE agent_tasks_new RENAME TO agent_tasks;
CREATE INDEX agent_tasks_node ON agent_tasks (node_id, status);
COMMIT;
PRAGMA foreign_keys = ON;
