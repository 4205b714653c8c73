package workers

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"suanli/rentals"
)

// ProvisionWorker runs one provisioning step of a rental per job run; a
// rental still waiting for its node's agent snoozes the job, so runs stay
// short and a crashed worker's job is rescued quickly.
type ProvisionWorker struct {
	river.WorkerDefaults[ProvisionArgs]
	Rentals *rentals.Service
}

// Timeout bounds one step (rentals.Service.StepWait plus database time).
func (w *ProvisionWorker) Timeout(*river.Job[ProvisionArgs]) time.Duration {
	return 30 * time.Second
}

// Work implements river.Worker.
func (w *ProvisionWorker) Work(ctx context.Context, job *river.Job[ProvisionArgs]) error {
	again, err := w.Rentals.Provision(ctx, job.Args.RentalID)
	if err != nil {
		return err
	}
	if again > 0 {
		return river.JobSnooze(again)
	}
	return nil
}

// MeterArgs asks for every running rental to be billed up to now.
type MeterArgs struct{}

// Kind implements river.JobArgs.
func (MeterArgs) Kind() string { return "meter_rentals" }

// InsertOpts keeps one pass waiting or running at a time, whatever the
// interval: a pass that overruns it is not followed by a queue of others.
// (Uniqueness by period would make the period a floor on --meter-every.)
func (MeterArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: onePass}}
}

// onePass are the job states in which a pass counts as waiting or running.
var onePass = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled}

// MeterWorker runs MeterArgs jobs.
type MeterWorker struct {
	river.WorkerDefaults[MeterArgs]
	Rentals *rentals.Service
}

// Work implements river.Worker.
func (w *MeterWorker) Work(ctx context.Context, job *river.Job[MeterArgs]) error {
	res, err := w.Rentals.Meter(ctx)
	if err != nil {
		return err
	}
	if res.Rentals > 0 {
		slog.Info("rentals metered", "rentals", res.Rentals, "fen", res.Fen, "stopped", res.Stopped, "reminded", res.Reminded, "job", job.ID)
	}
	return nil
}

// WatchArgs asks for the health pass over nodes and rentals.
type WatchArgs struct{}

// Kind implements river.JobArgs.
func (WatchArgs) Kind() string { return "watch_health" }

// InsertOpts keeps one pass waiting at a time.
func (WatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByPeriod: 5 * time.Second}}
}

// WatchWorker runs WatchArgs jobs.
type WatchWorker struct {
	river.WorkerDefaults[WatchArgs]
	Rentals *rentals.Service
}

// Work implements river.Worker.
func (w *WatchWorker) Work(ctx context.Context, job *river.Job[WatchArgs]) error {
	res, err := w.Rentals.Watch(ctx)
	if err != nil {
		return err
	}
	if res != (rentals.WatchResult{}) {
		slog.Info("health pass", "silenced", res.Silenced, "migrated", res.Migrated, "stops_finished", res.Finished, "renewed", res.Renewed, "job", job.ID)
	}
	return nil
}

// ProvisionArgs asks for a rental to be provisioned (or, when it is
// migrating, moved to a healthy node).
type ProvisionArgs struct {
	RentalID int64 `json:"rental_id"`
}

// Kind implements river.JobArgs.
func (ProvisionArgs) Kind() string { return "provision_rental" }

// InsertOpts: a provisioning step is retried a few times on errors; the
// rental's own state says what is left to do, so a rerun is safe.
func (ProvisionArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 10} }

// EnqueueProvision implements rentals.Provisioner: a provisioning job,
// inserted in the rental's own transaction.
func (q *Queue) EnqueueProvision(ctx context.Context, tx *sql.Tx, rentalID int64) error {
	_, err := q.Inserter.InsertTx(ctx, tx, ProvisionArgs{RentalID: rentalID}, nil)
	return err
}
