package pricing

import (
	"math"
	"testing"
)

// The credit for a period equals the table's rule, figures computed by hand.
func TestSLACredit(t *testing.T) {
	std, _ := TierByName("standard")
	prem, _ := TierByName("premium")
	const month = 30 * 24 * 3600 // a 30-day month: 2,592,000 s
	cases := []struct {
		name             string
		tier             Tier
		period, down     int64
		billed, downCost int64
		wantUptime       float64
		wantPct          int
		wantFen          int64
	}{
		// 5 h of 720 h: 715/720 = 99.30556% < 99.5 → 10%; 10% of ¥12,000 = ¥1,200 beats 10 × ¥100.
		{"standard 5h: percentage wins", std, month, 5 * 3600, 1_200_000, 10_000, 715.0 / 720 * 100, 10, 120_000},
		// 10% of ¥5,000 = ¥500 < 10 × ¥100 = ¥1,000.
		{"standard 5h: multiple wins", std, month, 5 * 3600, 500_000, 10_000, 715.0 / 720 * 100, 10, 100_000},
		// 10 × ¥100 = ¥1,000 > the ¥500 paid: capped at what was paid.
		{"standard 5h: capped at billed", std, month, 5 * 3600, 50_000, 10_000, 715.0 / 720 * 100, 10, 50_000},
		// 3.6 h of 720 h is exactly 99.5%: the promise is kept.
		{"standard exactly at the promise", std, month, 12_960, 1_200_000, 7_200, 99.5, 0, 0},
		{"standard one second below", std, month, 12_961, 1_200_000, 0, float64(month-12_961) / month * 100, 10, 120_000},
		// 7.2 h is exactly 99.0%: still the 10% step; a second more is 25%.
		{"standard exactly 99.0", std, month, 25_920, 1_000_000, 0, 99.0, 10, 100_000},
		{"standard below 99.0", std, month, 25_921, 1_000_000, 0, float64(month-25_921) / month * 100, 25, 250_000},
		// 36 h is exactly 95%: 25%; a second more: 100%.
		{"standard exactly 95.0", std, month, 129_600, 1_000_000, 0, 95.0, 25, 250_000},
		{"standard below 95.0", std, month, 129_601, 1_000_000, 0, float64(month-129_601) / month * 100, 100, 1_000_000},
		// Premium, 5 h: < 99.5 → 25% of ¥5,000 = ¥1,250 < 20 × ¥115 = ¥2,300.
		{"premium 5h: multiple wins", prem, month, 5 * 3600, 500_000, 11_500, 715.0 / 720 * 100, 25, 230_000},
		// Premium, 1 h: 719/720 = 99.86111% < 99.9 → 10%.
		{"premium 1h", prem, month, 3600, 2_000_000, 2_300, 719.0 / 720 * 100, 10, 200_000},
		// Premium, 0.72 h = 99.9% exactly: kept.
		{"premium exactly at the promise", prem, month, 2_592, 2_000_000, 1_656, 99.9, 0, 0},
		{"premium below 99.0", prem, month, 8 * 3600, 1_000_000, 0, 712.0 / 720 * 100, 50, 500_000},
		{"no downtime", std, month, 0, 1_000_000, 0, 100, 0, 0},
		{"empty period", std, 0, 0, 0, 0, 100, 0, 0},
		{"nothing billed: no credit", std, month, 5 * 3600, 0, 10_000, 715.0 / 720 * 100, 10, 0},
		// 10% of 1,005 fen = 100.5 → 101 (half up).
		{"rounding half up", std, month, 5 * 3600, 1_005, 0, 715.0 / 720 * 100, 10, 101},
		// Downtime beyond the period is clamped: 0% uptime, everything back.
		{"downtime clamped", std, 3600, 7200, 2_000, 4_000, 0, 100, 2_000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up, pct, fen := SLACredit(c.tier, c.period, c.down, c.billed, c.downCost)
			if math.Abs(up-c.wantUptime) > 1e-9 || pct != c.wantPct || fen != c.wantFen {
				t.Errorf("SLACredit = %.6f%%, %d%%, %d fen; want %.6f%%, %d%%, %d fen", up, pct, fen, c.wantUptime, c.wantPct, c.wantFen)
			}
		})
	}
}

// The table is well formed: each tier's first threshold is its promise,
// thresholds fall and credits rise.
func TestTiersTable(t *testing.T) {
	for _, tier := range Tiers {
		if len(tier.Credits) == 0 || tier.Credits[0].BelowPct != tier.UptimePct {
			t.Errorf("%s: the first credit step must be the promise %.2f", tier.Name, tier.UptimePct)
		}
		for i := 1; i < len(tier.Credits); i++ {
			if tier.Credits[i].BelowPct >= tier.Credits[i-1].BelowPct || tier.Credits[i].CreditPct <= tier.Credits[i-1].CreditPct {
				t.Errorf("%s: step %d does not fall in threshold and rise in credit", tier.Name, i)
			}
		}
		if tier.CompensationMultiple < 1 {
			t.Errorf("%s: compensation multiple %d", tier.Name, tier.CompensationMultiple)
		}
	}
}
