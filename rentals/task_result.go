package rentals

import (
	"context"
	"encoding/json"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/benchmarks"
	"suanli/fleet"
	"suanli/models"
	"suanli/models/supply"
)

// TaskResult records an agent's result for one of its node's tasks. A
// repeated result for a task already done changes nothing. A stop that
// finished releases the rental's GPUs.
func (s *Service) TaskResult(ctx context.Context, nodeID, taskID int64, res agent.Result) error {
	body, _ := json.Marshal(res)
	now := s.DB.Now().UTC()
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		t, err := supply.NodeTask(tx, nodeID, taskID)
		if err != nil {
			return err
		}
		if t.Status == models.TaskDone {
			return nil
		}
		ok := res.OK
		if err := supply.FinishAgentTask(tx, t, ok, string(body), now); err != nil {
			return err
		}
		if t.Kind == agent.TaskStop && t.RentalID != nil {
			return s.finishStop(tx, *t.RentalID, nodeID, now)
		}
		if t.Kind == agent.TaskBenchmark {
			return benchmarks.Store(tx, t, res, now)
		}
		return nil
	})
	if err == nil {
		s.Hub.Signal(fleet.TaskKey(taskID))
	}
	return err
}
