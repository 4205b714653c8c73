package workers

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"suanli/models"
)

// MarketPass is one pass run whenever GPUs may have come free: the
// resume of interrupted rentals, the matching of standing orders.
type MarketPass struct {
	Name string
	Run  func(ctx context.Context) error
}

// MarketArgs asks for the market passes to run: enqueued in the
// transaction that frees GPUs (EnqueueMarket), and on a period as a net
// for changes made elsewhere (a node back, an offer listed, an order
// expiring).
type MarketArgs struct{}

// Kind implements river.JobArgs.
func (MarketArgs) Kind() string { return "market_changed" }

// InsertOpts keeps at most one pass waiting or running: a change that
// comes while one waits is seen by it, so a burst of releases costs one
// pass. One that comes while a pass runs is seen by its rerun (Work runs
// again while the offers version moves), or else by the periodic pass.
func (MarketArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateScheduled, rivertype.JobStateRetryable}}}
}

// MarketWorker runs MarketArgs jobs: every pass, in order; one failing
// does not keep the others from running (the job retries the whole).
type MarketWorker struct {
	river.WorkerDefaults[MarketArgs]
	DB     *models.DB
	Passes []MarketPass
}

// marketReruns bounds how often one job runs the passes again because the
// market moved meanwhile (the passes' own rents move it too).
const marketReruns = 3

// Work implements river.Worker.
func (w *MarketWorker) Work(ctx context.Context, job *river.Job[MarketArgs]) error {
	for range marketReruns {
		before, err := w.DB.OffersVersion(ctx)
		if err != nil {
			return err
		}
		var errs []error
		for _, p := range w.Passes {
			if err := p.Run(ctx); err != nil {
				errs = append(errs, errors.New(p.Name+": "+err.Error()))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		after, err := w.DB.OffersVersion(ctx)
		if err != nil || after == before {
			return err
		}
	}
	return nil
}

// EnqueueMarket implements rentals.Provisioner: a market pass, inserted
// in the transaction that freed GPUs (so it runs once they are free).
func (q *Queue) EnqueueMarket(ctx context.Context, tx *sql.Tx) error {
	_, err := q.Inserter.InsertTx(ctx, tx, MarketArgs{}, nil)
	return err
}

// defaultMarketEvery is the market passes' period when none is set.
const defaultMarketEvery = 15 * time.Second
