package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// stats counts the answers and keeps the latencies of each operation.
type stats struct {
	mu      sync.Mutex
	ops     map[string]*opStats
	skipped map[string]int
}

// opStats is one operation's answers: by HTTP status (0: no answer) and
// the latency of each.
type opStats struct {
	codes     map[int]int
	latencies []time.Duration
	lastErr   error
}

func newStats() *stats {
	return &stats{ops: map[string]*opStats{}, skipped: map[string]int{}}
}

// add records one request of op: its status (0 with err when there was
// no answer) and how long it took.
func (s *stats) add(op string, code int, took time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.ops[op]
	if o == nil {
		o = &opStats{codes: map[int]int{}}
		s.ops[op] = o
	}
	if err != nil {
		code = 0
		o.lastErr = err
	}
	o.codes[code]++
	o.latencies = append(o.latencies, took)
}

// skip records a tick that sent nothing, and why.
func (s *stats) skip(why string) {
	s.mu.Lock()
	s.skipped[why]++
	s.mu.Unlock()
}

// classes sums codes into 2xx, 4xx, 5xx and "err" (no answer).
func classes(codes map[int]int) (ok, client, server, failed int) {
	for c, n := range codes {
		switch {
		case c == 0:
			failed += n
		case c < 300:
			ok += n
		case c < 500:
			client += n
		default:
			server += n
		}
	}
	return
}

// progress writes one line: each operation's 2xx/4xx/5xx/err so far.
func (s *stats) progress(w io.Writer, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, op := range sortedKeys(s.ops) {
		ok, c4, c5, e := classes(s.ops[op].codes)
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d/%d", op, ok, c4, c5, e))
	}
	fmt.Fprintf(w, "churn: [2xx/4xx/5xx/err] %s; %d waiting for their stop\n", strings.Join(parts, ", "), waiting)
}

// print writes the summary: per operation the rate, the classes, each
// status code, and the latency percentiles; then a RESULT line. Stops
// begin only after hold, so their rate is over the time after it.
func (s *stats) print(w io.Writer, elapsed, hold time.Duration, rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(w, "churn summary over %s\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "%-16s %7s %7s %6s %6s %6s %6s %8s %8s %8s %8s  %s\n",
		"operation", "total", "per s", "2xx", "4xx", "5xx", "err", "p50", "p90", "p99", "max", "codes")
	for _, op := range sortedKeys(s.ops) {
		o := s.ops[op]
		ok, c4, c5, e := classes(o.codes)
		total := ok + c4 + c5 + e
		var codes []string
		for _, c := range sortedKeys(o.codes) {
			codes = append(codes, fmt.Sprintf("%d:%d", c, o.codes[c]))
		}
		l := slices.Clone(o.latencies)
		slices.Sort(l)
		over := elapsed
		if op != "rent" && elapsed > hold {
			over = elapsed - hold
		}
		perSec := fmt.Sprintf("%.2f", float64(total)/over.Seconds())
		if strings.HasSuffix(op, "at exit") {
			perSec = "-" // after the run: not part of its rate
		}
		fmt.Fprintf(w, "%-16s %7d %7s %6d %6d %6d %6d %8s %8s %8s %8s  %s\n", op, total, perSec, ok, c4, c5, e,
			ms(percentile(l, 50)), ms(percentile(l, 90)), ms(percentile(l, 99)), ms(percentile(l, 100)), strings.Join(codes, " "))
		if o.lastErr != nil {
			fmt.Fprintf(w, "  %s: last error without an answer: %v\n", op, o.lastErr)
		}
		if o.codes[429] > 0 {
			fmt.Fprintf(w, "  %s: 429s: the server's per-token --api-write-rate; give more -token or run it with SUANLI_API_WRITE_RATE=0\n", op)
		}
	}
	for _, why := range sortedKeys(s.skipped) {
		fmt.Fprintf(w, "ticks skipped, %s: %d\n", why, s.skipped[why])
	}
	// One machine-readable line: the rates reached (2xx only, which are
	// what moved availability) and the tails.
	line := fmt.Sprintf("RESULT target_per_s=%g", rate)
	for _, op := range []string{"rent", "stop", "release"} {
		o := s.ops[op]
		if o == nil {
			continue
		}
		ok, _, _, _ := classes(o.codes)
		over := elapsed
		if op != "rent" && elapsed > hold {
			over = elapsed - hold
		}
		l := slices.Clone(o.latencies)
		slices.Sort(l)
		line += fmt.Sprintf(" %s_ok_per_s=%.2f %s_p99_ms=%.1f", op, float64(ok)/over.Seconds(), op, float64(percentile(l, 99))/float64(time.Millisecond))
	}
	fmt.Fprintln(w, line)
}

// percentile is the p-th percentile (nearest rank) of sorted; 0 when
// empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// ms writes d in milliseconds with one decimal.
func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func sortedKeys[K int | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
