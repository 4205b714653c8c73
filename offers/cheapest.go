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
	// Interruptible has the lowest expected interruptible price per
	// GPU-hour, as OnDemand but at its clearing price (InterruptiblePriceFen);
	// nil when no offer of the model takes bids.
	Interruptible *Listed
}

// InterruptiblePriceFen is what a bid at an interruptible offer's clearing
// price costs the viewer per GPU-hour before the off-peak discount: the
// clearing price, less the student discount for a student viewer (it
// applies to bids as to the on-demand price). 0 for an offer that takes no
// bids.
func InterruptiblePriceFen(o *Listed, student bool) int64 {
	if o.Interruptible == nil {
		return 0
	}
	if student {
		return pricing.Discounted(o.Interruptible.ClearingFen, o.StudentDiscountPct())
	}
	return o.Interruptible.ClearingFen
}

// CheapestOffers returns the cheapest live offers of the model from the
// index, on demand at the off-peak share (percent of used hours) and
// monthly, at student prices for a student viewer.
func (ix *Index) CheapestOffers(slug string, offpeakSharePct int, student bool) CheapestOffers {
	s := ix.snap.Load()
	g, ok := s.gpuIdx[slug]
	if !ok {
		return CheapestOffers{}
	}
	var out CheapestOffers
	// Ties go to the lower list price, then the lower id.
	before := func(a, b *Listed) bool {
		return a.PricePerGPUHourFen() < b.PricePerGPUHourFen() || a.PricePerGPUHourFen() == b.PricePerGPUHourFen() && a.ID < b.ID
	}
	var best, bestMonthly, bestBid int64
	for c := range s.cityParts {
		p := s.parts[int(g)*s.cityParts+c]
		if p == nil {
			continue
		}
		out.Listed += len(p.ents)
		for i := range p.ents {
			o := p.ents[i].o
			// Expected price × 10,000, exactly.
			offpeak := 10000 - int64(offpeakSharePct)*int64(o.OffpeakDiscountPct())
			blended := o.UnitPriceFen(pricing.OnDemand, student) * offpeak
			if out.OnDemand == nil || blended < best || blended == best && before(o, out.OnDemand) {
				out.OnDemand, best = o, blended
			}
			if o.Interruptible != nil {
				if bid := InterruptiblePriceFen(o, student) * offpeak; out.Interruptible == nil || bid < bestBid || bid == bestBid && before(o, out.Interruptible) {
					out.Interruptible, bestBid = o, bid
				}
			}
			if !o.sellsMonth() {
				continue
			}
			if p := o.UnitPriceFen(pricing.Month, student); out.Monthly == nil || p < bestMonthly || (p == bestMonthly && o.ID < out.Monthly.ID) {
				out.Monthly, bestMonthly = o, p
			}
		}
	}
	return out
}
