package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/models"
	"suanli/sla"
)

// SLAArgs asks for every due SLA computation to be recorded and its
// credit posted (sla.Settle): monthly per rental, and at its end.
type SLAArgs struct{}

// Kind implements river.JobArgs.
func (SLAArgs) Kind() string { return "settle_sla" }

// InsertOpts keeps one pass waiting at a time; a failed pass is retried
// (each rental is settled once, so a rerun posts nothing twice).
func (SLAArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByPeriod: 5 * time.Minute}}
}

// SLAWorker runs SLAArgs jobs.
type SLAWorker struct {
	river.WorkerDefaults[SLAArgs]
	DB *models.DB
}

// Work implements river.Worker. Each rental is settled in its own
// transaction, so a pass cut short by JobTimeout keeps what it did and
// its retry goes on from there.
func (w *SLAWorker) Work(ctx context.Context, job *river.Job[SLAArgs]) error {
	res, err := sla.Settle(ctx, w.DB)
	if err != nil {
		return err
	}
	if res.Recorded > 0 {
		slog.Info("SLA settled", "rentals", res.Rentals, "recorded", res.Recorded, "credits", res.Credits, "fen", res.Fen, "job", job.ID)
	}
	return nil
}

// UptimeArgs asks for every node's 30-day uptime to be recomputed
// (sla.RefreshUptime).
type UptimeArgs struct{}

// Kind implements river.JobArgs.
func (UptimeArgs) Kind() string { return "refresh_uptime" }

// InsertOpts keeps one pass waiting at a time.
func (UptimeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByPeriod: time.Minute}}
}

// UptimeWorker runs UptimeArgs jobs.
type UptimeWorker struct {
	river.WorkerDefaults[UptimeArgs]
	DB *models.DB
}

// Work implements river.Worker.
func (w *UptimeWorker) Work(ctx context.Context, job *river.Job[UptimeArgs]) error {
	n, err := sla.RefreshUptime(ctx, w.DB)
	if err != nil {
		return err
	}
	slog.Debug("node uptime refreshed", "nodes", n, "job", job.ID)
	return nil
}

// slaJobs are the SLA and reliability schedule: SLA every slaEvery
// (default an hour: a rental's final credit follows its end within it),
// node uptime every uptimeEvery (default 10 minutes); both at start too.
func slaJobs(slaEvery, uptimeEvery time.Duration) []*river.PeriodicJob {
	if slaEvery <= 0 {
		slaEvery = time.Hour
	}
	if uptimeEvery <= 0 {
		uptimeEvery = 10 * time.Minute
	}
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(slaEvery),
			func() (river.JobArgs, *river.InsertOpts) { return SLAArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true, ID: "settle_sla"}),
		river.NewPeriodicJob(river.PeriodicInterval(uptimeEvery),
			func() (river.JobArgs, *river.InsertOpts) { return UptimeArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true, ID: "refresh_uptime"}),
	}
}
