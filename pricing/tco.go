package pricing

import (
	"errors"
	"math/big"
)

// HoursPerMonth is the length of every TCO month: the average month,
// 8,760 h / 12. (The demo market prices a monthly term against it too.)
const HoursPerMonth = 730

// MaxTCOMonths is the longest comparison (the cumulative series holds a
// figure per month).
const MaxTCOMonths = 1200

// MaxBreakEvenMonths bounds a break-even month: later than this (100
// years) is reported as never.
const MaxBreakEvenMonths = 1200

// TCOInput is one buy-versus-rent comparison for GPUs of one model. Money
// is in fen, percentages are whole percent, PUE is in hundredths.
//
// Owned GPUs are powered around the clock whether or not work runs on
// them, so buying pays for power, space and staff every hour of the month;
// DrawPct is their average draw (idle GPUs still draw a fifth to a third
// of TDP). Renting on demand pays only for the hours used.
type TCOInput struct {
	GPUs   int
	Months int

	// GPUPriceFen is the purchase price of one GPU (the card, or one
	// eighth of an 8-GPU baseboard).
	GPUPriceFen int64
	// ServerShareFen is each GPU's share of the server and network:
	// chassis, CPUs, memory, NICs, switch ports and cables.
	ServerShareFen int64
	// DepreciationMonths writes the purchase off straight-line to zero.
	DepreciationMonths int

	// TDPW is the catalogue TDP of one GPU in watts.
	TDPW int
	// DrawPct is the GPUs' average draw as a percentage of TDP.
	DrawPct int
	// HostWPerGPU is each GPU's share of the host's power (CPUs, memory,
	// fans, NICs), in watts.
	HostWPerGPU int
	// PUECenti is the datacentre's power usage effectiveness × 100 (130
	// is 1.30): the cooling and distribution energy on top of the IT load.
	PUECenti int
	// ElectricityFenPerKWh is the price of electricity.
	ElectricityFenPerKWh int64
	// SpaceFenPerGPUMonth is rack space and cooling equipment per GPU.
	SpaceFenPerGPUMonth int64
	// OpsFenPerGPUMonth is each GPU's share of the operations staff.
	OpsFenPerGPUMonth int64

	// UtilisationPct is the share of each month's hours that GPUs are
	// rented on demand.
	UtilisationPct int
	// OffpeakSharePct is the share of those hours in off-peak windows.
	OffpeakSharePct int
	// OnDemand is the on-demand price; nil when there is none.
	OnDemand *OnDemandPrice
	// MonthlyPerGPUFen is the monthly term's price per GPU; nil when
	// there is none.
	MonthlyPerGPUFen *int64
}

// OnDemandPrice is an on-demand price per GPU-hour and its off-peak discount.
type OnDemandPrice struct {
	PerGPUHourFen      int64
	OffpeakDiscountPct int
}

// TCOResult is the comparison. Every figure is computed exactly (as a
// fraction of a fen) and rounded half up to a whole fen once, when it is
// reported: a total is not the sum of rounded monthly figures.
type TCOResult struct {
	// CapexFen = GPUs × (GPU price + server share), paid at month 0.
	CapexFen int64
	// GPUWattsCenti is one GPU's average draw including its host share,
	// in hundredths of a watt: TDP × draw% + host W.
	GPUWattsCenti int64
	// EnergyKWhPerMonth is the fleet's energy per month at the meter
	// (PUE included), exactly; for display.
	EnergyKWhPerMonth *big.Rat

	PowerFenPerMonth   int64
	SpaceFenPerMonth   int64
	OpsFenPerMonth     int64
	RunningFenPerMonth int64
	RunningFenPerYear  int64

	DepreciationFenPerMonth int64
	// DepreciatedFen is the capex written off over the months compared:
	// capex × min(months, depreciation months) / depreciation months.
	DepreciatedFen int64
	// BookValueFen is what is left on the books at the end (the residual
	// value assumed): CapexFen − DepreciatedFen.
	BookValueFen int64

	// BuyCashFen is the cash spent buying: capex + months × running.
	BuyCashFen int64
	// BuyDepreciatedFen is the cost of owning: depreciation + running.
	BuyDepreciatedFen int64

	// HasOnDemand is false when the input had no on-demand price (the
	// on-demand figures are then zero and their series nil).
	HasOnDemand bool
	// OnDemandGPUHoursPerMonth = GPUs × 730 h × utilisation, exactly.
	OnDemandGPUHoursPerMonth *big.Rat
	// OnDemandBlendedFen is the expected price per GPU-hour, exactly:
	// price × (1 − off-peak share × off-peak discount).
	OnDemandBlendedFen  *big.Rat
	OnDemandFenPerMonth int64
	OnDemandFen         int64

	// HasMonthly is false when the input had no monthly price.
	HasMonthly         bool
	MonthlyFenPerMonth int64
	MonthlyFen         int64

	// BreakEvenOnDemand and BreakEvenMonthly are the first month from
	// which renting that way has cost at least as much as buying (cash
	// basis); 0 when it never does. They may lie beyond Months.
	BreakEvenOnDemand int
	BreakEvenMonthly  int

	// Cumulative costs at the end of each month, index 0 to Months, cash
	// basis. The rent series are nil without their price.
	CumulativeBuy      []int64
	CumulativeOnDemand []int64
	CumulativeMonthly  []int64
}

