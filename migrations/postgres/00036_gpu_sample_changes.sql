-- +goose Up
-- The change feed (migration 00031) learns of GPU telemetry (issue 20):
-- the rental page's usage section waits on its GPUs instead of polling
-- every 15 s. A new sample of a GPU (table gpu_samples: the heartbeat
-- writes one per rented GPU about every 30 s, package fleet) names it:
--
--   gpu:<id>  a new telemetry sample of the GPU
--
-- Not by a trigger, as on SQLite: a transaction that NOTIFYs holds the
-- server-wide notification lock from before its commit until after it,
-- WAL flush included, so sampling heartbeats would commit one at a time
-- (a few hundred a second where the fleet needs more). The heartbeat
-- calls this function after its commit instead, as a transaction of its
-- own (supply.NotifyGPUsSampled) whose commit does not wait for its WAL
-- flush: a crash can lose its notifications, which costs a usage
-- section one sample's figures, never data.
-- +goose StatementBegin
CREATE FUNCTION suanli_notify_gpus(ids BIGINT[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    id BIGINT;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOREACH id IN ARRAY ids LOOP
        PERFORM pg_notify('suanli_changes', 'gpu:' || id);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION suanli_notify_gpus(BIGINT[]);
