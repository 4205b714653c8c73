package pricing

import "math"

// CreditStep is one row of a tier's credit schedule: when a period's
// measured uptime is below BelowPct, the credit is CreditPct of what was
// billed in the period.
type CreditStep struct {
	BelowPct  float64
	CreditPct int
}

// Tier is an SLA tier: the monthly uptime promised, the surcharge on the
// price for it, the credits paid when the promise is missed and the
// downtime compensation multiple. This is the one table of tiers; the SLA
// page (/sla) and the credit computation (SLACredit) both read it.
type Tier struct {
	Name         string
	UptimePct    float64
	SurchargePct int
	// Credits, highest threshold first; the first threshold is the
	// promise. The lowest threshold the uptime is below decides the credit.
	Credits []CreditStep
	// CompensationMultiple: whenever a credit is due, it is at least the
	// downtime's would-be cost at the rental's rate times this.
	CompensationMultiple int
}

// Tiers are the SLA tiers, standard first.
var Tiers = []Tier{
	{Name: "standard", UptimePct: 99.5, SurchargePct: 0,
		Credits:              []CreditStep{{99.5, 10}, {99.0, 25}, {95.0, 100}},
		CompensationMultiple: 10},
	{Name: "premium", UptimePct: 99.9, SurchargePct: 15,
		Credits:              []CreditStep{{99.9, 10}, {99.5, 25}, {99.0, 50}, {95.0, 100}},
		CompensationMultiple: 20},
}

// TierByName returns a tier; "" is standard.
func TierByName(name string) (Tier, bool) {
	if name == "" {
		return Tiers[0], true
	}
	for _, t := range Tiers {
		if t.Name == name {
			return t, true
		}
	}
	return Tier{}, false
}

// SLACredit computes a period's SLA credit under the tier:
//
//   - uptime = (period − downtime) / period, in percent (100 for an empty
//     period); downtime is clamped to [0, period];
//   - creditPct is the CreditPct of the lowest threshold the uptime is
//     below (0 when the promise was kept). Thresholds are compared exactly,
//     in integer hundredths of a percent, so 99.5% uptime keeps a 99.5%
//     promise;
//   - creditFen is 0 when creditPct is 0 (downtime is never billed, and a
//     kept promise owes nothing more); otherwise the larger of
//     billed × creditPct / 100 (rounded half up to the fen) and
//     downtimeCost × CompensationMultiple, capped at billed: a credit never
//     exceeds what was paid for the period.
func SLACredit(tier Tier, periodSecs, downtimeSecs int64, billedFen, downtimeCostFen int64) (uptimePct float64, creditPct int, creditFen int64) {
	if periodSecs <= 0 {
		return 100, 0, 0
	}
	downtimeSecs = min(max(downtimeSecs, 0), periodSecs)
	up := periodSecs - downtimeSecs
	uptimePct = float64(up) / float64(periodSecs) * 100
	for _, s := range tier.Credits {
		// up/period < below/100 ⇔ up × 10000 < below×100 × period.
		below := int64(math.Round(s.BelowPct * 100))
		if up*10000 < below*periodSecs {
			creditPct = max(creditPct, s.CreditPct)
		}
	}
	if creditPct == 0 || billedFen <= 0 {
		return uptimePct, creditPct, 0
	}
	creditFen = (billedFen*int64(creditPct) + 50) / 100
	creditFen = max(creditFen, max(downtimeCostFen, 0)*int64(tier.CompensationMultiple))
	return uptimePct, creditPct, min(creditFen, billedFen)
}
