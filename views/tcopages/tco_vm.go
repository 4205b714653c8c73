// Package tcopages renders the own-versus-rent calculator (GET /tco):
// its form, its results fragment and its chart, from plain view models
// the handler builds.
package tcopages

import (
	"fmt"
	"math"
	"math/big"
	"net/url"
	"strconv"
	"strings"

	"suanli/catalog"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
)

// TCOVM is the TCO calculator's view model.
type TCOVM struct {
	Plan TCOPlan
	// Fields are the calculator's parameters in form order.
	Fields []string
	// Errors maps a field to its message, already translated.
	Errors map[string]string
	// Raw holds the submitted values, so a rejected one stays in its field.
	Raw url.Values
	// ModelChanged is true on an htmx request whose model differs from
	// the one the form was drawn for: the fields whose defaults depend on
	// the model are swapped out of band.
	ModelChanged bool
	// RefCapexFen and RefRunningFen are the defaults' figures for one
	// 8×A100 80GB server, shown beside the public figures they reproduce.
	RefCapexFen, RefRunningFen int64
}

// TCOPlan is a computed comparison: buying the model against renting
// its cheapest live offers (or the rent prices entered).
type TCOPlan struct {
	// Model is the GPU model compared.
	Model catalog.GPUModel
	// Asked holds the figures asked for, before any rent price.
	Asked pricing.TCOInput
	// OnDemandFen, OffpeakDiscountPct and MonthlyFen are rent prices
	// entered instead of the live offers' (nil when none was).
	OnDemandFen        *int64
	OffpeakDiscountPct *int
	MonthlyFen         *int64
	// Student: the offers' prices are the viewer's student prices.
	Student bool
	// Listed is how many listed offers the model has.
	Listed int
	// OnDemand and Monthly are the cheapest offers of each kind, nil when
	// there is none.
	OnDemand, Monthly *TCOOffer
	// OnDemandFrom and MonthlyFrom say where each rent price came from:
	// TCOFromOffer, TCOFromEntered, or "" when there is none.
	OnDemandFrom, MonthlyFrom string
	// Input is what the comparison computed with; Result its figures.
	Input  pricing.TCOInput
	Result pricing.TCOResult
	// Interruptible: the reader asked to rent by the hour at an
	// interruptible (竞价) clearing price; InterruptibleOffer is the
	// cheapest offer of the model that takes bids (nil: none, and the
	// on-demand price stands). OnDemandFrom is TCOFromInterruptible when
	// its price was used.
	Interruptible      bool
	InterruptibleOffer *TCOOffer
}

// Where a TCO rent price came from (TCOPlan.OnDemandFrom, MonthlyFrom).
const (
	TCOFromOffer   = "offer"
	TCOFromEntered = "entered"
	// TCOFromInterruptible: an interruptible offer's clearing price
	// (tco.FromInterruptible, passed through as it is).
	TCOFromInterruptible = "interruptible"
)

// hourlyKey is the message key of a label of renting by the hour: its
// interruptible variant ("…interruptible" for "…on_demand" or a final
// "od") when the hourly price is a bid's, so no figure is called on
// demand that is not.
func (vm TCOVM) hourlyKey(key string) string {
	switch {
	case vm.Plan.OnDemandFrom != TCOFromInterruptible:
		return key
	case strings.HasSuffix(key, "od"):
		return strings.TrimSuffix(key, "od") + "interruptible"
	}
	return strings.Replace(key, "on_demand", "interruptible", 1)
}

// TCOOffer is what the calculator shows of a live offer.
type TCOOffer struct {
	ID                    int64
	PricePerGPUHourFen    int64
	MonthlyPricePerGPUFen *int64
	OffpeakDiscountPct    int
	StudentDiscountPct    int
	// ClearingFen is its interruptible clearing price per GPU-hour, 0
	// when it takes no bids.
	ClearingFen     int64
	Demo, Synthetic bool
	Datacenter      views.Name
	// Provider is nil for an offer without a provider.
	Provider *views.Name
}

// tcoModelFields are the fields whose default or placeholder depends on
// the GPU model.
var tcoModelFields = []string{"gpu_price", "server_share", "draw_pct", "host_w", "od_price", "od_offpeak", "monthly_price"}

