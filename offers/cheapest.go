package offers

import "suanli/pricing"

// CheapestOffers are the cheapest listed offers of one GPU model at the
// prices the viewer pays (student prices for a lab member).
type CheapestOffers struct {
	// Listed is how many listed offers the model has.
	Listed int
	// OnDemand has the lowest expected price per GPU-hour for the off-peak
	// share asked: price × (1 − share × its off-peak discount); then the
	// lower list price, then the lower id. Nil when the model has no offer.
	OnDemand *Listed
	// Monthly has the lowest monthly price per GPU (then the lower id); nil
	// when no offer of the model has a monthly price.
	Monthly *Listed
}

// CheapestOffers returns the cheapest live offers of the model from the
// index, on demand at the off-peak share (percent of used hours) and
// monthly, at student prices for a student viewer.
func (ix *Index) CheapestOffers(slug string, offpeakSharePct int, student bool) CheapestOffers {
	list := ix.snap.Load().sorted[listView][SortPrice][slug] // by price, then id
	out := CheapestOffers{Listed: len(list)}
	var best, bestMonthly int64
	for i := range list {
		o := list[i].o
		// Expected price × 10,000, exactly.
		blended := UnitPriceFen(&o.Offer, pricing.OnDemand, student) * (10000 - int64(offpeakSharePct)*int64(o.OffpeakDiscountPct))
		if out.OnDemand == nil || blended < best {
			out.OnDemand, best = o, blended
		}
		if o.MonthlyPricePerGPUFen == nil {
			continue
		}
		if p := UnitPriceFen(&o.Offer, pricing.Month, student); out.Monthly == nil || p < bestMonthly || (p == bestMonthly && o.ID < out.Monthly.ID) {
			out.Monthly, bestMonthly = o, p
		}
	}
	return out
}
