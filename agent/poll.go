package agent

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"
)

// minPollGap is the least time between the starts of two polls that
// brought nothing, so that a server answering at once (one that ignores
// wait, or a proxy cutting the connection) does not make the agent spin.
const minPollGap = 250 * time.Millisecond

// maxDone bounds the memory of finished task ids.
const maxDone = 4096

// pollLoop long-polls for tasks once the agent is registered, and starts
// each on its own goroutine in wg, so that a slow launch does not hold up
// the verify of another rental.
func (a *Agent) pollLoop(ctx context.Context, wg *sync.WaitGroup) {
	select {
	case <-a.registered:
	case <-ctx.Done():
		return
	}
	var bo backoff
	for {
		if a.silent() {
			if !sleep(ctx, a.idleWait()) {
				return
			}
			continue
		}

		start := time.Now()
		tasks, err := a.poll(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			wait := bo.after(err)
			a.log.Warn("task poll failed; retrying", "err", err, "retry_in", wait)
			if !sleep(ctx, wait) {
				return
			}
			continue
		}
		bo.reset()

		for _, t := range tasks {
			if !a.claim(t.ID) {
				a.log.Debug("task already taken; ignoring the repeat", "task_id", t.ID)
				continue
			}
			wg.Go(func() { a.work(ctx, t) })
		}
		if len(tasks) == 0 && !sleep(ctx, minPollGap-time.Since(start)) {
			return
		}
	}
}

// poll asks the server for tasks, waiting up to PollWait for one.
func (a *Agent) poll(ctx context.Context) ([]Task, error) {
	wait := max(1, int(math.Ceil(a.cfg.PollWait.Seconds())))
	var out Tasks
	path := fmt.Sprintf("%s?wait=%d", PathTasks, wait)
	if err := a.call(ctx, http.MethodGet, path, time.Duration(wait)*time.Second+requestTimeout, nil, &out); err != nil {
		return nil, err
	}
	return out.Tasks, nil
}

// claim marks task id as taken and reports whether it was free.
func (a *Agent) claim(id int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inflight[id] || a.done[id] {
		return false
	}
	a.inflight[id] = true
	return true
}

func (a *Agent) release(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.inflight, id)
	if len(a.done) >= maxDone {
		clear(a.done)
	}
	a.done[id] = true
}

// work runs one task and reports its result.
func (a *Agent) work(ctx context.Context, t Task) {
	defer a.release(t.ID)
	log := a.log.With("task_id", t.ID, "kind", t.Kind, "rental_id", t.RentalID)
	log.Info("task started", "gpus", t.GPUUUIDs)
	res := a.execute(ctx, t)
	if res.OK {
		log.Info("task done")
	} else {
		log.Warn("task failed", "err", res.Error)
	}
	a.report(ctx, t.ID, res)
}

// report posts a result until the server has it: the server needs every
// result (a lost verify stalls a rental until it times out), and it treats
// a second copy as a no-op, so retrying is always safe. Only shutdown or
// a refusal (4xx) ends the retries.
func (a *Agent) report(ctx context.Context, id int64, res Result) {
	log := a.log.With("task_id", id)
	var bo backoff
	for {
		for a.silent() {
			if !sleep(ctx, a.idleWait()) {
				log.Warn("result not sent: agent stopping")
				return
			}
		}
		err := a.call(ctx, http.MethodPost, fmt.Sprintf(PathResult, id), requestTimeout, res, nil)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			log.Warn("result not sent: agent stopping", "err", err)
			return
		}
		if !retryable(err) {
			log.Error("server refused the result", "err", err)
			return
		}
		wait := bo.after(err)
		log.Warn("sending result failed; retrying", "err", err, "retry_in", wait)
		if !sleep(ctx, wait) {
			log.Warn("result not sent: agent stopping")
			return
		}
	}
}
