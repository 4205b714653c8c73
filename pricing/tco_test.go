package pricing

import (
	"math/big"
	"slices"
	"testing"
)

func tcoFen(n int64) *int64 { return &n }

// a100Server is one 8×A100 80GB server against on-demand ¥27.80/GPU·h
// (15% off-peak) and a monthly term of ¥17,200/GPU.
func a100Server(months int) TCOInput {
	return TCOInput{
		GPUs: 8, Months: months,
		GPUPriceFen: 6_500_000, ServerShareFen: 1_000_000, DepreciationMonths: 36,
		TDPW: 400, DrawPct: 100, HostWPerGPU: 400, PUECenti: 130, ElectricityFenPerKWh: 65,
		SpaceFenPerGPUMonth: 70_000, OpsFenPerGPUMonth: 100_000,
		UtilisationPct: 60, OffpeakSharePct: 30,
		OnDemand:         &OnDemandPrice{PerGPUHourFen: 2780, OffpeakDiscountPct: 15},
		MonthlyPerGPUFen: tcoFen(1_720_000),
	}
}

func mustTCO(t *testing.T, in TCOInput) TCOResult {
	t.Helper()
	r, err := TCO(in)
	if err != nil {
		t.Fatalf("TCO(%+v): %v", in, err)
	}
	return r
}

func tcoEq(t *testing.T, name string, got, want int64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d fen, want %d", name, got, want)
	}
}

// The figures of one comparison, computed by hand.
func TestTCOHandComputed(t *testing.T) {
	r := mustTCO(t, a100Server(24))

	// capex = 8 × (¥65,000 + ¥10,000) = 8 × 7,500,000 fen = 60,000,000 fen (¥600,000.00)
	tcoEq(t, "capex", r.CapexFen, 60_000_000)

	// one GPU: 400 W × 100% + 400 W host = 800 W = 80,000 centiwatts
	// energy = 8 × 800 W × 1.30 × 730 h = 6,073,600 Wh = 6,073.6 kWh a month
	// power  = 6,073.6 kWh × 65 fen = 394,784 fen (¥3,947.84)
	tcoEq(t, "watts", r.GPUWattsCenti, 80_000)
	if r.EnergyKWhPerMonth.Cmp(big.NewRat(60_736, 10)) != 0 {
		t.Errorf("energy = %s kWh, want 6073.6", r.EnergyKWhPerMonth.FloatString(3))
	}
	tcoEq(t, "power", r.PowerFenPerMonth, 394_784)
	// space = 8 × 70,000 = 560,000; ops = 8 × 100,000 = 800,000
	tcoEq(t, "space", r.SpaceFenPerMonth, 560_000)
	tcoEq(t, "ops", r.OpsFenPerMonth, 800_000)
	// running = 394,784 + 560,000 + 800,000 = 1,754,784 fen a month
	// a year  = 12 × 1,754,784 = 21,057,408 fen (¥210,574.08: over ¥200,000)
	tcoEq(t, "running", r.RunningFenPerMonth, 1_754_784)
	tcoEq(t, "running/year", r.RunningFenPerYear, 21_057_408)

	// depreciation = 60,000,000 / 36 = 1,666,666.67 → 1,666,667 fen a month
	// over 24 months: 60,000,000 × 24/36 = 40,000,000; book value 20,000,000
	tcoEq(t, "depreciation/month", r.DepreciationFenPerMonth, 1_666_667)
	tcoEq(t, "depreciated", r.DepreciatedFen, 40_000_000)
	tcoEq(t, "book value", r.BookValueFen, 20_000_000)

	// buy, cash  = 60,000,000 + 24 × 1,754,784 = 60,000,000 + 42,114,816 = 102,114,816
	// buy, owned = 40,000,000 + 42,114,816 = 82,114,816
	tcoEq(t, "buy cash", r.BuyCashFen, 102_114_816)
	tcoEq(t, "buy depreciated", r.BuyDepreciatedFen, 82_114_816)

	// on demand: 8 × 730 h × 60% = 3,504 GPU-hours a month
	// blended price = 2,780 × (1 − 30% × 15%) = 2,780 × 0.955 = 2,654.9 fen
	// a month = 3,504 × 2,654.9 = 9,302,769.6 → 9,302,770 fen
	// 24 months = 223,266,470.4 → 223,266,470 fen (rounded once, not 24 × 9,302,770)
	if r.OnDemandGPUHoursPerMonth.Cmp(big.NewRat(3504, 1)) != 0 || r.OnDemandBlendedFen.Cmp(big.NewRat(26_549, 10)) != 0 {
		t.Errorf("hours %s, blended %s", r.OnDemandGPUHoursPerMonth.RatString(), r.OnDemandBlendedFen.RatString())
	}
	tcoEq(t, "on-demand/month", r.OnDemandFenPerMonth, 9_302_770)
	tcoEq(t, "on-demand", r.OnDemandFen, 223_266_470)

	// monthly term = 8 × 1,720,000 = 13,760,000 a month; × 24 = 330,240,000
	tcoEq(t, "monthly/month", r.MonthlyFenPerMonth, 13_760_000)
	tcoEq(t, "monthly", r.MonthlyFen, 330_240_000)

	// break-even on demand: 60,000,000 / (9,302,769.6 − 1,754,784) = 60,000,000 / 7,547,985.6 = 7.95 → month 8
	//   month 7: rent 65,119,387.2 < buy 60,000,000 + 7 × 1,754,784 = 72,283,488
	//   month 8: rent 74,422,156.8 ≥ buy 74,038,272
	// break-even monthly: 60,000,000 / (13,760,000 − 1,754,784) = 60,000,000 / 12,005,216 = 4.998 → month 5
	//   month 5: rent 68,800,000 ≥ buy 68,773,920
	if r.BreakEvenOnDemand != 8 || r.BreakEvenMonthly != 5 {
		t.Errorf("break-even on demand %d, monthly %d; want 8 and 5", r.BreakEvenOnDemand, r.BreakEvenMonthly)
	}
	tcoEq(t, "cumulative buy 8", r.CumulativeBuy[8], 74_038_272)
	tcoEq(t, "cumulative on demand 7", r.CumulativeOnDemand[7], 65_119_387)
	tcoEq(t, "cumulative on demand 8", r.CumulativeOnDemand[8], 74_422_157)
	tcoEq(t, "cumulative monthly 5", r.CumulativeMonthly[5], 68_800_000)
	if len(r.CumulativeBuy) != 25 || r.CumulativeBuy[0] != r.CapexFen || r.CumulativeOnDemand[0] != 0 || r.CumulativeBuy[24] != r.BuyCashFen ||
		r.CumulativeOnDemand[24] != r.OnDemandFen || r.CumulativeMonthly[24] != r.MonthlyFen {
		t.Errorf("series ends: buy %d…%d, on demand %d…%d", r.CumulativeBuy[0], r.CumulativeBuy[len(r.CumulativeBuy)-1],
			r.CumulativeOnDemand[0], r.CumulativeOnDemand[len(r.CumulativeOnDemand)-1])
	}
}

