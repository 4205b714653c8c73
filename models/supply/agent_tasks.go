package supply

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// AgentTaskByKey returns the agent task with the idempotency key; none is
// ENOTFOUND. It reads on the write handle: provisioning looks for the
// task it may have just created.
func AgentTaskByKey(ctx context.Context, db *models.DB, key string) (*models.AgentTask, error) {
	return agentTaskWhere(db.W.WithContext(ctx), "idem_key = ?", key)
}

// AgentTaskByID returns an agent task; a missing one is ENOTFOUND. It
// reads on the write handle, as AgentTaskByKey does.
func AgentTaskByID(ctx context.Context, db *models.DB, id int64) (*models.AgentTask, error) {
	return agentTaskWhere(db.W.WithContext(ctx), "id = ?", id)
}

// NodeTask reads in tx a task of the node's; a task that is not the
// node's is ENOTFOUND, as a missing one is.
func NodeTask(tx *gorm.DB, nodeID, taskID int64) (*models.AgentTask, error) {
	return agentTaskWhere(tx, "id = ? AND node_id = ?", taskID, nodeID)
}

func agentTaskWhere(tx *gorm.DB, cond string, args ...any) (*models.AgentTask, error) {
	var t models.AgentTask
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
func FinishAgentTask(tx *gorm.DB, t *models.AgentTask, ok bool, result string, now time.Time) error {
	if err := tx.Model(&models.AgentTask{}).Where("id = ?", t.ID).
		Updates(map[string]any{"status": models.TaskDone, "ok": ok, "result": result, "done_at": now}).Error; err != nil {
		return err
	}
	t.Status, t.OK, t.Result, t.DoneAt = models.TaskDone, &ok, result, &now
	return nil
}

// SetTaskProgress records, in one statement, the progress an agent posted
// for one of its own tasks that is not done; it reports whether there was
// such a task.
func SetTaskProgress(ctx context.Context, db *models.DB, nodeID, taskID int64, progress string) (bool, error) {
	res := db.W.WithContext(ctx).Model(&models.AgentTask{}).Where("id = ? AND node_id = ? AND status <> ?", taskID, nodeID, models.TaskDone).
		Update("progress", progress)
	return res.RowsAffected == 1, res.Error
}

// LaunchProgress returns the progress of a rental's newest launch task
// that is not done ("" if none).
func LaunchProgress(ctx context.Context, db *models.DB, rentalID int64) (string, error) {
	var ps []string
	err := db.R.WithContext(ctx).Model(&models.AgentTask{}).Where("rental_id = ? AND kind = ? AND status <> ?", rentalID, "launch", models.TaskDone).
		Order("id DESC").Limit(1).Pluck("progress", &ps).Error
	if err != nil || len(ps) == 0 {
		return "", err
	}
	return ps[0], nil
}
