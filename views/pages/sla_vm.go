package pages

import (
	"math"
	"strconv"
	"strings"
	"time"

	"suanli/pricing"
	"suanli/views"
)

// SLAVM is the SLA terms page's view model: the one table of tiers and
// the measurement facts.
type SLAVM struct {
	Tiers []pricing.Tier
	Terms SLATerms
}

// SLATerms are the SLA's measurement facts the terms page states.
type SLATerms struct {
	HeartbeatEvery, SilentAfter, FreeIfFailsWithin time.Duration
	// FlapWindow: a failure again this soon after its incident closed
	// reopens it (the time between counts as down).
	FlapWindow time.Duration
}

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

// Uptime is a datacentre's uptime over 30 days.
type Uptime struct {
	Pct   float64
	Nodes int
}

// slaExample is the page's worked example, computed by the same function
// that computes credits: the first tier, ¥20 per GPU-hour on one GPU, a
// 30-day month with one 5-hour incident at peak time and ¥12,000 paid.
type slaExample struct {
	Tier                        pricing.Tier
	PeriodSecs, DowntimeSecs    int64
	BilledFen, DowntimeCostFen  int64
	UptimePct                   float64
	CreditPct                   int
	CreditFen                   int64
	PricePerGPUHourFen, HoursUp int64
}

func (vm SLAVM) example() slaExample {
	e := slaExample{Tier: vm.Tiers[0], PeriodSecs: 30 * 24 * 3600, DowntimeSecs: 5 * 3600, BilledFen: 1_200_000, PricePerGPUHourFen: 2000}
	e.DowntimeCostFen = e.PricePerGPUHourFen * 5 * int64(100+e.Tier.SurchargePct) / 100
	e.HoursUp = (e.PeriodSecs - e.DowntimeSecs) / 3600
	e.UptimePct, e.CreditPct, e.CreditFen = pricing.SLACredit(e.Tier, e.PeriodSecs, e.DowntimeSecs, e.BilledFen, e.DowntimeCostFen)
	return e
}

// tierName names a tier without its figures.
func tierName(vc views.Ctx, name string) string { return views.LabelOr(vc, "sla.tier."+name, name) }

// creditSteps writes a tier's credit steps on one line.
func creditSteps(vc views.Ctx, t pricing.Tier) string {
	parts := make([]string, 0, len(t.Credits))
	for _, s := range t.Credits {
		parts = append(parts, vc.T("sla.page.step", pctStr(s.BelowPct), s.CreditPct))
	}
	return strings.Join(parts, vc.T("sla.rental.sep"))
}

// pctStr writes a percentage figure as the table states it ("99.5%").
func pctStr(f float64) string { return views.Num(f) + "%" }

// uptimeStr writes a measured uptime to four decimals ("99.3056%"),
// without trailing zeros.
func uptimeStr(f float64) string {
	s := strconv.FormatFloat(f, 'f', 4, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
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
	up := vc.T("sla.rental.rule_uptime", secsStr(c.PeriodSecs), secsStr(c.DowntimeSecs), secsStr(c.PeriodSecs), uptimeStr(c.UptimePct))
	if c.CreditPct == 0 {
		return up + " ≥ " + pctStr(c.Tier.UptimePct) + vc.T("sla.rental.rule_kept")
	}
	below := c.Tier.UptimePct
	for _, s := range c.Tier.Credits {
		if s.CreditPct == c.CreditPct {
			below = s.BelowPct
		}
	}
	pctFen := (c.BilledFen*int64(c.CreditPct) + 50) / 100
	multFen := c.DowntimeCostFen * int64(c.Tier.CompensationMultiple)
	s := up + " < " + pctStr(below) + " → " + strconv.Itoa(c.CreditPct) + "%" + vc.T("sla.rental.rule_credit",
		c.CreditPct, views.Yuan(c.BilledFen), views.Yuan(pctFen), c.Tier.CompensationMultiple, views.Yuan(c.DowntimeCostFen), views.Yuan(multFen), views.Yuan(c.CreditFen))
	if c.CreditFen < max(pctFen, multFen) {
		s += vc.T("sla.rental.rule_capped", views.Yuan(c.BilledFen))
	}
	return s
}

// uptimeLine sums up a datacentre's 30-day uptime.
func uptimeLine(vc views.Ctx, u Uptime) string {
	if u.Nodes == 0 {
		return vc.T("reliability.none")
	}
	// Two decimals, rounded down: 99.996% is not 100%.
	pct := strconv.FormatFloat(math.Floor(u.Pct*100)/100, 'f', 2, 64) + "%"
	return vc.T("reliability.dc_line", pct, vc.N("reliability.nodes", u.Nodes))
}
