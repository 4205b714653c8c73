package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/spendalerts"
)

// SpendAlertsArgs asks for one pass of the spending alerts
// (spendalerts.Service.Pass).
type SpendAlertsArgs struct{}

// Kind implements river.JobArgs.
func (SpendAlertsArgs) Kind() string { return "spend_alerts" }

// InsertOpts keeps one pass waiting or running at a time: a pass reads
// the clock itself, so one that overruns the interval is not followed by
// a queue of others.
func (SpendAlertsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: onePass}}
}

// SpendAlertsWorker runs SpendAlertsArgs jobs.
type SpendAlertsWorker struct {
	river.WorkerDefaults[SpendAlertsArgs]
	Alerts *spendalerts.Service
}

// Work implements river.Worker.
func (w *SpendAlertsWorker) Work(ctx context.Context, job *river.Job[SpendAlertsArgs]) error {
	res, err := w.Alerts.Pass(ctx)
	if res.Mailed > 0 || res.Rearmed > 0 {
		slog.Info("spending alerts pass", "orgs", res.Orgs, "mailed", res.Mailed, "rearmed", res.Rearmed, "job", job.ID)
	}
	return err
}

// spendAlertsJob schedules the alerts pass every every (default a
// minute, the meter's period: spending moves once a meter pass).
func spendAlertsJob(every time.Duration) *river.PeriodicJob {
	if every <= 0 {
		every = time.Minute
	}
	return river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return SpendAlertsArgs{}, nil },
		&river.PeriodicJobOpts{ID: "spend_alerts"})
}
