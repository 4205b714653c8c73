package rentals

import (
	"context"
	"encoding/json"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/benchmarks"
	"suanli/fleet"
	"suanli/models"
	"suanli/models/supply"
)

// TaskResult records an agent's result for one of its node's tasks. A
// repeated result for a task already done changes nothing. A stop that
// finished releases the rental's GPUs. A result the server refuses (an
// incomplete verify, fleet.RefuseIncompleteVerify; a benchmark outside the
// bounds, benchmarks.Store) is recorded as failed and, once committed,
// answered with a 422 naming why.
func (s *Service) TaskResult(ctx context.Context, nodeID, taskID int64, res agent.Result) error {
	now := s.DB.Now().UTC()
	var refused string
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		refused = ""
		t, err := supply.NodeTask(tx, nodeID, taskID)
		if err != nil {
			return err
		}
		if t.Status == models.TaskDone {
			return nil
		}
		refused = fleet.RefuseIncompleteVerify(t, &res)
		body, _ := json.Marshal(res)
		ok := res.OK
		if err := supply.FinishAgentTask(tx, t, ok, string(body), now); err != nil {
			return err
		}
		if t.Kind == agent.TaskStop && t.RentalID != nil {
			return s.finishStop(tx, *t.RentalID, nodeID, now)
		}
		if t.Kind == agent.TaskBenchmark {
			refused, err = benchmarks.Store(tx, t, res, now)
			return err
		}
		return nil
	})
	if err == nil {
		s.Hub.Signal(fleet.TaskKey(taskID))
		if refused != "" {
			return benchmarks.Refusal(refused)
		}
	}
	return err
}

// TaskProgress records what a node's agent says of a task still running
// (an image pull's percentage). A task that is done, or not the node's,
// is ENOTFOUND.
func (s *Service) TaskProgress(ctx context.Context, nodeID, taskID int64, p agent.Progress) error {
	if p.Stage == "" || len(p.Stage) > 32 || p.Pct < 0 || p.Pct > 100 || len(p.Detail) > 200 {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: `want {"stage":"pull","pct":0..100,"detail":"…"}`}
	}
	body, _ := json.Marshal(p)
	ok, err := supply.SetTaskProgress(ctx, s.DB, nodeID, taskID, string(body))
	if err == nil && !ok {
		return apperr.NotFound("task")
	}
	return err
}

// LaunchProgress is the progress of the rental's running launch (nil
// when none was posted).
func (s *Service) LaunchProgress(ctx context.Context, rentalID int64) (*agent.Progress, error) {
	raw, err := supply.LaunchProgress(ctx, s.DB, rentalID)
	if err != nil || raw == "" {
		return nil, err
	}
	var p agent.Progress
	if json.Unmarshal([]byte(raw), &p) != nil {
		return nil, nil
	}
	return &p, nil
}
