-- +goose Up
-- The change feed (migration 00031) learns of GPU telemetry (issue 20):
-- the rental page's usage section waits on its GPUs instead of polling
-- every 15 s. A new sample of a GPU (table gpu_samples: the heartbeat
-- writes one per rented GPU about every 30 s, package fleet) names it:
--
--   gpu:<id>  a new telemetry sample of the GPU
--
-- The purge job's deletions of old samples name nothing: the section
-- shows the last 24 hours, and what it drops is re-read with the next
-- sample. On SQLite the trigger appends to change_log in the heartbeat's
-- transaction, as migration 00031's do (about two rows a minute per
-- rented GPU, pruned with the rest after ten minutes).
-- +goose StatementBegin
CREATE TRIGGER gpu_samples_inserted AFTER INSERT ON gpu_samples
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'gpu', NEW.gpu_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.gpu_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER gpu_samples_inserted;
