-- +goose Up
-- A new agent task kind: clear_xids (an operator's `suanli admin
-- clear-xids`: the node's agent forgets the critical XIDs it keeps for a
-- GPU).
ALTER TABLE agent_tasks DROP CONSTRAINT agent_tasks_kind_check;
ALTER TABLE agent_tasks ADD CONSTRAINT agent_tasks_kind_check CHECK (kind IN ('verify', 'launch', 'stop', 'benchmark', 'delete_volume', 'clear_xids'));

-- +goose Down
DELETE FROM agent_tasks WHERE kind = 'clear_xids';
ALTER TABLE agent_tasks DROP CONSTRAINT agent_tasks_kind_check;
ALTER TABLE agent_tasks ADD CONSTRAINT agent_tasks_kind_check CHECK (kind IN ('verify', 'launch', 'stop', 'benchmark', 'delete_volume'));
