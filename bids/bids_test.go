package bids_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"suanli/apperr"
	"suanli/bids"
)

func ptr(v int64) *int64 { return &v }

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		floor      *int64
		bid        int64
		wantField  string
		wantAccept bool
	}{
		{nil, 300, "term", false},
		{ptr(300), 299, bids.Field, false},
		{ptr(300), 300, "", true},
		{ptr(300), 520, "", true},
		{ptr(300), 521, bids.Field, false},
	} {
		err := bids.Check(c.floor, 520, c.bid)
		var ae *apperr.Error
		errors.As(err, &ae)
		switch {
		case c.wantAccept && err != nil:
			t.Errorf("floor %v bid %d: %v, want accepted", c.floor, c.bid, err)
		case !c.wantAccept && (ae == nil || ae.Field != c.wantField || ae.Code != apperr.EINVALID):
			t.Errorf("floor %v bid %d: %v, want invalid %s", c.floor, c.bid, err, c.wantField)
		}
	}
	if err := bids.CheckRaise(ptr(300), 520, 400, 400); err == nil {
		t.Error("a raise to the same bid was accepted")
	}
	if err := bids.CheckRaise(ptr(300), 520, 400, 401); err != nil {
		t.Errorf("a raise by a fen: %v", err)
	}
}

func TestVictims(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	hs := []bids.Holder{
		{RentalID: 1, Bid: nil, GPUs: 2, CreatedAt: t0},                       // on demand: never gives way
		{RentalID: 2, Bid: ptr(300), GPUs: 1, CreatedAt: t0},                  // lowest, earlier
		{RentalID: 3, Bid: ptr(300), GPUs: 1, CreatedAt: t0.Add(time.Minute)}, // lowest, later: goes first
		{RentalID: 4, Bid: ptr(450), GPUs: 2, CreatedAt: t0},
	}
	for _, c := range []struct {
		need int
		bid  *int64
		want []int64
		ok   bool
	}{
		{0, nil, nil, true},
		{1, nil, []int64{3}, true},
		{2, nil, []int64{3, 2}, true},
		{3, nil, []int64{3, 2, 4}, true},
		{5, nil, nil, false},      // the on-demand GPUs never free
		{1, ptr(300), nil, false}, // an equal bid interrupts no one
		{2, ptr(301), []int64{3, 2}, true},
		{3, ptr(450), nil, false}, // only lower bids give way
	} {
		got, ok := bids.Victims(hs, c.need, c.bid)
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("need %d bid %v: %v %v, want %v %v", c.need, c.bid, got, ok, c.want, c.ok)
		}
	}
}

func TestClearingAndResumeOrder(t *testing.T) {
	if got := bids.Clearing(300, 1, []int64{400}); got != 300 {
		t.Errorf("with a free GPU the clearing price is %d, want the floor", got)
	}
	if got := bids.Clearing(300, 0, nil); got != 300 {
		t.Errorf("with no bid running the clearing price is %d, want the floor", got)
	}
	if got := bids.Clearing(300, 0, []int64{450, 380}); got != 380 {
		t.Errorf("clearing %d, want the lowest running bid", got)
	}
	if got := bids.LeastToRun(300, 2); got != 300 {
		t.Errorf("with free GPUs the least bid that runs is %d, want the clearing price", got)
	}
	if got := bids.LeastToRun(380, 0); got != 381 {
		t.Errorf("with every GPU held the least bid that runs is %d, want a fen above the lowest bid", got)
	}
	t0 := time.Now()
	ws := []bids.Waiting{{RentalID: 1, Bid: 300, CreatedAt: t0}, {RentalID: 2, Bid: 500, CreatedAt: t0.Add(time.Second)},
		{RentalID: 3, Bid: 500, CreatedAt: t0}, {RentalID: 4, Bid: 400, CreatedAt: t0}}
	bids.ResumeOrder(ws)
	var ids []int64
	for _, w := range ws {
		ids = append(ids, w.RentalID)
	}
	if want := []int64{3, 2, 4, 1}; !slices.Equal(ids, want) {
		t.Errorf("resume order %v, want %v (highest bid, then first come)", ids, want)
	}
}

// BenchmarkVictims chooses whom to interrupt on a node with 100
// interruptible rentals (the target: ≤ 1 ms).
func BenchmarkVictims(b *testing.B) {
	t0 := time.Now()
	hs := make([]bids.Holder, 100)
	for i := range hs {
		hs[i] = bids.Holder{RentalID: int64(i + 1), Bid: ptr(int64(300 + (i*37)%200)), GPUs: 1, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
	}
	bid := ptr(450)
	for b.Loop() {
		if _, ok := bids.Victims(hs, 8, bid); !ok {
			b.Fatal("no victims")
		}
	}
}
