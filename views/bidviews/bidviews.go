// Package bidviews renders the renter's side of interruptible rentals
// (竞价实例): the bid on the rent form, the bid section of a rental's
// page with its raise form, and the interruption a rental's page and the
// console show. Its components take plain view models that package
// handlers/rentalvm builds; the rules they state are those of package
// bids (the grace comes in the model, from bids.Grace).
package bidviews

import (
	"strconv"
	"time"

	"suanli/bids"
	"suanli/views"
)

// Term is the rent form's (and the API's) term of a rental on a bid.
const Term = "interruptible"

// Field is the bid's field on the rent form and the raise form: yuan per
// GPU-hour (the API's bid_per_gpu_hour_fen is in fen).
const Field = "bid"

// RentBid is the rent form's interruptible choice, for an offer that
// takes bids.
type RentBid struct {
	// FloorFen is the lowest bid the offer takes, OnDemandFen its
	// on-demand price (the highest bid), ClearingFen what a bid must reach
	// to run now (the lowest bid running, or the floor), all per GPU-hour
	// before discounts.
	FloorFen, OnDemandFen, ClearingFen int64
	// GraceSecs is how long an interrupted container has to finish.
	GraceSecs int
}

// RentalBid is an interruptible rental's bid section, and its
// interruption where it has one.
type RentalBid struct {
	RentalID int64
	// BidFen is its bid now; FloorFen and OnDemandFen bound a new one.
	BidFen, FloorFen, OnDemandFen int64
	GraceSecs                     int
	// Interrupted: it is interrupted now (holds no GPUs, waits to
	// resume). InterruptedAt is its last interruption (kept after it
	// resumed; nil if never), GraceUntil when its container was stopped
	// for good, Reason why, in the reader's language.
	Interrupted   bool
	InterruptedAt *time.Time
	GraceUntil    *time.Time
	Reason        string
	// CanRaise: the viewer may raise the bid now (its renter or an admin
	// of the organisation, while it is live or interrupted).
	CanRaise bool
	// Value is the raise form's value (yuan); Error the refused raise's
	// message, shown beside it.
	Value, Error string
}

// formErr is the rent form's message about the bid: the page's field
// (a bid that is no amount) or the API's (one the offer does not take,
// bids.Field), which the rent form shows in the same place.
func formErr(f views.Form) string { return views.Or(f.Err(Field), f.Err(bids.Field)) }

// perGPUHour writes a price per GPU-hour ("¥2.50/卡·时").
func perGPUHour(vc views.Ctx, fen int64) string { return views.Yuan(fen) + vc.T("unit.per_gpu_hour") }

// Rules states, in one paragraph, when a rental on a bid is interrupted
// and what happens then.
func Rules(vc views.Ctx, graceSecs int) string { return vc.T("bidpages.rules", graceSecs) }

// YuanValue writes fen as a form's yuan value ("2.5" → "2.50").
func YuanValue(fen int64) string {
	return strconv.FormatInt(fen/100, 10) + "." + strconv.FormatInt(100+fen%100, 10)[1:]
}

// shTime is an optional time on a page ("—" for none).
func shTime(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return views.ShTime(*t)
}