// ErrTCOInput is returned for inputs no comparison can be made of.
var ErrTCOInput = errors.New("tco: GPUs, months and depreciation months must be positive, percentages 0 to 100, and no amount negative")

// TCO compares buying GPUs with renting them over in.Months months.
//
//	capex           = GPUs × (GPU price + server share)
//	power / month   = GPUs × (TDP × draw% + host W) × PUE × 730 h × price per kWh
//	space / month   = GPUs × space and cooling per GPU-month
//	ops / month     = GPUs × operations per GPU-month
//	running / month = power + space + ops
//	buy, cash       = capex + months × running
//	buy, owned      = capex × min(months, D) / D + months × running (D: depreciation months)
//	on demand       = months × GPUs × 730 h × utilisation × price × (1 − off-peak share × off-peak discount)
//	monthly term    = months × GPUs × monthly price
//	break-even      = the first month m with m × rent ≥ capex + m × running
//	                = ⌈capex / (rent per month − running per month)⌉, never when rent ≤ running
//
// The cumulative series (index = month, 0 to Months) are on the cash
// basis: buying starts at the capex.
func TCO(in TCOInput) (TCOResult, error) {
	pct := func(p int) bool { return p >= 0 && p <= 100 }
	if in.GPUs <= 0 || in.Months <= 0 || in.DepreciationMonths <= 0 || in.GPUPriceFen < 0 || in.ServerShareFen < 0 ||
		in.TDPW < 0 || in.HostWPerGPU < 0 || in.PUECenti < 0 || in.ElectricityFenPerKWh < 0 ||
		in.SpaceFenPerGPUMonth < 0 || in.OpsFenPerGPUMonth < 0 || !pct(in.UtilisationPct) || !pct(in.OffpeakSharePct) || !pct(in.DrawPct) ||
		in.Months > MaxTCOMonths || in.TDPW > 1e6 || in.HostWPerGPU > 1e6 || in.PUECenti > 1e4 ||
		(in.OnDemand != nil && (in.OnDemand.PerGPUHourFen < 0 || in.OnDemand.OffpeakDiscountPct < 0 || in.OnDemand.OffpeakDiscountPct > 100)) ||
		(in.MonthlyPerGPUFen != nil && *in.MonthlyPerGPUFen < 0) {
		return TCOResult{}, ErrTCOInput
	}
	n := tcoInt(int64(in.GPUs))
	months := int64(in.Months)
	var r TCOResult

	capex := tcoMul(n, tcoInt(in.GPUPriceFen+in.ServerShareFen))
	r.CapexFen = tcoRound(capex)

	// W per GPU in hundredths: TDP × draw% + host × 100.
	watts := tcoAdd(tcoMul(tcoInt(int64(in.TDPW)), tcoInt(int64(in.DrawPct))), tcoInt(int64(in.HostWPerGPU)*100))
	r.GPUWattsCenti = watts.Num().Int64()
	// kWh per month = GPUs × W × PUE × 730 h / 1000.
	r.EnergyKWhPerMonth = tcoMul(tcoMul(n, watts), tcoMul(tcoInt(int64(in.PUECenti)), tcoFrac(HoursPerMonth, 100*100*1000)))
	power := tcoMul(r.EnergyKWhPerMonth, tcoInt(in.ElectricityFenPerKWh))
	space := tcoMul(n, tcoInt(in.SpaceFenPerGPUMonth))
	ops := tcoMul(n, tcoInt(in.OpsFenPerGPUMonth))
	running := tcoAdd(power, space, ops)
	r.PowerFenPerMonth, r.SpaceFenPerMonth, r.OpsFenPerMonth = tcoRound(power), tcoRound(space), tcoRound(ops)
	r.RunningFenPerMonth = tcoRound(running)
	r.RunningFenPerYear = tcoRound(tcoMul(running, tcoInt(12)))

	d := int64(in.DepreciationMonths)
	r.DepreciationFenPerMonth = tcoRound(tcoMul(capex, tcoFrac(1, d)))
	written := min(months, d)
	depreciated := tcoMul(capex, tcoFrac(written, d))
	r.DepreciatedFen = tcoRound(depreciated)
	r.BookValueFen = r.CapexFen - r.DepreciatedFen
	r.BuyCashFen = tcoRound(tcoAdd(capex, tcoMul(running, tcoInt(months))))
	r.BuyDepreciatedFen = tcoRound(tcoAdd(depreciated, tcoMul(running, tcoInt(months))))

	r.CumulativeBuy = tcoSeries(months, capex, running)

	if in.OnDemand != nil {
		r.HasOnDemand = true
		r.OnDemandGPUHoursPerMonth = tcoMul(n, tcoFrac(HoursPerMonth*int64(in.UtilisationPct), 100)) // utilisation ≤ 100
		// price × (1 − share × discount) = price × (10000 − share × discount) / 10000.
		r.OnDemandBlendedFen = tcoMul(tcoInt(in.OnDemand.PerGPUHourFen),
			tcoFrac(10000-int64(in.OffpeakSharePct)*int64(in.OnDemand.OffpeakDiscountPct), 10000))
		perMonth := tcoMul(r.OnDemandGPUHoursPerMonth, r.OnDemandBlendedFen)
		r.OnDemandFenPerMonth = tcoRound(perMonth)
		r.OnDemandFen = tcoRound(tcoMul(perMonth, tcoInt(months)))
		r.CumulativeOnDemand = tcoSeries(months, new(big.Rat), perMonth)
		r.BreakEvenOnDemand = tcoBreakEven(capex, running, perMonth)
	}
	if in.MonthlyPerGPUFen != nil {
		r.HasMonthly = true
		perMonth := tcoMul(n, tcoInt(*in.MonthlyPerGPUFen))
		r.MonthlyFenPerMonth = tcoRound(perMonth)
		r.MonthlyFen = tcoRound(tcoMul(perMonth, tcoInt(months)))
		r.CumulativeMonthly = tcoSeries(months, new(big.Rat), perMonth)
		r.BreakEvenMonthly = tcoBreakEven(capex, running, perMonth)
	}
	return r, nil
}

