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
-- counts as no downtime.
ALTER TABLE incidents DROP CONSTRAINT incidents_kind_check;
ALTER TABLE incidents ADD CONSTRAINT incidents_kind_check CHECK (kind IN ('node_silent', 'gpu_failing', 'benchmark_refused'));

-- +goose Down
DELETE FROM incidents WHERE kind = 'benchmark_refused';
ALTER TABLE incidents DROP CONSTRAINT incidents_kind_check;
ALTER TABLE incidents ADD CONSTRAINT incidents_kind_check CHECK (kind IN ('node_silent', 'gpu_failing'));
ALTER TABLE benchmark_reports DROP COLUMN refused_reason;
ALTER TABLE providers DROP COLUMN simulated;
