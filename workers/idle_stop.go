package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/idlestop"
)

// IdleStopArgs asks for one idle-stop pass over the running rentals
// (idlestop.Service.Watch).
type IdleStopArgs struct{}

// Kind implements river.JobArgs.
func (IdleStopArgs) Kind() string { return "watch_idle_stop" }

// InsertOpts keeps one pass waiting or running at a time: a pass reads
// the clock itself, so one that overruns the interval is not followed by
// a queue of others.
func (IdleStopArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: onePass}}
}

// IdleStopWorker runs IdleStopArgs jobs.
type IdleStopWorker struct {
	river.WorkerDefaults[IdleStopArgs]
	IdleStop *idlestop.Service
}

// Work implements river.Worker.
func (w *IdleStopWorker) Work(ctx context.Context, job *river.Job[IdleStopArgs]) error {
	res, err := w.IdleStop.Watch(ctx)
	if res.Warned > 0 || res.Stopped > 0 {
		slog.Info("idle stop pass", "watched", res.Watched, "warned", res.Warned, "stopped", res.Stopped, "job", job.ID)
	}
	return err
}

// idleStopJob schedules the idle-stop pass every every (default a
// minute: the warning and the stop are timed to the minute).
func idleStopJob(every time.Duration) *river.PeriodicJob {
	if every <= 0 {
		every = time.Minute
	}
	return river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return IdleStopArgs{}, nil },
		&river.PeriodicJobOpts{ID: "watch_idle_stop"})
}
