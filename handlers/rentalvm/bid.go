package rentalvm

import (
	"strings"
	"time"

	"suanli/apperr"
	"suanli/bids"
	"suanli/models"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/views"
	"suanli/views/bidviews"
)

// graceSecs is bids.Grace as the pages state it.
var graceSecs = int(bids.Grace / time.Second)

// RentBid is the rent form's interruptible choice for an offer (nil when
// it takes no bids), with the clearing price the offer index shows for
// it (the floor, or the lowest bid running when no GPU is free; the floor
// when the index does not list it). A form without a bid starts with the
// lowest bid that runs now.
func RentBid(o *models.Offer, ix *offers.Index, f views.Form) *bidviews.RentBid {
	floor := o.InterruptibleFloorPerGPUHourFen
	if floor == nil {
		return nil
	}
	b := &bidviews.RentBid{FloorFen: *floor, OnDemandFen: o.PricePerGPUHourFen, ClearingFen: *floor, GraceSecs: graceSecs}
	least := *floor
	if l, err := ix.Offer(o.ID); err == nil && l.Interruptible != nil {
		b.ClearingFen = max(l.Interruptible.ClearingFen, *floor)
		least = bids.LeastToRun(b.ClearingFen, l.AvailableGPUs())
	}
	if strings.TrimSpace(f.Get(bidviews.Field)) == "" && f.Values != nil {
		f.Values[bidviews.Field] = bidviews.YuanValue(min(least, b.OnDemandFen))
	}
	return b
}

// ReadBid is the rent form's bid in fen when its term is interruptible
// (nil otherwise). A bid that is no amount of yuan is put beside its
// field, in vc's language, and nil returned.
func ReadBid(f views.Form, vc views.Ctx) *int64 {
	if f.Get("term") != bidviews.Term {
		return nil
	}
	fen, ok := pricing.ParseYuan(strings.TrimSpace(f.Get(bidviews.Field)))
	if !ok {
		f.Errors[bidviews.Field] = vc.T("bidpages.err_bid_yuan")
		return nil
	}
	return &fen
}

// Quote prices the rent form's choice: as offers.Quote does, but for the
// interruptible term (bid in yuan) one hour on demand at the bid, which
// must be one the offer takes (bids.Check). It returns the offer as
// priced (at the bid), for what starting needs.
func Quote(o models.Offer, in offers.QuoteInput, bid string, student bool, now time.Time) (models.Offer, pricing.Breakdown, error) {
	if in.Term == bidviews.Term {
		fen, ok := pricing.ParseYuan(strings.TrimSpace(bid))
		if !ok {
			return o, pricing.Breakdown{}, apperr.Field(bidviews.Field, "bidpages.err_bid_yuan")
		}
		if err := bids.Check(o.InterruptibleFloorPerGPUHourFen, o.PricePerGPUHourFen, fen); err != nil {
			return o, pricing.Breakdown{}, err
		}
		o.PricePerGPUHourFen, in.Term = fen, string(pricing.OnDemand)
	}
	q, err := offers.Quote(o, in, student, now)
	return o, q, err
}

// Bid maps an interruptible rental's bid and last interruption to its
// page, the reason in vc's language (nil when it is not interruptible).
// The page adds whether the viewer may raise it.
func Bid(vc views.Ctx, d *rentals.RentalDetail) *bidviews.RentalBid {
	r := &d.Rental
	if !r.Interruptible() {
		return nil
	}
	b := &bidviews.RentalBid{RentalID: r.ID, BidFen: *r.BidPerGPUHourFen, OnDemandFen: d.Offer.PricePerGPUHourFen, GraceSecs: graceSecs,
		Interrupted: r.Status == models.RentalInterrupted, InterruptedAt: r.InterruptedAt, GraceUntil: r.GraceUntil,
		Reason: vc.Msg(r.InterruptMsg, r.InterruptReason), Value: bidviews.YuanValue(*r.BidPerGPUHourFen)}
	if f := d.Offer.InterruptibleFloorPerGPUHourFen; f != nil {
		b.FloorFen = *f
	}
	return b
}

// Waiting moves the interrupted rentals of past (settled and interrupted
// rentals, as the store lists them) to live: they wait to resume, so the
// console lists them with the live ones, with their Stop.
func Waiting(live, past []models.Rental) (_, _ []models.Rental) {
	rest := past[:0:0]
	for _, r := range past {
		if r.Status == models.RentalInterrupted {
			live = append(live, r)
		} else {
			rest = append(rest, r)
		}
	}
	return live, rest
}
