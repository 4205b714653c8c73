package pages

import (
	"math"
	"strconv"
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

// uptimeLine sums up a datacentre's 30-day uptime.
func uptimeLine(vc views.Ctx, u Uptime) string {
	if u.Nodes == 0 {
		return vc.T("reliability.none")
	}
	// Two decimals, rounded down: 99.996% is not 100%.
	pct := strconv.FormatFloat(math.Floor(u.Pct*100)/100, 'f', 2, 64) + "%"
	return vc.T("reliability.dc_line", pct, vc.N("reliability.nodes", u.Nodes))
}
