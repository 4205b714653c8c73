package evidence_test

import (
	"testing"
	"time"

	"suanli/gpu/evidence"
)

func TestCounterRisesOverItsWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := evidence.Counter{Window: time.Minute}
	for _, s := range []struct {
		after     time.Duration
		v, rise   uint64
		spanAfter time.Duration
	}{
		{0, 100, 0, 0},
		{30 * time.Second, 103, 3, 30 * time.Second},
		{60 * time.Second, 108, 8, time.Minute},
		{90 * time.Second, 112, 9, time.Minute},  // from the read at 30 s
		{120 * time.Second, 112, 4, time.Minute}, // from the read at 60 s
		{130 * time.Second, 5, 0, 0},             // went down: starts over
		{140 * time.Second, 7, 2, 10 * time.Second},
	} {
		rise, span := c.Add(s.v, t0.Add(s.after))
		if rise != s.rise || span != s.spanAfter {
			t.Errorf("at %v read %d: rise %d over %v, want %d over %v", s.after, s.v, rise, span, s.rise, s.spanAfter)
		}
	}
}

func TestRunHoldsOnlyWhileEveryReadShowsIt(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var r evidence.Run
	for i := range 13 {
		r.Note(true, t0.Add(time.Duration(i)*5*time.Second))
		if held := r.Held(time.Minute, 3); held != (i == 12) {
			t.Errorf("read %d: held %v", i, held)
		}
	}
	r.Note(false, t0.Add(65*time.Second))
	if r.Reads != 0 || r.Held(0, 1) {
		t.Errorf("a clear read did not end the run: %+v", r)
	}
}
