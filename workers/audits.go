package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/platformaudit"
)

// PlatformAuditArgs asks for one pass of the platform's audits
// (platformaudit.Service.Pass): start the due ones, end and release the
// finished ones.
type PlatformAuditArgs struct{}

// Kind implements river.JobArgs.
func (PlatformAuditArgs) Kind() string { return "platform_audit" }

// InsertOpts keeps one pass waiting or running at a time.
func (PlatformAuditArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: onePass}}
}

// PlatformAuditWorker runs PlatformAuditArgs jobs.
type PlatformAuditWorker struct {
	river.WorkerDefaults[PlatformAuditArgs]
	Audits *platformaudit.Service
}

// Work implements river.Worker.
func (w *PlatformAuditWorker) Work(ctx context.Context, job *river.Job[PlatformAuditArgs]) error {
	res, err := w.Audits.Pass(ctx)
	if res != (platformaudit.PassResult{}) {
		slog.Info("platform audit pass", "started", res.Started, "timed_out", res.TimedOut, "released", res.Released, "skipped", res.Skipped, "job", job.ID)
	}
	return err
}

// platformAuditJob schedules the audit pass every every.
func platformAuditJob(every time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return PlatformAuditArgs{}, nil },
		&river.PeriodicJobOpts{ID: "platform_audit"})
}
