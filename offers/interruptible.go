package offers

// This file owns what the offer list shows of interruptible renting
// (竞价实例): an offer's floor and its clearing price. The rules are
// package bids'; the bids come from models/supply.

import (
	"context"
	"math"

	"suanli/bids"
	"suanli/models"
	"suanli/models/supply"
)

// SortInterruptible orders by the clearing price of interruptible
// renting, lowest first; offers that take no bids follow every offer that
// does, each group then by the viewer's on-demand price and id as the
// other orders break ties.
const SortInterruptible = "interruptible_price"

// Interruptible is what an interruptible offer shows of its bids, per
// GPU-hour in fen before the off-peak and student discounts (which apply
// to a bid as to the on-demand price): the provider's floor, and the
// clearing price, what a bid must reach to run now (bids.Clearing: the
// floor while a GPU is free or no bid runs, else the lowest bid running).
type Interruptible struct {
	FloorFen    int64 `json:"floor_fen"`
	ClearingFen int64 `json:"clearing_fen"`
}

// interruptibleOf is an offer's Interruptible given the bids of its live
// interruptible rentals; nil for an offer that takes no bids.
func interruptibleOf(o *models.Offer, running []int64) *Interruptible {
	f := o.InterruptibleFloorPerGPUHourFen
	if f == nil {
		return nil
	}
	return &Interruptible{FloorFen: *f, ClearingFen: bids.Clearing(*f, o.AvailableGPUs, running)}
}

// InterruptibleOf reads an offer's Interruptible now (nil when it takes no
// bids): the offer page and the single-offer API, which read the offer
// from the database rather than from the index.
func InterruptibleOf(ctx context.Context, db *models.DB, o *models.Offer) (*Interruptible, error) {
	if o.InterruptibleFloorPerGPUHourFen == nil {
		return nil, nil
	}
	running, err := supply.LiveBidsOfOffer(ctx, db, o.ID)
	if err != nil {
		return nil, err
	}
	return interruptibleOf(o, running), nil
}

// bidKey is the offer's key in the interruptible order: its clearing
// price, or the largest value for an offer that takes no bids.
func bidKey(i *Interruptible) int64 {
	if i == nil {
		return math.MaxInt64
	}
	return i.ClearingFen
}
