// Package workers runs the background jobs on River, on whichever database
// the process uses, and schedules the periodic ones.
package workers

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"suanli/idlestop"
	"suanli/models"
	"suanli/platformaudit"
	"suanli/providers"
	"suanli/rentals"
	"suanli/spendalerts"
)

// Queue is the job queue of one process. Inserter inserts jobs inside gorm
// transactions (InsertTx with the transaction's *sql.Tx) on both databases;
// when the process works jobs, Start runs the workers and the schedule.
type Queue struct {
	Inserter *river.Client[*sql.Tx]
	// worker runs jobs; nil in an insert-only queue.
	worker interface {
		Start(context.Context) error
		Stop(context.Context) error
	}
}

// JobTimeout bounds every job run.
const JobTimeout = 30 * time.Second

// Options configure a Queue.
type Options struct {
	// Work makes the queue run jobs and periodic schedules, not only insert.
	Work bool
	// MaxWorkers is the default queue's concurrency (default 20).
	MaxWorkers int
	// AvailabilityEvery is the offer availability refresh period (default 1 min).
	AvailabilityEvery time.Duration
	// Mail, when set, delivers the outbox every MailEvery (default 10 s);
	// without it mail stays in the outbox for admins to read.
	Mail      Sender
	MailEvery time.Duration
	// Rentals, when set, adds provisioning, the meter (every MeterEvery,
	// default 1 min), the health watch (every WatchEvery, default 5 s) and
	// the idle-stop watch (every IdleEvery, default 1 min).
	Rentals    *rentals.Service
	MeterEvery time.Duration
	WatchEvery time.Duration
	IdleEvery  time.Duration
	// AlertsEvery is the spending alerts' period (with Rentals; default 1 min).
	AlertsEvery time.Duration
	// RescueAfter is when a job left running by a crashed process is run
	// again (default 1 min; every job here is shorter than that).
	RescueAfter time.Duration
	// FetchPoll is how often idle workers look for new jobs (default 200 ms).
	FetchPoll time.Duration
	// SLAEvery and UptimeEvery schedule SLA credits (default 1 h) and node
	// uptime (default 10 min); see slaJobs.
	SLAEvery, UptimeEvery time.Duration
	// Payouts runs the monthly provider payouts (bank transfers only when
	// nil or without Connect).
	Payouts *providers.Payouts
	// Metrics, when set, counts and times the jobs worked (see JobMetrics).
	Metrics *JobMetrics
	// Audits, when set with AuditEvery > 0, runs a pass of the platform's
	// audits every AuditEvery.
	Audits     *platformaudit.Service
	AuditEvery time.Duration
	// Market are the passes run when GPUs come free (see MarketArgs) and
	// every MarketEvery (default 15 s).
	Market      []MarketPass
	MarketEvery time.Duration
}