func tcoModelField(name string) bool {
	for _, f := range tcoModelFields {
		if f == name {
			return true
		}
	}
	return false
}

// tcoField is one input of the form.
type tcoField struct {
	Name, Label, Unit, Placeholder, Value, Hint string
	Step, Min, Max                              string
	Mode                                        string // inputmode
}

func (vm TCOVM) res() pricing.TCOResult { return vm.Plan.Result }

func (vm TCOVM) in() pricing.TCOInput { return vm.Plan.Input }

// value is what a field shows: the submitted text when it was rejected,
// else the figure computed with.
func (vm TCOVM) value(name, computed string) string {
	if _, bad := vm.Errors[name]; bad {
		return vm.Raw.Get(name)
	}
	return computed
}

func tcoYuan(fen int64) string { return pricing.FenToYuanString(fen) }

// fieldGroups returns the form's inputs in groups.
func (vm TCOVM) fieldGroups(vc views.Ctx) [][]tcoField {
	q, in := vm.Plan, vm.Plan.Asked
	money := func(name, unit string, fen int64) tcoField {
		return tcoField{Name: name, Label: vc.T("tco.f." + name), Unit: unit, Value: vm.value(name, tcoYuan(fen)), Step: "0.01", Min: "0", Mode: "decimal"}
	}
	num := func(name, unit string, n, lo, hi int) tcoField {
		return tcoField{Name: name, Label: vc.T("tco.f." + name), Unit: unit, Value: vm.value(name, strconv.Itoa(n)),
			Step: "1", Min: strconv.Itoa(lo), Max: strconv.Itoa(hi), Mode: "numeric"}
	}
	perGPU, perGPUMonth := vc.T("tco.unit.yuan_per_gpu"), vc.T("tco.unit.yuan_per_gpu_month")
	fleet := []tcoField{
		num("gpus", vc.T("tco.unit.gpus"), in.GPUs, 1, 10000),
		num("months", vc.T("tco.unit.months"), in.Months, 1, 120),
	}
	buy := []tcoField{
		money("gpu_price", perGPU, in.GPUPriceFen),
		money("server_share", perGPU, in.ServerShareFen),
		num("dep_months", vc.T("tco.unit.months"), in.DepreciationMonths, 1, 120),
	}
	buy[0].Hint = vc.T("tco.hint.public_figure")
	buy[1].Hint = vc.T("tco.hint.server_share")
	pue := tcoField{Name: "pue", Label: vc.T("tco.f.pue"), Value: vm.value("pue", tcoYuan(int64(in.PUECenti))), Step: "0.01", Min: "1", Max: "3", Mode: "decimal"}
	draw := num("draw_pct", "%", in.DrawPct, 0, 100)
	draw.Hint = vc.T("tco.hint.draw", q.Model.TDPW)
	host := num("host_w", "W", in.HostWPerGPU, 0, 5000)
	host.Hint = vc.T("tco.hint.host")
	kwh := money("kwh_price", vc.T("tco.unit.yuan_per_kwh"), in.ElectricityFenPerKWh)
	space := money("space", perGPUMonth, in.SpaceFenPerGPUMonth)
	space.Hint = vc.T("tco.hint.space")
	ops := money("ops", perGPUMonth, in.OpsFenPerGPUMonth)
	run := []tcoField{draw, host, pue, kwh, space, ops}
	util := num("util_pct", "%", in.UtilisationPct, 0, 100)
	util.Hint = vc.T("tco.hint.util")
	share := num("offpeak_pct", "%", in.OffpeakSharePct, 0, 100)
	share.Hint = vc.T("tco.hint.offpeak_share")
	od := tcoField{Name: "od_price", Label: vc.T("tco.f.od_price"), Unit: vc.T("unit.yuan_per_gpu_hour"), Step: "0.01", Min: "0.01", Mode: "decimal",
		Value: vm.value("od_price", tcoOptYuan(q.OnDemandFen)), Hint: vc.T("tco.hint.live")}
	odOff := tcoField{Name: "od_offpeak", Label: vc.T("tco.f.od_offpeak"), Unit: "%", Step: "1", Min: "0", Max: "100", Mode: "numeric",
		Value: vm.value("od_offpeak", tcoOptInt(q.OffpeakDiscountPct))}
	monthly := tcoField{Name: "monthly_price", Label: vc.T("tco.f.monthly_price"), Unit: perGPUMonth, Step: "0.01", Min: "0.01", Mode: "decimal",
		Value: vm.value("monthly_price", tcoOptYuan(q.MonthlyFen)), Hint: vc.T("tco.hint.live")}
	if o := vm.Plan.InterruptibleOffer; o != nil && q.Interruptible {
		od.Placeholder, odOff.Placeholder = tcoYuan(o.ClearingFen), strconv.Itoa(o.OffpeakDiscountPct)
	} else if o := vm.Plan.OnDemand; o != nil {
		od.Placeholder, odOff.Placeholder = tcoYuan(o.PricePerGPUHourFen), strconv.Itoa(o.OffpeakDiscountPct)
	} else {
		od.Placeholder, odOff.Placeholder = vc.T("tco.no_offer_short"), "0"
	}
	if o := vm.Plan.Monthly; o != nil {
		monthly.Placeholder = tcoYuan(*o.MonthlyPricePerGPUFen)
	} else {
		monthly.Placeholder = vc.T("tco.no_offer_short")
	}
	return [][]tcoField{fleet, buy, run, {util, share, od, odOff, monthly}}
}

