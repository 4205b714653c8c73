package rentals

import (
	"context"
	"encoding/json"
	"errors"
	"suanli/agent"
	"suanli/apperr"
	"suanli/benchmarks"
	"suanli/fleet"
	"suanli/models"

	"gorm.io/gorm"
)

// TaskResult records an agent's result for one of its node's tasks. A
// repeated result for a task already done changes nothing. A stop that
// finished releases the rental's GPUs.
func (s *Service) TaskResult(ctx context.Context, nodeID, taskID int64, res agent.Result) error {
	body, _ := json.Marshal(res)
	now := s.DB.Now().UTC()
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var t models.AgentTask
		if err := tx.Where("id = ? AND node_id = ?", taskID, nodeID).First(&t).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return apperr.NotFound("task")
			}
			return err
		}
		if t.Status == models.TaskDone {
			return nil
		}
		ok := res.OK
		if err := tx.Model(&t).Updates(map[string]any{"status": models.TaskDone, "ok": ok, "result": string(body), "done_at": now}).Error; err != nil {
			return err
		}
		if t.Kind == agent.TaskStop && t.RentalID != nil {
			return s.finishStop(tx, *t.RentalID, nodeID, now)
		}
		if t.Kind == agent.TaskBenchmark {
			return benchmarks.Store(tx, &t, res, now)
		}
		return nil
	})
	if err == nil {
		s.Hub.Signal(fleet.TaskKey(taskID))
	}
	return err
}
