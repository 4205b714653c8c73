package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/benchmarks"
	"suanli/rentals"
)

// ScheduleBenchmarksEvery is how often due benchmarks are looked for: a
// node whose GPUs have just passed their checks gets its first report
// within minutes.
const ScheduleBenchmarksEvery = time.Minute

// ScheduleBenchmarksArgs asks for the benchmarks that are due (a node's
// first after its GPUs were verified, then weekly) to be sent to the
// node agents.
type ScheduleBenchmarksArgs struct{}

// Kind implements river.JobArgs.
func (ScheduleBenchmarksArgs) Kind() string { return "schedule_benchmarks" }

// InsertOpts keeps one pass waiting at a time.
func (ScheduleBenchmarksArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByPeriod: 30 * time.Second}}
}

// ScheduleBenchmarksWorker runs ScheduleBenchmarksArgs jobs.
type ScheduleBenchmarksWorker struct {
	river.WorkerDefaults[ScheduleBenchmarksArgs]
	Rentals *rentals.Service
}

// Work implements river.Worker.
func (w *ScheduleBenchmarksWorker) Work(ctx context.Context, job *river.Job[ScheduleBenchmarksArgs]) error {
	n, err := benchmarks.Schedule(ctx, w.Rentals.Fleet())
	if err != nil {
		return err
	}
	if n > 0 {
		slog.Info("benchmarks requested", "nodes", n, "job", job.ID)
	}
	return nil
}

// scheduleBenchmarks is the periodic job; it runs at start too, so a
// restarted server catches up at once.
func scheduleBenchmarks() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(ScheduleBenchmarksEvery),
		func() (river.JobArgs, *river.InsertOpts) { return ScheduleBenchmarksArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "schedule_benchmarks"})
}