func tcoOptYuan(p *int64) string {
	if p == nil {
		return ""
	}
	return tcoYuan(*p)
}

func tcoOptInt(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

// tcoGroupLegend names the form's groups in order.
var tcoGroupLegend = []string{"tco.group.fleet", "tco.group.buy", "tco.group.run", "tco.group.rent"}

// tcoPct formats whole percent.
func tcoPct(n int) string { return strconv.Itoa(n) + "%" }

// tcoRatString writes an exact figure as a decimal (these figures always end),
// with thousands separators and no trailing zeros.
func tcoRatString(r *big.Rat) string {
	s := r.FloatString(7)
	whole, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	n, _ := strconv.ParseInt(whole, 10, 64)
	out := views.Int(int(n))
	if frac != "" {
		out += "." + frac
	}
	return out
}

// tcoRatYuan writes an exact amount of fen as yuan ("¥26.549"), at least two
// decimals.
func tcoRatYuan(fen *big.Rat) string {
	y := new(big.Rat).Quo(fen, big.NewRat(100, 1))
	s := tcoRatString(y)
	whole, frac, _ := strings.Cut(s, ".")
	for len(frac) < 2 {
		frac += "0"
	}
	return "¥" + whole + "." + frac
}

// tcoLine is one line of the formula: what, the arithmetic, the result.
type tcoLine struct {
	Label, Expr, Result string
}

// formula writes the computation out with the figures of this plan.
func (vm TCOVM) formula(vc views.Ctx) []tcoLine {
	in, r := vm.in(), vm.res()
	n := views.Int(in.GPUs)
	m := views.Int(in.Months)
	perMonth := vc.T("tco.unit.per_month")
	y := views.Yuan
	lines := []tcoLine{
		{vc.T("tco.l.capex"), fmt.Sprintf("%s × (%s + %s)", n, y(in.GPUPriceFen), y(in.ServerShareFen)), y(r.CapexFen)},
		{vc.T("tco.l.power"), fmt.Sprintf("%s × (%s W × %s + %s W) × %s × %s h × %s/kWh = %s kWh × %s/kWh",
			n, views.Int(in.TDPW), tcoPct(in.DrawPct), views.Int(in.HostWPerGPU), tcoYuan(int64(in.PUECenti)), views.Int(pricing.HoursPerMonth),
			y(in.ElectricityFenPerKWh), tcoRatString(r.EnergyKWhPerMonth), y(in.ElectricityFenPerKWh)), y(r.PowerFenPerMonth) + perMonth},
		{vc.T("tco.l.space"), fmt.Sprintf("%s × %s", n, y(in.SpaceFenPerGPUMonth)), y(r.SpaceFenPerMonth) + perMonth},
		{vc.T("tco.l.ops"), fmt.Sprintf("%s × %s", n, y(in.OpsFenPerGPUMonth)), y(r.OpsFenPerMonth) + perMonth},
		{vc.T("tco.l.running"), fmt.Sprintf("%s + %s + %s", y(r.PowerFenPerMonth), y(r.SpaceFenPerMonth), y(r.OpsFenPerMonth)),
			y(r.RunningFenPerMonth) + perMonth + vc.T("tco.l.per_year", y(r.RunningFenPerYear))},
		{vc.T("tco.l.buy_cash"), fmt.Sprintf("%s + %s × %s", y(r.CapexFen), m, y(r.RunningFenPerMonth)), y(r.BuyCashFen)},
		{vc.T("tco.l.depreciation"), fmt.Sprintf("%s × min(%s, %s) ÷ %s", y(r.CapexFen), m, views.Int(in.DepreciationMonths), views.Int(in.DepreciationMonths)),
			y(r.DepreciatedFen) + vc.T("tco.l.book_value", y(r.BookValueFen))},
		{vc.T("tco.l.buy_owned"), fmt.Sprintf("%s + %s × %s", y(r.DepreciatedFen), m, y(r.RunningFenPerMonth)), y(r.BuyDepreciatedFen)},
	}
	if r.HasOnDemand {
		od := in.OnDemand
		lines = append(lines, tcoLine{vc.T(vm.hourlyKey("tco.l.on_demand")),
			fmt.Sprintf("%s × %s h × %s × %s × (1 − %s × %s) = %s GPU·h × %s", n, views.Int(pricing.HoursPerMonth), tcoPct(in.UtilisationPct),
				y(od.PerGPUHourFen), tcoPct(in.OffpeakSharePct), tcoPct(od.OffpeakDiscountPct), tcoRatString(r.OnDemandGPUHoursPerMonth), tcoRatYuan(r.OnDemandBlendedFen)),
			y(r.OnDemandFenPerMonth) + perMonth + vc.T("tco.l.over", m, y(r.OnDemandFen))})
	}
	if r.HasMonthly {
		lines = append(lines, tcoLine{vc.T("tco.l.monthly"), fmt.Sprintf("%s × %s", n, y(*in.MonthlyPerGPUFen)),
			y(r.MonthlyFenPerMonth) + perMonth + vc.T("tco.l.over", m, y(r.MonthlyFen))})
	}
	be := func(label string, rent int64, month int) {
		lines = append(lines, tcoLine{label, fmt.Sprintf("⌈%s ÷ (%s − %s)⌉", y(r.CapexFen), y(rent), y(r.RunningFenPerMonth)), vm.breakEvenText(vc, month)})
	}
	if r.HasOnDemand {
		be(vc.T(vm.hourlyKey("tco.l.break_even_od")), r.OnDemandFenPerMonth, r.BreakEvenOnDemand)
	}
	if r.HasMonthly {
		be(vc.T("tco.l.break_even_monthly"), r.MonthlyFenPerMonth, r.BreakEvenMonthly)
	}
	return lines
}

// breakEvenText says when renting has cost as much as buying.
func (vm TCOVM) breakEvenText(vc views.Ctx, month int) string {
	switch {
	case month == 0:
		return vc.T("tco.be.never")
	case month > vm.in().Months:
		return vc.T("tco.be.beyond", month, vm.in().Months)
	}
	return vc.T("tco.be.month", month)
}

// tcoOption is one comparison total.
type tcoOption struct {
	Key, Label, Note string
	Fen              int64
	Best             bool
	Class            string
}

// options are the totals compared; the cheapest (buying at its cost of
// ownership) is marked.
func (vm TCOVM) options(vc views.Ctx) []tcoOption {
	in, r := vm.in(), vm.res()
	opts := []tcoOption{
		{Key: "buy_owned", Label: vc.T("tco.opt.buy_owned"), Note: vc.T("tco.opt.buy_owned_note", views.Yuan(r.BookValueFen)), Fen: r.BuyDepreciatedFen, Class: "buy"},
		{Key: "buy_cash", Label: vc.T("tco.opt.buy_cash"), Note: vc.T("tco.opt.buy_cash_note", views.Yuan(r.CapexFen)), Fen: r.BuyCashFen, Class: "buy"},
	}
	if r.HasOnDemand {
		opts = append(opts, tcoOption{Key: "on_demand", Label: vc.T(vm.hourlyKey("tco.opt.on_demand")), Note: vc.T("tco.opt.on_demand_note", tcoPct(in.UtilisationPct)), Fen: r.OnDemandFen, Class: "od"})
	}
	if r.HasMonthly {
		opts = append(opts, tcoOption{Key: "monthly", Label: vc.T("tco.opt.monthly"), Note: vc.T("tco.opt.monthly_note"), Fen: r.MonthlyFen, Class: "monthly"})
	}
	best := -1
	for i, o := range opts {
		if o.Key == "buy_cash" {
			continue // the same purchase as buy_owned, counted in cash
		}
		if best < 0 || o.Fen < opts[best].Fen {
			best = i
		}
	}
	if len(opts) > 2 {
		opts[best].Best = true
	}
	return opts
}

// tcoOfferPlace describes a live offer briefly: datacentre and provider.
func tcoOfferPlace(vc views.Ctx, o *TCOOffer) string {
	s := o.Datacenter.In(vc.Lang)
	if o.Provider != nil {
		s += " · " + o.Provider.In(vc.Lang)
	}
	return s
}

// tcoOfferURL links a live offer's page.
func tcoOfferURL(vc views.Ctx, o *TCOOffer) string {
	return vc.URL(routenames.OffersShow, strconv.FormatInt(o.ID, 10))
}

// The chart: cumulative cost over the months, cash basis, drawn in a
// fixed viewBox that CSS scales to the column.
const (
	tcoChartW, tcoChartH        = 720, 300
	tcoChartLeft, tcoChartRight = 78, 16
	tcoChartTop, tcoChartBottom = 14, 40
	tcoPlotW                    = tcoChartW - tcoChartLeft - tcoChartRight
	tcoPlotH                    = tcoChartH - tcoChartTop - tcoChartBottom
	tcoMaxXTicks, tcoYTicks     = 8, 5
)

// tcoChart is the chart's geometry, computed once per render.
type tcoChart struct {
	Lines   []tcoSeries
	XTicks  []tcoTick
	YTicks  []tcoTick
	Markers []tcoMarker
	Months  int
	// The plot area's edges and where the labels go, in viewBox pixels.
	Left, Right, Top, Bottom, YLabelX, XLabelY, XTitleX, XTitleY string
	ViewBox                                                      string
}

type tcoSeries struct {
	Class, Label, Points string
	Last                 string
}

type tcoTick struct {
	Pos   string // pixel coordinate along the axis
	Label string
}

type tcoMarker struct {
	X, Y, Label, Class string
	// Anchor keeps the label inside the plot; DY puts it above the dot,
	// or below when another marker is close.
	Anchor, DY string
}

func (vm TCOVM) chart(vc views.Ctx) tcoChart {
	r := vm.res()
	months := vm.in().Months
	top := int64(0)
	for _, s := range [][]int64{r.CumulativeBuy, r.CumulativeOnDemand, r.CumulativeMonthly} {
		for _, v := range s {
			top = max(top, v)
		}
	}
	step := tcoNiceStep(top, tcoYTicks)
	yMax := step * ((top + step - 1) / step)
	if yMax == 0 {
		yMax = step
	}
	x := func(m int) float64 { return tcoChartLeft + float64(tcoPlotW)*float64(m)/float64(months) }
	yPix := func(fen int64) float64 { return tcoChartTop + float64(tcoPlotH)*(1-float64(fen)/float64(yMax)) }
	c := tcoChart{Months: months,
		Left: tcoPx(tcoChartLeft), Right: tcoPx(tcoChartW - tcoChartRight), Top: tcoPx(tcoChartTop), Bottom: tcoPx(tcoChartH - tcoChartBottom),
		YLabelX: tcoPx(tcoChartLeft - 6), XLabelY: tcoPx(tcoChartH - tcoChartBottom + 16),
		XTitleX: tcoPx(tcoChartLeft + tcoPlotW/2), XTitleY: tcoPx(tcoChartH - 4),
		ViewBox: fmt.Sprintf("0 0 %d %d", tcoChartW, tcoChartH)}
	line := func(s []int64, class, label string) {
		if s == nil {
			return
		}
		var b strings.Builder
		for m, v := range s {
			if m > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x(m), yPix(v))
		}
		c.Lines = append(c.Lines, tcoSeries{Class: class, Label: label, Points: b.String(), Last: views.Yuan(s[len(s)-1])})
	}
	line(r.CumulativeBuy, "buy", vc.T("tco.chart.buy"))
	line(r.CumulativeOnDemand, "od", vc.T(vm.hourlyKey("tco.chart.on_demand")))
	line(r.CumulativeMonthly, "monthly", vc.T("tco.chart.monthly"))
	for v := int64(0); v <= yMax; v += step {
		c.YTicks = append(c.YTicks, tcoTick{Pos: tcoPx(yPix(v)), Label: tcoAxisYuan(vc, v)})
	}
	xs := 1
	for _, s := range []int{1, 2, 3, 6, 12, 24} {
		xs = s
		if months/s <= tcoMaxXTicks {
			break
		}
	}
	for m := 0; m <= months; m += xs {
		c.XTicks = append(c.XTicks, tcoTick{Pos: tcoPx(x(m)), Label: strconv.Itoa(m)})
	}
	if months%xs != 0 {
		c.XTicks = append(c.XTicks, tcoTick{Pos: tcoPx(x(months)), Label: strconv.Itoa(months)})
	}
	mark := func(month int, class string) {
		if month < 1 || month > months {
			return
		}
		mk := tcoMarker{X: tcoPx(x(month)), Y: tcoPx(yPix(r.CumulativeBuy[month])), Label: strconv.Itoa(month), Class: class, Anchor: "middle", DY: "-9"}
		switch f := float64(month) / float64(months); {
		case f > 0.85:
			mk.Anchor = "end"
		case f < 0.15:
			mk.Anchor = "start"
		}
		for _, other := range c.Markers {
			if ox, _ := strconv.ParseFloat(other.X, 64); math.Abs(ox-x(month)) < 70 {
				mk.DY = "20" // too close to the other label: below the line
			}
		}
		c.Markers = append(c.Markers, mk)
	}
	if r.HasOnDemand {
		mark(r.BreakEvenOnDemand, "od")
	}
	if r.HasMonthly {
		mark(r.BreakEvenMonthly, "monthly")
	}
	return c
}