// tcoSeries is start + m × step for m = 0…months, each rounded once.
func tcoSeries(months int64, start, step *big.Rat) []int64 {
	out := make([]int64, months+1)
	for m := range out {
		out[m] = tcoRound(tcoAdd(start, tcoMul(step, tcoInt(int64(m)))))
	}
	return out
}

// tcoBreakEven is the first month from which renting has cost at least as
// much as buying (cash basis), or 0 when that never happens (within
// MaxBreakEvenMonths).
func tcoBreakEven(capex, running, rent *big.Rat) int {
	gain := new(big.Rat).Sub(rent, running)
	if gain.Sign() <= 0 {
		return 0
	}
	q := new(big.Rat).Quo(capex, gain)
	m := new(big.Int).Quo(q.Num(), q.Denom())
	if new(big.Rat).SetInt(m).Cmp(q) < 0 {
		m.Add(m, big.NewInt(1))
	}
	if m.Cmp(big.NewInt(MaxBreakEvenMonths)) > 0 {
		return 0
	}
	return max(int(m.Int64()), 1)
}

func tcoInt(n int64) *big.Rat { return new(big.Rat).SetInt64(n) }

func tcoFrac(a, b int64) *big.Rat { return big.NewRat(a, b) }

func tcoMul(a, b *big.Rat) *big.Rat { return new(big.Rat).Mul(a, b) }

func tcoAdd(rs ...*big.Rat) *big.Rat {
	s := new(big.Rat)
	for _, r := range rs {
		s.Add(s, r)
	}
	return s
}

// tcoRound rounds a non-negative amount of fen half up to a whole fen.
func tcoRound(r *big.Rat) int64 {
	// ⌊(2·num + den) / (2·den)⌋
	num := new(big.Int).Mul(r.Num(), big.NewInt(2))
	num.Add(num, r.Denom())
	den := new(big.Int).Mul(r.Denom(), big.NewInt(2))
	return new(big.Int).Div(num, den).Int64()
}
