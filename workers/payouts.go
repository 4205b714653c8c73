package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"suanli/apperr"
	"suanli/pricing"
	"suanli/providers"
)

// PayoutsArgs asks for a period's provider payouts (providers.Payouts.Run):
// scheduled monthly for the month just ended, and insertable on demand.
type PayoutsArgs struct {
	// Period is the month paid, "YYYY-MM" in Asia/Shanghai; empty means
	// the month before the one the job runs in.
	Period string `json:"period,omitempty"`
}

// Kind implements river.JobArgs.
func (PayoutsArgs) Kind() string { return "payouts" }

// InsertOpts keeps one run per period waiting at a time, and retries a
// failed run: a run is safe to repeat (one payout per provider and period,
// transfers with idempotency keys), and each retry sends what an earlier
// attempt left pending.
func (PayoutsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByPeriod: time.Hour}}
}

// PayoutsWorker runs PayoutsArgs jobs.
type PayoutsWorker struct {
	river.WorkerDefaults[PayoutsArgs]
	Payouts *providers.Payouts
}

// Work implements river.Worker. Every provider's payout commits on its
// own, so an attempt cut short by JobTimeout keeps what it did.
func (w *PayoutsWorker) Work(ctx context.Context, job *river.Job[PayoutsArgs]) error {
	period := job.Args.Period
	if period == "" {
		period = providers.PayoutPeriod(w.Payouts.DB.Now())
	}
	n, err := w.Payouts.Run(ctx, period)
	if apperr.Code(err) == apperr.EINVALID {
		// A bad or unfinished period will not get better by retrying.
		return river.JobCancel(err)
	}
	if n > 0 || err != nil {
		slog.Info("payouts run", "period", period, "created", n, "err", err, "job", job.ID)
	}
	return err
}

// PayoutSchedule is when the monthly payouts run: the 1st of each month
// at 02:00 Asia/Shanghai, for the month just ended.
var PayoutSchedule river.PeriodicSchedule = monthly{}

// monthly is PayoutSchedule's type.
type monthly struct{}

// Next implements river.PeriodicSchedule.
func (monthly) Next(t time.Time) time.Time {
	l := t.In(pricing.Shanghai)
	next := time.Date(l.Year(), l.Month(), 1, 2, 0, 0, 0, pricing.Shanghai)
	if !next.After(l) {
		next = next.AddDate(0, 1, 0)
	}
	return next
}

// payoutCatchUp is how long after the scheduled time a process starting
// still runs the month's payouts: a leader that was down at 02:00 on the
// 1st would otherwise skip the month.
const payoutCatchUp = 72 * time.Hour

// payoutJob is the monthly periodic job. River's periodic jobs are
// inserted by the leader only, so one process schedules it. It is also
// offered at start, when the constructor inserts it only inside the
// catch-up window; a run already done makes the repeat create nothing.
// clock is the database's (models.DB.Now).
func payoutJob(clock func() time.Time) *river.PeriodicJob {
	return river.NewPeriodicJob(PayoutSchedule,
		func() (river.JobArgs, *river.InsertOpts) {
			now := clock()
			l := now.In(pricing.Shanghai)
			due := time.Date(l.Year(), l.Month(), 1, 2, 0, 0, 0, pricing.Shanghai)
			if now.Before(due.Add(-time.Minute)) || now.After(due.Add(payoutCatchUp)) {
				return nil, nil
			}
			return PayoutsArgs{Period: providers.PayoutPeriod(now)}, nil
		},
		&river.PeriodicJobOpts{RunOnStart: true, ID: "monthly_payouts"})
}
