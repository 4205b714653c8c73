-- +goose Up
-- Simulation is a platform decision (issue 17): a provider is simulated
-- only when the platform made it so (the demo's seeding, or
-- `suanli admin create-user … --simulated`), and its nodes are simulated
-- whatever their agents say; a node of any other provider is never
-- accepted as simulated. The demo's and the synthetic providers are the
-- simulated ones already there.
ALTER TABLE providers ADD COLUMN simulated BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE providers SET simulated = TRUE WHERE demo OR synthetic;
UPDATE nodes SET simulated = (SELECT p.simulated FROM providers p WHERE p.id = nodes.provider_id);

-- A benchmark report outside the bounds (above the catalogue's nominal,
-- a power above the board limit, a temperature below ambient, TFLOPS the
-- reported SM clock cannot give, figures that are not numbers) is kept
-- as refused with the reason, and its figures are never shown or ranked
-- as measured ('' for an accepted report).
ALTER TABLE benchmark_reports ADD COLUMN refused_reason TEXT NOT NULL DEFAULT '';

-- A refused report flags its node for review: an open incident of the
-- kind benchmark_refused (the admin console lists open incidents). It
-- counts as no downtime. SQLite cannot change a CHECK, so the table is
-- rebuilt.
CREATE TABLE incidents_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id     INTEGER NOT NULL REFERENCES nodes(id),
    gpu_id      INTEGER NOT NULL DEFAULT 0,
    kind        TEXT NOT NULL CHECK (kind IN ('node_silent', 'gpu_failing', 'benchmark_refused')),
    reasons     TEXT NOT NULL DEFAULT '',
    opened_at   DATETIME NOT NULL,
    closed_at   DATETIME,
    reasons_msg TEXT NOT NULL DEFAULT ''
);
INSERT INTO incidents_new (id, node_id, gpu_id, kind, reasons, opened_at, closed_at, reasons_msg)
    SELECT id, node_id, gpu_id, kind, reasons, opened_at, closed_at, reasons_msg FROM incidents;
DROP TABLE incidents;
ALTER TABLE incidents_new RENAME TO incidents;
CREATE UNIQUE INDEX incidents_open ON incidents (node_id, gpu_id, kind) WHERE closed_at IS NULL;

-- +goose Down
DELETE FROM incidents WHERE kind = 'benchmark_refused';
CREATE TABLE incidents_old (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id     INTEGER NOT NULL REFERENCES nodes(id),
    gpu_id      INTEGER NOT NULL DEFAULT 0,
    kind        TEXT NOT NULL CHECK (kind IN ('node_silent', 'gpu_failing')),
    reasons     TEXT NOT NULL DEFAULT '',
    opened_at   DATETIME NOT NULL,
    closed_at   DATETIME,
    reasons_msg TEXT NOT NULL DEFAULT ''
);
INSERT INTO incidents_old SELECT id, node_id, gpu_id, kind, reasons, opened_at, closed_at, reasons_msg FROM incidents;
DROP TABLE incidents;
ALTER TABLE incidents_old RENAME TO incidents;
CREATE UNIQUE INDEX incidents_open ON incidents (node_id, gpu_id, kind) WHERE closed_at IS NULL;
ALTER TABLE benchmark_reports DROP COLUMN refused_reason;
ALTER TABLE providers DROP COLUMN simulated;
