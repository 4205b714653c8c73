package pages

// This file holds the helpers of interruptible renting (竞价实例) on the
// offer list and the offer page.

import (
	"time"

	"suanli/bids"
	"suanli/routenames"
	"suanli/views"
)

// sortInterruptible is the offer list's order by clearing price
// (offers.SortInterruptible; views do not import the use case).
const sortInterruptible = "interruptible_price"

// bidTerm is the rent form's term of a rental on a bid.
const bidTerm = "interruptible"

// graceSecs is how long an interrupted rental's container has before it
// ends, as the offer page states it (bids.Grace).
func graceSecs() int { return int(bids.Grace / time.Second) }

// bidRentLink is the rent form of the offer with the interruptible term
// chosen.
func bidRentLink(vc views.Ctx, vm OfferVM) string {
	return vc.URL(routenames.RentalsNew, views.I64(vm.Offer.ID)) + "?term=" + bidTerm
}
