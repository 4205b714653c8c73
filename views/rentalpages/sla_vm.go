package rentalpages

import (
	"strconv"
	"strings"
	"time"

	"suanli/pricing"
	"suanli/views"
)

// RentalSLA is the rental page's SLA section: the tier and each month's
// computation.
type RentalSLA struct {
	Tier pricing.Tier
	// Free is set for a free rental: no credit on top.
	Free bool
	// Periods are the months the rental ran in, oldest first.
	Periods []SLAPeriod
}

// SLAPeriod is one month's SLA computation, recorded or as it stands.
type SLAPeriod struct {
	Period string
	// From and To bound the rental's running span in the period.
	From, To time.Time
	Tier     pricing.Tier
	// PeriodSecs is the span's length; DowntimeSecs the downtime in it.
	PeriodSecs, DowntimeSecs int64
	UptimePct                float64
	CreditPct                int
	BilledFen                int64
	DowntimeCostFen          int64
	CreditFen                int64
	// Final is set for the month the rental ended in.
	Final bool
	// Recorded is set when the computation is recorded (settled);
	// Credited when a ledger transaction paid its credit.
	Recorded, Credited bool
	// Open is set for a month still running for a live rental.
	Open bool
}

// creditSteps writes a tier's credit steps on one line.
func creditSteps(vc views.Ctx, t pricing.Tier) string {
	parts := make([]string, 0, len(t.Credits))
	for _, s := range t.Credits {
		parts = append(parts, vc.T("sla.page.step", views.PctFig(s.BelowPct), s.CreditPct))
	}
	return strings.Join(parts, vc.T("sla.rental.sep"))
}

// secsStr writes seconds as the SLA page reads them: seconds as h:mm:ss.
func secsStr(secs int64) string { return views.Clock(secs) }

// slaPeriodLabel names a computation's period: the month, and whether it
// is the rental's final one.
func slaPeriodLabel(vc views.Ctx, c SLAPeriod) string {
	t, err := time.ParseInLocation("2006-01", c.Period, pricing.Shanghai)
	s := c.Period
	if err == nil {
		s = vc.T("sla.rental.month", t.Year(), int(t.Month()))
	}
	if c.Final {
		s += " · " + vc.T("sla.rental.final")
	}
	return s
}

// slaStatus says where a computation stands: credited, nothing owed,
// waiting for the next pass, or the current month so far.
func slaStatus(vc views.Ctx, c SLAPeriod) string {
	switch {
	case c.Recorded && c.Credited:
		return vc.T("sla.rental.status.credited")
	case c.Recorded:
		return vc.T("sla.rental.status.none")
	case c.Open:
		return vc.T("sla.rental.status.open")
	}
	return vc.T("sla.rental.status.pending")
}

// slaRule writes a computation the way the rule reads: the uptime against
// the promise, the step it falls in and the credit it gives.
func slaRule(vc views.Ctx, c SLAPeriod) string {
	if c.PeriodSecs == 0 {
		return vc.T("sla.rental.rule_empty")
	}
	up := vc.T("sla.rental.rule_uptime", secsStr(c.PeriodSecs), secsStr(c.DowntimeSecs), secsStr(c.PeriodSecs), views.UptimePct(c.UptimePct))
	if c.CreditPct == 0 {
		return up + " ≥ " + views.PctFig(c.Tier.UptimePct) + vc.T("sla.rental.rule_kept")
	}
	below := c.Tier.UptimePct
	for _, s := range c.Tier.Credits {
		if s.CreditPct == c.CreditPct {
			below = s.BelowPct
		}
	}
	pctFen := (c.BilledFen*int64(c.CreditPct) + 50) / 100
	multFen := c.DowntimeCostFen * int64(c.Tier.CompensationMultiple)
	s := up + " < " + views.PctFig(below) + " → " + strconv.Itoa(c.CreditPct) + "%" + vc.T("sla.rental.rule_credit",
		c.CreditPct, views.Yuan(c.BilledFen), views.Yuan(pctFen), c.Tier.CompensationMultiple, views.Yuan(c.DowntimeCostFen), views.Yuan(multFen), views.Yuan(c.CreditFen))
	if c.CreditFen < max(pctFen, multFen) {
		s += vc.T("sla.rental.rule_capped", views.Yuan(c.BilledFen))
	}
	return s
}
