package changefeed

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"suanli/models"
	"suanli/models/changelog"
)

// Options tune how Run reads the database. The zero value is the default.
type Options struct {
	// Poll is how often SQLite's change_log is read (default 1 s): one
	// statement per interval for the whole process, however many pages
	// wait.
	Poll time.Duration
	// Keep is how long change_log rows stay (default 10 minutes), pruned
	// every PruneEvery (default 5 minutes).
	Keep, PruneEvery time.Duration
	// Ping is how long PostgreSQL's listening connection may stay silent
	// before it is pinged (default 2 minutes).
	Ping time.Duration
	// Backoff is the first wait after the source failed (default 1 s),
	// doubling up to MaxBackoff (default 30 s).
	Backoff, MaxBackoff time.Duration
}

func (o Options) withDefaults() Options {
	o.Poll = cmp.Or(o.Poll, time.Second)
	o.Keep = cmp.Or(o.Keep, 10*time.Minute)
	o.PruneEvery = cmp.Or(o.PruneEvery, 5*time.Minute)
	o.Ping = cmp.Or(o.Ping, 2*time.Minute)
	o.Backoff = cmp.Or(o.Backoff, time.Second)
	o.MaxBackoff = cmp.Or(o.MaxBackoff, 30*time.Second)
	return o
}

// pollBatch is how many change_log rows one read takes.
const pollBatch = 1000

// Run reads db's changes and publishes them until ctx ends: on
// PostgreSQL from one LISTEN connection, on SQLite by polling change_log.
// After a failure it tries again with a growing pause, and once it reads
// again it tells every subscriber that anything may have changed.
func (f *Feed) Run(ctx context.Context, db *models.DB, o Options) {
	o = o.withDefaults()
	defer f.setLive(false)
	if db.Dialect == "postgres" {
		f.listen(ctx, db, o)
		return
	}
	f.poll(ctx, db, o)
}

// pause waits d or until ctx ends, reporting whether to go on.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (f *Feed) listen(ctx context.Context, db *models.DB, o Options) {
	backoff := o.Backoff
	for ctx.Err() == nil {
		err := changelog.Listen(ctx, db, o.Ping, func() {
			f.setLive(true)
			backoff = o.Backoff
		}, func(payload string) {
			if topic, id, ok := changelog.Parse(payload); ok {
				f.Publish(Key{topic, id})
			}
		})
		f.setLive(false)
		if ctx.Err() != nil {
			return
		}
		slog.Warn("changefeed: listening failed; live pages wait for the reconnect", "err", err, "retry_in", backoff)
		if !pause(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, o.MaxBackoff)
	}
}

func (f *Feed) poll(ctx context.Context, db *models.DB, o Options) {
	last := int64(-1) // unknown until the first read
	backoff := o.Backoff
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	prune := time.NewTicker(o.PruneEvery)
	defer prune.Stop()
	for {
		var err error
		if last < 0 {
			last, err = changelog.Latest(ctx, db)
			if err != nil {
				last = -1
			}
		} else {
			last, err = f.readAfter(ctx, db, last)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			f.setLive(false)
			slog.Warn("changefeed: reading change_log failed; live pages wait", "err", err, "retry_in", backoff)
			if !pause(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, o.MaxBackoff)
			continue
		}
		f.setLive(true)
		backoff = o.Backoff
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			if err := changelog.Prune(ctx, db, last, o.Keep); err != nil && ctx.Err() == nil {
				slog.Warn("changefeed: pruning change_log failed", "err", err)
			}
		case <-tick.C:
		}
	}
}

// readAfter publishes the rows after last and returns the new last. Ids
// follow each other (AUTOINCREMENT, writers serialised): a jump means
// rows were pruned unread, and everything may have changed.
func (f *Feed) readAfter(ctx context.Context, db *models.DB, last int64) (int64, error) {
	for {
		cs, err := changelog.After(ctx, db, last, pollBatch)
		if err != nil {
			return last, err
		}
		if len(cs) > 0 && cs[0].ID != last+1 {
			slog.Warn("changefeed: change_log rows were pruned before this process read them", "after", last, "next", cs[0].ID)
			f.PublishAll()
		}
		for _, c := range cs {
			f.Publish(Key{c.Topic, c.RefID})
			last = c.ID
		}
		if len(cs) < pollBatch {
			return last, nil
		}
	}
}
