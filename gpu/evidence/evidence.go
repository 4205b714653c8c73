// Package evidence keeps what the health checks that need more than one
// read remember: how long a condition has held read after read (Run), and
// how much a cumulative error counter rose over a window (Counter). It
// knows nothing of NVML; package gpu feeds it readings and their times.
package evidence

import (
	"slices"
	"time"
)

// Run is a run of reads that all showed a condition (a hardware slowdown
// reason): since the first, until the last.
type Run struct {
	Since, Last time.Time
	Reads       int
}

// Note adds one read to the run: held extends it, a read without the
// condition ends it.
func (r *Run) Note(held bool, at time.Time) {
	if !held {
		*r = Run{}
		return
	}
	if r.Reads == 0 {
		r.Since = at
	}
	r.Reads++
	r.Last = at
}

// Span is how long the run has lasted, from its first read to its last.
func (r Run) Span() time.Duration { return r.Last.Sub(r.Since) }

// Held reports whether the condition held in at least reads reads in a
// row over at least window.
func (r Run) Held(window time.Duration, reads int) bool {
	return r.Reads >= reads && r.Span() >= window
}

// sample is one read of a counter.
type sample struct {
	at time.Time
	v  uint64
}

// Counter keeps the recent reads of a cumulative counter, to measure its
// rise over a window: from the newest read at least that old (or the
// oldest, while there is none so old) to the latest.
type Counter struct {
	Window  time.Duration
	samples []sample
}

// Add records a read and returns the rise over the window and the time it
// spans (0, 0 on the first read). A counter that went down (a driver
// reload, a reset of the counters) starts over.
func (c *Counter) Add(v uint64, at time.Time) (rise uint64, span time.Duration) {
	if n := len(c.samples); n > 0 && v < c.samples[n-1].v {
		c.samples = nil
	}
	c.samples = append(c.samples, sample{at, v})
	start := 0
	for i := range c.samples {
		if at.Sub(c.samples[i].at) >= c.Window {
			start = i
		}
	}
	c.samples = slices.Delete(c.samples, 0, start)
	base := c.samples[0]
	return v - base.v, at.Sub(base.at)
}
