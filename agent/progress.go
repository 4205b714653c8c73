package agent

import (
	"context"
	"sync"
	"time"
)

// progressEvery is the least time between two progress posts for one
// task: a pull's stream reports many times a second, the rental page
// needs far fewer.
const progressEvery = time.Second

// progressReporter posts a task's progress to the server in the
// background: report only keeps the latest value, so a slow server never
// holds up the launch, and a value equal to the last one sent is not sent
// again.
type progressReporter struct {
	a      *Agent
	taskID int64
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu     sync.Mutex
	latest Progress
}

// newProgressReporter starts a reporter for task id; stop ends it.
func (a *Agent) newProgressReporter(ctx context.Context, id int64) *progressReporter {
	ctx, cancel := context.WithCancel(ctx)
	r := &progressReporter{a: a, taskID: id, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go r.loop(ctx)
	return r
}

// report records p as the task's progress; it never blocks.
func (r *progressReporter) report(p Progress) {
	r.mu.Lock()
	r.latest = p
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// stop ends the reporter and waits for it; what was not sent yet is
// dropped (the task's result follows).
func (r *progressReporter) stop() {
	r.cancel()
	<-r.done
}

func (r *progressReporter) loop(ctx context.Context) {
	defer close(r.done)
	var sent Progress
	first := true
	log := r.a.log.With("task_id", r.taskID)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		p := r.latest
		r.mu.Unlock()
		if (!first && p.Stage == sent.Stage && p.Pct == sent.Pct) || r.a.silent() {
			continue
		}
		err := r.a.postProgress(ctx, r.taskID, p)
		switch {
		case ctx.Err() != nil:
			return
		case isNotFound(err):
			// A server from before the progress endpoint: it gets the
			// result only, as it always did.
			log.Debug("server takes no task progress; not reporting it", "err", err)
			return
		case err != nil:
			log.Debug("task progress not sent", "err", err)
		default:
			sent, first = p, false
		}
		if !sleep(ctx, progressEvery) {
			return
		}
	}
}