func TestTCOEdges(t *testing.T) {
	t.Run("one month", func(t *testing.T) {
		r := mustTCO(t, a100Server(1))
		// cash = 60,000,000 + 1,754,784; owned = 60,000,000 / 36 + 1,754,784 = 1,666,666.67 + 1,754,784 = 3,421,450.67
		tcoEq(t, "buy cash", r.BuyCashFen, 61_754_784)
		tcoEq(t, "buy depreciated", r.BuyDepreciatedFen, 3_421_451)
		tcoEq(t, "depreciated", r.DepreciatedFen, 1_666_667)
		tcoEq(t, "book value", r.BookValueFen, 58_333_333)
		tcoEq(t, "on demand", r.OnDemandFen, 9_302_770) // 9,302,769.6
		if len(r.CumulativeBuy) != 2 || r.BreakEvenOnDemand != 8 {
			t.Errorf("series %v, break-even %d (beyond the horizon, still reported)", r.CumulativeBuy, r.BreakEvenOnDemand)
		}
	})
	t.Run("rounded once", func(t *testing.T) {
		// 3 × 9,302,769.6 = 27,908,308.8 → 27,908,309, not 3 × 9,302,770 = 27,908,310
		tcoEq(t, "on demand", mustTCO(t, a100Server(3)).OnDemandFen, 27_908_309)
	})
	t.Run("past the depreciation period", func(t *testing.T) {
		r := mustTCO(t, a100Server(48))
		// written off entirely: 60,000,000 + 48 × 1,754,784 = 60,000,000 + 84,229,632
		tcoEq(t, "depreciated", r.DepreciatedFen, 60_000_000)
		tcoEq(t, "book value", r.BookValueFen, 0)
		tcoEq(t, "buy depreciated", r.BuyDepreciatedFen, 144_229_632)
		tcoEq(t, "buy cash", r.BuyCashFen, 144_229_632)
	})
	t.Run("utilisation 0", func(t *testing.T) {
		in := a100Server(12)
		in.UtilisationPct = 0
		r := mustTCO(t, in)
		tcoEq(t, "on demand", r.OnDemandFen, 0)
		if r.BreakEvenOnDemand != 0 || !r.HasOnDemand || slices.Max(r.CumulativeOnDemand) != 0 {
			t.Errorf("unused GPUs cost nothing to rent and never pay back buying: break-even %d", r.BreakEvenOnDemand)
		}
	})
	t.Run("utilisation 100, no off-peak", func(t *testing.T) {
		in := a100Server(12)
		in.UtilisationPct, in.OffpeakSharePct = 100, 0
		r := mustTCO(t, in)
		// 8 × 730 h × 2,780 fen = 16,235,200 a month; × 12 = 194,822,400
		tcoEq(t, "on demand/month", r.OnDemandFenPerMonth, 16_235_200)
		tcoEq(t, "on demand", r.OnDemandFen, 194_822_400)
		// 60,000,000 / (16,235,200 − 1,754,784) = 4.14 → month 5
		if r.BreakEvenOnDemand != 5 {
			t.Errorf("break-even %d, want 5", r.BreakEvenOnDemand)
		}
	})
	t.Run("all off-peak at 100% off", func(t *testing.T) {
		in := a100Server(12)
		in.OffpeakSharePct, in.OnDemand.OffpeakDiscountPct = 100, 100
		tcoEq(t, "on demand", mustTCO(t, in).OnDemandFen, 0)
	})
	t.Run("no monthly offer", func(t *testing.T) {
		in := a100Server(12)
		in.MonthlyPerGPUFen = nil
		r := mustTCO(t, in)
		if r.HasMonthly || r.MonthlyFen != 0 || r.CumulativeMonthly != nil || r.BreakEvenMonthly != 0 || !r.HasOnDemand {
			t.Errorf("monthly side present without a price: %+v", r)
		}
	})
	t.Run("no offer at all", func(t *testing.T) {
		in := a100Server(12)
		in.MonthlyPerGPUFen, in.OnDemand = nil, nil
		r := mustTCO(t, in)
		if r.HasOnDemand || r.HasMonthly || r.CumulativeOnDemand != nil || r.BuyCashFen != 60_000_000+12*1_754_784 {
			t.Errorf("buy side without offers: %+v", r)
		}
	})
	t.Run("renting cheaper than running", func(t *testing.T) {
		in := a100Server(12)
		in.MonthlyPerGPUFen = tcoFen(100_000) // 8 × 100,000 = 800,000 < running 1,754,784
		if r := mustTCO(t, in); r.BreakEvenMonthly != 0 {
			t.Errorf("break-even %d, want never", r.BreakEvenMonthly)
		}
	})
	t.Run("free hardware", func(t *testing.T) {
		in := a100Server(12)
		in.GPUPriceFen, in.ServerShareFen = 0, 0
		if r := mustTCO(t, in); r.BreakEvenOnDemand != 1 || r.CapexFen != 0 {
			t.Errorf("break-even %d, want the first month", r.BreakEvenOnDemand)
		}
	})
	t.Run("fractional watts", func(t *testing.T) {
		in := a100Server(1)
		in.GPUs, in.TDPW, in.DrawPct, in.HostWPerGPU, in.PUECenti, in.ElectricityFenPerKWh = 1, 450, 33, 0, 100, 100
		// 450 W × 33% = 148.5 W; × 730 h = 108,405 Wh = 108.405 kWh; × 100 fen = 10,840.5 → 10,841 fen
		r := mustTCO(t, in)
		tcoEq(t, "watts", r.GPUWattsCenti, 14_850)
		tcoEq(t, "power", r.PowerFenPerMonth, 10_841)
	})
}

func TestTCORejectsImpossibleInput(t *testing.T) {
	for name, change := range map[string]func(*TCOInput){
		"no GPUs":             func(in *TCOInput) { in.GPUs = 0 },
		"no months":           func(in *TCOInput) { in.Months = 0 },
		"too many months":     func(in *TCOInput) { in.Months = MaxTCOMonths + 1 },
		"no depreciation":     func(in *TCOInput) { in.DepreciationMonths = 0 },
		"negative price":      func(in *TCOInput) { in.GPUPriceFen = -1 },
		"utilisation 101":     func(in *TCOInput) { in.UtilisationPct = 101 },
		"negative rent":       func(in *TCOInput) { in.OnDemand.PerGPUHourFen = -1 },
		"discount over 100":   func(in *TCOInput) { in.OnDemand.OffpeakDiscountPct = 101 },
		"negative monthly":    func(in *TCOInput) { in.MonthlyPerGPUFen = tcoFen(-5) },
		"negative host power": func(in *TCOInput) { in.HostWPerGPU = -1 },
	} {
		in := a100Server(12)
		change(&in)
		if _, err := TCO(in); err != ErrTCOInput {
			t.Errorf("%s: err %v", name, err)
		}
	}
}
