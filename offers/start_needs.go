package offers

import (
	"fmt"
	"time"

	"suanli/apperr"
	"suanli/models"
	"suanli/pricing"
)

// StudentPrices reports whether renting from the organisation pays
// student prices: it is an approved lab and the renter a confirmed member.
func StudentPrices(org *models.Org, m *models.Membership) bool {
	return org.Kind == models.OrgLab && org.Status == models.OrgApproved && m != nil && m.ConfirmedAt != nil
}

// StartNeeds is the balance a rental needs to start: the next hour at its
// rate on demand, the whole term's price for a week or month.
func StartNeeds(o models.Offer, gpus int, term pricing.Term, tier pricing.Tier, student bool, now time.Time) (int64, error) {
	switch term {
	case pricing.OnDemand:
		sp := 0
		if student {
			sp = o.StudentDiscountPct
		}
		return pricing.HourFen(pricing.Rate{PricePerGPUHourFen: o.PricePerGPUHourFen, GPUs: gpus, OffpeakPct: o.OffpeakDiscountPct,
			StudentPct: sp, SLASurchargePct: tier.SurchargePct}, now), nil
	case pricing.Week, pricing.Month:
		b, err := Quote(o, QuoteInput{GPUs: fmt.Sprint(gpus), Term: string(term), SLA: tier.Name}, student, now)
		return b.GPUFen, err // storage is metered, not paid up front
	}
	return 0, apperr.Field("term", "err.quote_term")
}
