package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/models"
)

// RefreshAvailabilityArgs asks for every offer's available-GPU count to be
// recomputed from its node's GPU states.
type RefreshAvailabilityArgs struct{}

// Kind implements river.JobArgs.
func (RefreshAvailabilityArgs) Kind() string { return "refresh_offer_availability" }

// InsertOpts makes the job unique while one is waiting, so a backlog never
// piles up behind a slow database; the next period brings the next one.
func (RefreshAvailabilityArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByPeriod: 30 * time.Second}}
}

// RefreshAvailabilityWorker runs RefreshAvailabilityArgs jobs.
type RefreshAvailabilityWorker struct {
	river.WorkerDefaults[RefreshAvailabilityArgs]
	DB *models.DB
}

// Work implements river.Worker.
func (w *RefreshAvailabilityWorker) Work(ctx context.Context, job *river.Job[RefreshAvailabilityArgs]) error {
	changed, err := w.DB.RefreshAvailability(ctx)
	if err != nil {
		return err
	}
	if changed > 0 {
		slog.Info("offer availability refreshed", "changed", changed, "job", job.ID)
	}
	return nil
}
