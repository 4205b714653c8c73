package fleet

import (
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/models"
	"suanli/models/launchstore"
	"suanli/models/supply"
)

// withLaunchSpec gives, in tx, a launch task its rental's environment and
// on-start script (a launcher's env and onstart), opened only now: the
// stored task (its payload row) never holds them, and every launch of
// the rental — the first, a start after a stop, a move to another node —
// gets them the same way. Ones that cannot be opened fail the task at
// once, saying why, and ok is false: the container would start without
// what its renter asked for.
func (f *Fleet) withLaunchSpec(tx *gorm.DB, row *models.AgentTask, t *agent.Task, now time.Time) (ok bool, err error) {
	if t.Kind != agent.TaskLaunch || t.RentalID == 0 {
		return true, nil
	}
	s, err := launchstore.Open(tx, f.Credentials, t.RentalID)
	if errors.Is(err, launchstore.ErrSealed) {
		slog.Error("launch environment cannot be opened; failing the launch", "rental", t.RentalID, "task", t.ID, "err", err)
		res, _ := json.Marshal(agent.Result{Error: err.Error()})
		return false, supply.FinishAgentTask(tx, row, false, string(res), now)
	}
	if err != nil {
		return false, err
	}
	t.Env, t.Onstart = s.Env, s.Onstart
	return true, nil
}
