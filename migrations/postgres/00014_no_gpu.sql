-- +goose Up
-- No-GPU mode (无卡模式): a stopped rental may start again without GPUs,
-- for setup and data work on its volume, at the offer's small hourly
-- price (agreed at that start, like the GPU price at rent). While no_gpu
-- is set the rental holds no GPUs and is billed no_gpu_price_per_hour_fen
-- an hour instead of its GPU price; a start with GPUs clears it.
ALTER TABLE rentals ADD COLUMN no_gpu BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE rentals ADD COLUMN no_gpu_price_per_hour_fen BIGINT NOT NULL DEFAULT 0 CHECK (no_gpu_price_per_hour_fen >= 0);
-- The rental a local volume was left behind by, when that rental moved
-- to another node without its files (migration or switch): its page
-- offers to start on the volume's node again once that node is back.
ALTER TABLE volumes ADD COLUMN left_by_rental_id BIGINT REFERENCES rentals (id);

-- +goose Down
ALTER TABLE volumes DROP COLUMN left_by_rental_id;
ALTER TABLE rentals DROP COLUMN no_gpu_price_per_hour_fen;
ALTER TABLE rentals DROP COLUMN no_gpu;