func tcoPx(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// tcoNiceStep is a round tick interval (1, 2, 2.5 or 5 × 10ⁿ yuan, in fen)
// giving about n ticks up to top.
func tcoNiceStep(top int64, n int) int64 {
	if top <= 0 {
		return 100_000 // ¥1,000
	}
	raw := float64(top) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		if f*mag >= raw {
			return max(int64(f*mag), 100)
		}
	}
	return int64(10 * mag)
}

// tcoAxisYuan labels the money axis briefly: ¥60万 in Chinese, ¥600k in English.
func tcoAxisYuan(vc views.Ctx, fen int64) string {
	yuan := float64(fen) / 100
	if vc.Lang == "en" {
		switch {
		case yuan >= 1e6:
			return "¥" + strconv.FormatFloat(yuan/1e6, 'f', -1, 64) + "M"
		case yuan >= 1e3:
			return "¥" + strconv.FormatFloat(yuan/1e3, 'f', -1, 64) + "k"
		}
		return "¥" + strconv.FormatFloat(yuan, 'f', -1, 64)
	}
	switch {
	case yuan >= 1e8:
		return "¥" + strconv.FormatFloat(yuan/1e8, 'f', -1, 64) + "亿"
	case yuan >= 1e4:
		return "¥" + strconv.FormatFloat(yuan/1e4, 'f', -1, 64) + "万"
	}
	return "¥" + strconv.FormatFloat(yuan, 'f', -1, 64)
}

// tcoModels is the model select's options, by family.
func tcoModels() []catalog.Family { return catalog.Families() }

// tcoRows is the cumulative table under the chart: one row per month.
type tcoRow struct {
	Month                  int
	Buy, OnDemand, Monthly string
}

func (vm TCOVM) rows() []tcoRow {
	r := vm.res()
	out := make([]tcoRow, 0, len(r.CumulativeBuy))
	for m, b := range r.CumulativeBuy {
		row := tcoRow{Month: m, Buy: views.Yuan(b), OnDemand: "—", Monthly: "—"}
		if r.CumulativeOnDemand != nil {
			row.OnDemand = views.Yuan(r.CumulativeOnDemand[m])
		}
		if r.CumulativeMonthly != nil {
			row.Monthly = views.Yuan(r.CumulativeMonthly[m])
		}
		out = append(out, row)
	}
	return out
}
