-- +goose Up
-- The meter's batches (issue 20, meter at scale): a pass cuts the
-- organisations with running on-demand rentals into ranges
-- (ledger.MeterRanges, counted from this index alone) and each batch
-- reads its range's rentals through it (ledger.ReadMeterBatch), so that
-- an organisation's wallet is charged by one batch only.
CREATE INDEX rentals_metered ON rentals (org_id, id) WHERE status = 'running' AND term = 'on_demand';

-- +goose Down
DROP INDEX rentals_metered;