// New builds the queue for db. On SQLite one client on the write
// connection does everything; on PostgreSQL a pgx client works the jobs and
// a database/sql client inserts inside gorm transactions (riverpgxv5
// cannot take gorm's *sql.Tx).
func New(db *models.DB, opts Options) (*Queue, error) {
	// Every job finishes (or snoozes, or commits what it did) within
	// JobTimeout, so a job still marked running after RescueAfter belonged
	// to a process that died, and is run again.
	cfg := &river.Config{Logger: riverLogger(), JobTimeout: JobTimeout, RescueStuckJobsAfter: max(cmp.Or(opts.RescueAfter, time.Minute), JobTimeout+10*time.Second)}
	// A rent request waits on its provisioning job: poll often enough that
	// pickup is not what the renter waits for (a job inserted through the
	// database/sql client on PostgreSQL does not wake pgx listeners).
	cfg.FetchPollInterval = cmp.Or(opts.FetchPoll, 200*time.Millisecond)
	cfg.FetchCooldown = min(cfg.FetchPollInterval, 100*time.Millisecond)
	if opts.Work {
		workers := river.NewWorkers()
		river.AddWorker(workers, &RefreshAvailabilityWorker{DB: db})
		river.AddWorker(workers, &PurgeWorker{DB: db})
		river.AddWorker(workers, &SLAWorker{DB: db})
		river.AddWorker(workers, &UptimeWorker{DB: db})
		payouts := opts.Payouts
		if payouts == nil {
			payouts = &providers.Payouts{DB: db}
		}
		river.AddWorker(workers, &PayoutsWorker{Payouts: payouts})
		if opts.Mail != nil {
			river.AddWorker(workers, &DeliverMailWorker{DB: db, Sender: opts.Mail})
		}
		if opts.Rentals != nil {
			river.AddWorker(workers, &ProvisionWorker{Rentals: opts.Rentals})
			river.AddWorker(workers, &MarketWorker{DB: db, Passes: opts.Market})
			river.AddWorker(workers, &MeterWorker{Rentals: opts.Rentals})
			river.AddWorker(workers, &WatchWorker{Rentals: opts.Rentals})
			river.AddWorker(workers, &ScheduleBenchmarksWorker{Rentals: opts.Rentals})
			river.AddWorker(workers, &IdleStopWorker{IdleStop: &idlestop.Service{Rentals: opts.Rentals}})
			river.AddWorker(workers, &SpendAlertsWorker{Alerts: &spendalerts.Service{DB: db, BaseURL: opts.Rentals.BaseURL}})
		}
		if opts.Audits != nil && opts.AuditEvery > 0 {
			river.AddWorker(workers, &PlatformAuditWorker{Audits: opts.Audits})
		}
		cfg.Workers = workers
		if opts.Metrics != nil {
			cfg.Middleware = append(cfg.Middleware, opts.Metrics)
		}
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cmp.Or(opts.MaxWorkers, 20)}}
		cfg.PeriodicJobs = []*river.PeriodicJob{
			river.NewPeriodicJob(river.PeriodicInterval(cmp.Or(opts.AvailabilityEvery, time.Minute)),
				func() (river.JobArgs, *river.InsertOpts) { return RefreshAvailabilityArgs{}, nil },
				&river.PeriodicJobOpts{RunOnStart: true, ID: "refresh_offer_availability"}),
			river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
				func() (river.JobArgs, *river.InsertOpts) { return PurgeArgs{}, nil },
				&river.PeriodicJobOpts{ID: "purge_expired"}),
		}
		cfg.PeriodicJobs = append(cfg.PeriodicJobs, slaJobs(opts.SLAEvery, opts.UptimeEvery)...)
		cfg.PeriodicJobs = append(cfg.PeriodicJobs, payoutJob(func() time.Time { return db.Now() }))
		if opts.Rentals != nil {
			cfg.PeriodicJobs = append(cfg.PeriodicJobs,
				river.NewPeriodicJob(river.PeriodicInterval(cmp.Or(opts.MeterEvery, time.Minute)),
					func() (river.JobArgs, *river.InsertOpts) { return MeterArgs{}, nil },
					&river.PeriodicJobOpts{ID: "meter_rentals"}),
				river.NewPeriodicJob(river.PeriodicInterval(cmp.Or(opts.MarketEvery, defaultMarketEvery)),
					func() (river.JobArgs, *river.InsertOpts) { return MarketArgs{}, nil },
					&river.PeriodicJobOpts{RunOnStart: true, ID: "market_changed"}),
				river.NewPeriodicJob(river.PeriodicInterval(cmp.Or(opts.WatchEvery, 5*time.Second)),
					func() (river.JobArgs, *river.InsertOpts) { return WatchArgs{}, nil },
					&river.PeriodicJobOpts{RunOnStart: true, ID: "watch_health"}),
				scheduleBenchmarks(), idleStopJob(opts.IdleEvery), spendAlertsJob(opts.AlertsEvery))
		}
		if opts.Audits != nil && opts.AuditEvery > 0 {
			cfg.PeriodicJobs = append(cfg.PeriodicJobs, platformAuditJob(opts.AuditEvery))
		}
		if opts.Mail != nil {
			cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(cmp.Or(opts.MailEvery, 10*time.Second)),
				func() (river.JobArgs, *river.InsertOpts) { return DeliverMailArgs{}, nil },
				&river.PeriodicJobOpts{RunOnStart: true, ID: "deliver_mail"}))
		}
	}
	switch db.Dialect {
	case "sqlite":
		c, err := river.NewClient(riversqlite.New(db.SQL), cfg)
		if err != nil {
			return nil, fmt.Errorf("river client: %w", err)
		}
		q := &Queue{Inserter: c}
		if opts.Work {
			q.worker = c
		}
		return q, nil
	case "postgres":
		ins, err := river.NewClient(riverdatabasesql.New(db.SQL), &river.Config{Logger: riverLogger()})
		if err != nil {
			return nil, fmt.Errorf("river insert client: %w", err)
		}
		q := &Queue{Inserter: ins}
		if opts.Work {
			w, err := river.NewClient[pgx.Tx](riverpgxv5.New(db.PGX), cfg)
			if err != nil {
				return nil, fmt.Errorf("river worker client: %w", err)
			}
			q.worker = w
		}
		return q, nil
	}
	return nil, fmt.Errorf("workers: unknown dialect %q", db.Dialect)
}

// Start starts working jobs; it is a no-op for an insert-only queue.
func (q *Queue) Start(ctx context.Context) error {
	if q.worker == nil {
		return nil
	}
	return q.worker.Start(ctx)
}

// Stop waits for running jobs to finish (or ctx to end).
func (q *Queue) Stop(ctx context.Context) error {
	if q.worker == nil {
		return nil
	}
	return q.worker.Stop(ctx)
}

// riverLogger passes River's warnings and errors to slog; its info lines
// (every fetch loop start) would drown the access log.
func riverLogger() *slog.Logger {
	return slog.New(levelFilter{slog.Default().Handler(), slog.LevelWarn})
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (l levelFilter) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.Handler.Enabled(ctx, lv)
}
func (l levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{l.Handler.WithAttrs(a), l.min}
}
func (l levelFilter) WithGroup(n string) slog.Handler {
	return levelFilter{l.Handler.WithGroup(n), l.min}
}
