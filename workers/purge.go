package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/fleet"
	"suanli/models"
	"suanli/models/platform"
	"suanli/models/supply"
)

// PurgeArgs asks for expired sessions, old login failures and old GPU
// telemetry samples to be deleted.
type PurgeArgs struct{}

// Kind implements river.JobArgs.
func (PurgeArgs) Kind() string { return "purge_expired" }

// PurgeWorker runs PurgeArgs jobs.
type PurgeWorker struct {
	river.WorkerDefaults[PurgeArgs]
	DB *models.DB
}

// Work implements river.Worker.
func (w *PurgeWorker) Work(ctx context.Context, job *river.Job[PurgeArgs]) error {
	n, err := platform.PurgeExpiredSessions(ctx, w.DB)
	if err != nil {
		return err
	}
	// Failures older than the throttle window no longer count for anything.
	if err := w.DB.PurgeLoginFailures(ctx, w.DB.Now().UTC().Add(-24*time.Hour)); err != nil {
		return err
	}
	// So do counted sign-ups and mails (the longest window is a day).
	if err := platform.PurgeThrottleEvents(ctx, w.DB, w.DB.Now().UTC().Add(-48*time.Hour)); err != nil {
		return err
	}
	// Tickets and sessions of renters' apps origins end with their time.
	if _, err := platform.PurgeAppGrants(ctx, w.DB, w.DB.Now().UTC()); err != nil {
		return err
	}
	// Rented GPUs' telemetry history is kept for a day.
	if _, err := supply.PruneGPUSamples(ctx, w.DB, w.DB.Now().UTC().Add(-fleet.SampleRetention)); err != nil {
		return err
	}
	if n > 0 {
		slog.Info("expired sessions purged", "count", n, "job", job.ID)
	}
	return nil
}
