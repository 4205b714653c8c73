package billing

import (
	"time"

	"gorm.io/gorm"

	"suanli/models"
	"suanli/pricing"
)

// The spending limits an alert can be about.
const (
	LimitBudget    = "budget"     // a lab's monthly budget
	LimitMemberCap = "member_cap" // a lab's cap per member and month
	LimitHourly    = "hourly_cap" // any organisation's cap per rolling hour
)

// LimitUse is how much of one spending limit is used now, counted as
// CheckSpend counts it.
type LimitUse struct {
	Kind              string
	LimitFen, UsedFen int64
}

// MonthStart is the start of the calendar month (Asia/Shanghai) that the
// monthly budget and the cap per member count from.
func MonthStart(now time.Time) time.Time {
	l := now.In(pricing.Shanghai)
	return time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, pricing.Shanghai).UTC()
}

// OrgLimitUses returns the use of the organisation-wide limits it has (the
// monthly budget, the cap per hour), read in tx. The hourly cap's use is
// what CheckSpend holds it to: the past hour's charges or the coming hour
// at the live rentals' rates, whichever is more.
func OrgLimitUses(tx *gorm.DB, org *models.Org, now time.Time) ([]LimitUse, error) {
	var out []LimitUse
	for _, l := range limitsOf(org, 0, now) {
		var kind string
		switch l.key {
		case "err.limit_budget":
			kind = LimitBudget
		case "err.limit_hourly":
			kind = LimitHourly
		default:
			continue // per member: each member's charges since MonthStart
		}
		used, err := spent(tx, org.ID, 0, l.since)
		if err != nil {
			return nil, err
		}
		if kind == LimitHourly {
			coming, err := liveHourFen(tx, org.ID, 0, now)
			if err != nil {
				return nil, err
			}
			used = max(used, coming)
		}
		out = append(out, LimitUse{Kind: kind, LimitFen: l.limit, UsedFen: used})
	}
	return out, nil
}
