// Package bids holds the rules of interruptible rentals (竞价实例), in one
// place for the API, the pages, the rent path and the resume pass: which
// bids an offer accepts, who gives way when GPUs run out, the clearing
// price an offer shows, and the order in which interrupted rentals
// resume. It works on plain values; the rentals package applies it in
// its transactions.
package bids

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"suanli/apperr"
	"suanli/locales"
	"suanli/pricing"
)

// Grace is how long an interrupted rental's container has between its
// stop signal and its end; billing ends when the grace begins.
const Grace = 30 * time.Second

// Field is the API's name of a bid.
const Field = "bid_per_gpu_hour_fen"

// Check refuses a bid the offer does not accept: the offer is not
// interruptible (floor nil), the bid is below its floor, or above its
// on-demand price (an on-demand rent costs that and is never
// interrupted). All three are per GPU-hour before discounts.
func Check(floor *int64, onDemand, bid int64) error {
	switch {
	case floor == nil:
		return &apperr.Error{Code: apperr.EINVALID, Field: "term", Message: "this offer does not take interruptible rentals", Key: "bids.err.not_interruptible"}
	case bid < *floor:
		return &apperr.Error{Code: apperr.EINVALID, Field: Field, Message: "the bid is below this offer's floor", Key: "bids.err.below_floor", Args: []any{pricing.FenToYuanString(*floor)}}
	case bid > onDemand:
		return &apperr.Error{Code: apperr.EINVALID, Field: Field, Message: "the bid is above this offer's on-demand price: rent on demand instead (it is never interrupted)", Key: "bids.err.above_on_demand", Args: []any{pricing.FenToYuanString(onDemand)}}
	}
	return nil
}

// CheckRaise refuses a new bid for a rental that is not higher than its
// bid now (a bid only goes up: a lower one would be a new place in the
// queue, which a new rental is for) or that Check refuses.
func CheckRaise(floor *int64, onDemand, old, bid int64) error {
	if bid <= old {
		return &apperr.Error{Code: apperr.EINVALID, Field: Field, Message: "a bid can only be raised", Key: "bids.err.raise_only", Args: []any{pricing.FenToYuanString(old)}}
	}
	return Check(floor, onDemand, bid)
}

// ErrOutbid refuses a bid for which the free GPUs and those of lower
// bids are too few.
var ErrOutbid = &apperr.Error{Code: apperr.ECONFLICT, Field: Field, Message: "too few GPUs at this bid: the free ones and those of lower bids are fewer than asked; bid higher or try later",
	Key: "bids.err.outbid"}

// Reason says why a rental was interrupted, in English and as a message,
// by the rent that took its GPUs: its bid (nil: none) and its term.
func Reason(byBid *int64, byTerm string) (string, locales.Msg) {
	switch {
	case byBid != nil:
		y := pricing.FenToYuanString(*byBid)
		return fmt.Sprintf("a higher bid (¥%s per GPU-hour) took its GPUs", y), locales.M("bids.reason.higher_bid", y)
	case byTerm != string(pricing.OnDemand):
		return "a " + byTerm + " term rental took its GPUs", locales.M("bids.reason.term")
	}
	return "an on-demand rental took its GPUs", locales.M("bids.reason.on_demand")
}

// Holder is a live rental holding GPUs of a node, as victim choice sees
// it. Bid is nil for an on-demand or term rental, which never gives way.
type Holder struct {
	RentalID  int64
	Bid       *int64
	GPUs      int
	CreatedAt time.Time
}

// yields orders the holders that may give way, first to go first: the
// lowest bid, and within one bid the newest rental (first come, first
// served: the earlier bidder keeps its GPUs).
func yields(a, b Holder) int {
	return cmp.Or(cmp.Compare(*a.Bid, *b.Bid), b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.RentalID, a.RentalID))
}

// Victims chooses whom to interrupt so that a rent of need more GPUs
// than are free can run: interruptible holders whose bid is below bid
// (nil: an on-demand rent or a term, which outranks every bid), lowest
// first (yields), until they free need GPUs. ok is false, and nobody is
// chosen, when even all of them would not free enough: a rent that cannot
// run interrupts no one.
func Victims(holders []Holder, need int, bid *int64) (ids []int64, ok bool) {
	if need <= 0 {
		return nil, true
	}
	cands := make([]Holder, 0, len(holders))
	for _, h := range holders {
		if h.Bid != nil && (bid == nil || *h.Bid < *bid) {
			cands = append(cands, h)
		}
	}
	slices.SortFunc(cands, yields)
	freed := 0
	for _, h := range cands {
		ids = append(ids, h.RentalID)
		if freed += h.GPUs; freed >= need {
			return ids, true
		}
	}
	return nil, false
}

// Clearing is the interruptible price an offer shows: the floor while a
// GPU is free or no bid runs, else the lowest bid running — what a bid
// must exceed to take that bid's GPU (LeastToRun is the bid that runs
// now; on-demand rentals are never interrupted, so a bid may still wait).
func Clearing(floor int64, free int, running []int64) int64 {
	if free > 0 || len(running) == 0 {
		return floor
	}
	return max(floor, slices.Min(running))
}

// LeastToRun is the lowest bid that can run now on an offer with free
// GPUs free and clearing price clearing (Clearing): the clearing price
// while a GPU is free, else a fen above it (Victims takes only strictly
// lower bids). When every GPU runs on demand, nothing runs now at any
// bid; this is then only where a bid starts.
func LeastToRun(clearing int64, free int) int64 {
	if free > 0 {
		return clearing
	}
	return clearing + 1
}

// Waiting is an interrupted rental waiting to resume, as the resume pass
// sees it.
type Waiting struct {
	RentalID  int64
	Bid       int64
	CreatedAt time.Time
}

// ResumeOrder sorts waiting rentals into the order they get free GPUs:
// the highest bid first, and within a bid the earliest rental.
func ResumeOrder(ws []Waiting) {
	slices.SortFunc(ws, func(a, b Waiting) int {
		return cmp.Or(cmp.Compare(b.Bid, a.Bid), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.RentalID, b.RentalID))
	})
}
