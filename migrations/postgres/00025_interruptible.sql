-- +goose Up
-- Interruptible rentals (issue 18). An offer opts in with a floor price
-- per GPU-hour (NULL: not interruptible); a rental with a bid is
-- interruptible and runs at its bid. An interrupted rental holds no GPUs,
-- keeps its volume and resumes by itself when GPUs at its bid are free
-- (unless its renter stopped it).
ALTER TABLE offers ADD COLUMN interruptible_floor_per_gpu_hour_fen BIGINT CHECK (interruptible_floor_per_gpu_hour_fen > 0);
ALTER TABLE rentals ADD COLUMN bid_per_gpu_hour_fen BIGINT CHECK (bid_per_gpu_hour_fen > 0);
ALTER TABLE rentals ADD COLUMN interrupted_at TIMESTAMPTZ;
ALTER TABLE rentals ADD COLUMN interrupt_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE rentals ADD COLUMN interrupt_msg TEXT NOT NULL DEFAULT '';
ALTER TABLE rentals ADD COLUMN grace_until TIMESTAMPTZ;
ALTER TABLE rentals DROP CONSTRAINT rentals_status_check;
ALTER TABLE rentals ADD CONSTRAINT rentals_status_check CHECK (status IN ('pending', 'provisioning', 'running', 'migrating', 'stopping', 'stopped', 'failed', 'interrupted'));
-- The resume pass reads the interrupted rentals by offer, highest bid first.
CREATE INDEX rentals_interrupted ON rentals (offer_id, bid_per_gpu_hour_fen DESC, id) WHERE status = 'interrupted';
-- Victims are chosen among a node's live bids.
CREATE INDEX rentals_node_bids ON rentals (node_id, bid_per_gpu_hour_fen, id) WHERE bid_per_gpu_hour_fen IS NOT NULL;

-- +goose Down
DROP INDEX rentals_node_bids;
DROP INDEX rentals_interrupted;
UPDATE rentals SET status = 'stopped' WHERE status = 'interrupted';
ALTER TABLE rentals DROP CONSTRAINT rentals_status_check;
ALTER TABLE rentals ADD CONSTRAINT rentals_status_check CHECK (status IN ('pending', 'provisioning', 'running', 'migrating', 'stopping', 'stopped', 'failed'));
ALTER TABLE rentals DROP COLUMN grace_until;
ALTER TABLE rentals DROP COLUMN interrupt_msg;
ALTER TABLE rentals DROP COLUMN interrupt_reason;
ALTER TABLE rentals DROP COLUMN interrupted_at;
ALTER TABLE rentals DROP COLUMN bid_per_gpu_hour_fen;
ALTER TABLE offers DROP COLUMN interruptible_floor_per_gpu_hour_fen;
