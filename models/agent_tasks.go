package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
)

// AgentTaskByKey returns the agent task with the idempotency key; none is
// ENOTFOUND. It reads on the write handle: provisioning looks for the
// task it may have just created.
func (db *DB) AgentTaskByKey(ctx context.Context, key string) (*AgentTask, error) {
	return agentTaskWhere(db.W.WithContext(ctx), "idem_key = ?", key)
}

// AgentTaskByID returns an agent task; a missing one is ENOTFOUND. It
// reads on the write handle, as AgentTaskByKey does.
func (db *DB) AgentTaskByID(ctx context.Context, id int64) (*AgentTask, error) {
	return agentTaskWhere(db.W.WithContext(ctx), "id = ?", id)
}

// NodeTask reads in tx a task of the node's; a task that is not the
// node's is ENOTFOUND, as a missing one is.
func NodeTask(tx *gorm.DB, nodeID, taskID int64) (*AgentTask, error) {
	return agentTaskWhere(tx, "id = ? AND node_id = ?", taskID, nodeID)
}

func agentTaskWhere(tx *gorm.DB, cond string, args ...any) (*AgentTask, error) {
	var t AgentTask
	err := tx.Where(cond, args...).First(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("task")
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// FinishAgentTask records an agent's result for the task in tx, and on t:
// done at now, whether it succeeded, and the result (JSON agent.Result).
func FinishAgentTask(tx *gorm.DB, t *AgentTask, ok bool, result string, now time.Time) error {
	if err := tx.Model(&AgentTask{}).Where("id = ?", t.ID).
		Updates(map[string]any{"status": TaskDone, "ok": ok, "result": result, "done_at": now}).Error; err != nil {
		return err
	}
	t.Status, t.OK, t.Result, t.DoneAt = TaskDone, &ok, result, &now
	return nil
}
