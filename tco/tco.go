package tco

import (
	"net/url"
	"strconv"
	"strings"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/offers"
	"suanli/pricing"
)

// ModelDefaults are the calculator's starting figures for buying one GPU
// of a model: public figures (press reports, resellers' price lists in
// China, 2024–2025), approximate, and editable on the page.
type ModelDefaults struct {
	// GPUPriceFen is the purchase price of one GPU.
	GPUPriceFen int64
	// ServerShareFen is one GPU's share of the server and network.
	ServerShareFen int64
	// HostWPerGPU is one GPU's share of the host's power draw.
	HostWPerGPU int
}

// modelDefaults: an 8×A100 80GB SXM server is about ¥600,000 with its
// chassis (¥65,000 per GPU + ¥10,000 server and network share), an H100
// SXM about ¥230,000 per GPU, an RTX 4090 about ¥15,000. Host power is
// the server's draw beyond its GPUs divided among them (a DGX A100 draws
// 6.5 kW at most, 3.2 kW of it GPUs: about 400 W a GPU).
var modelDefaults = map[string]ModelDefaults{
	"rtx-3090":      {GPUPriceFen: 600_000, ServerShareFen: 300_000, HostWPerGPU: 150},
	"rtx-4090":      {GPUPriceFen: 1_500_000, ServerShareFen: 350_000, HostWPerGPU: 150},
	"l40s":          {GPUPriceFen: 6_500_000, ServerShareFen: 800_000, HostWPerGPU: 200},
	"v100-32g-sxm2": {GPUPriceFen: 900_000, ServerShareFen: 600_000, HostWPerGPU: 300},
	"a100-40g-pcie": {GPUPriceFen: 5_500_000, ServerShareFen: 800_000, HostWPerGPU: 200},
	"a100-40g-sxm":  {GPUPriceFen: 6_000_000, ServerShareFen: 1_000_000, HostWPerGPU: 400},
	"a100-80g-sxm":  {GPUPriceFen: 6_500_000, ServerShareFen: 1_000_000, HostWPerGPU: 400},
	"h100-pcie":     {GPUPriceFen: 20_000_000, ServerShareFen: 1_000_000, HostWPerGPU: 200},
	"h100-sxm":      {GPUPriceFen: 23_000_000, ServerShareFen: 1_500_000, HostWPerGPU: 500},
	"h200-sxm":      {GPUPriceFen: 28_000_000, ServerShareFen: 1_500_000, HostWPerGPU: 500},
	"h20":           {GPUPriceFen: 10_000_000, ServerShareFen: 1_200_000, HostWPerGPU: 400},
	"b200":          {GPUPriceFen: 35_000_000, ServerShareFen: 2_000_000, HostWPerGPU: 700},
}

// DefaultsFor returns the starting figures for a catalogue model, and
// whether there are any (a model new to the catalogue has none: zero).
func DefaultsFor(slug string) (ModelDefaults, bool) {
	d, ok := modelDefaults[slug]
	return d, ok
}

// The calculator's other defaults. Running costs are set so that an 8×A100
// server costs over ¥200,000 a year to run, as public figures say.
const (
	DefaultModel       = "a100-80g-sxm"
	DefaultGPUs        = 8
	DefaultMonths      = 36
	DefaultDepreciate  = 36     // months, straight line to zero
	DefaultDrawPct     = 100    // trained on around the clock
	DefaultPUECenti    = 130    // 1.30
	DefaultKWhFen      = 65     // ¥0.65 per kWh, large industrial user
	DefaultSpaceFen    = 70_000 // ¥700 per GPU-month: half a high-power rack per 8-GPU server
	DefaultOpsFen      = 100_000
	DefaultUtilPct     = 60
	DefaultOffpeakPct  = 30
	PublicServerFen    = 60_000_000 // "an 8×A100 server about ¥600,000"
	PublicRunningFen   = 20_000_000 // "running costs over ¥200,000 a year"
	maxGPUs            = 10_000
	maxMonths          = 120
	maxHostW           = 5_000
	maxKWhFen          = 1_000 // ¥10 per kWh
	minPUE, maxPUE     = 100, 300
	maxDepreciationMon = 120
)

// Fields are the calculator's parameters in form order.
var Fields = []string{
	"gpu", "gpus", "months",
	"gpu_price", "server_share", "dep_months",
	"draw_pct", "host_w", "pue", "kwh_price", "space", "ops",
	"util_pct", "offpeak_pct", "od_price", "od_offpeak", "monthly_price", "interruptible",
}

// Query is a parsed calculator form: every input, defaults in place of
// empty or invalid fields, and the rent prices entered (nil: the cheapest
// live offer's).
type Query struct {
	Model catalog.GPUModel
	// Input holds every figure but the rent prices.
	Input pricing.TCOInput
	// OnDemandFen, OffpeakDiscountPct and MonthlyFen are rent prices
	// entered instead of the live offers'.
	OnDemandFen        *int64
	OffpeakDiscountPct *int
	MonthlyFen         *int64
	// Interruptible rents by the hour at the cheapest interruptible
	// offer's clearing price (竞价实例) instead of on demand, where the
	// model has an offer that takes bids.
	Interruptible bool
}

// DefaultQuery is the calculator before any change: 8 GPUs of the
// model over 36 months.
func DefaultQuery(m catalog.GPUModel) Query {
	d, _ := DefaultsFor(m.Slug)
	return Query{Model: m, Input: pricing.TCOInput{
		GPUs: DefaultGPUs, Months: DefaultMonths,
		GPUPriceFen: d.GPUPriceFen, ServerShareFen: d.ServerShareFen, DepreciationMonths: DefaultDepreciate,
		TDPW: m.TDPW, DrawPct: DefaultDrawPct, HostWPerGPU: d.HostWPerGPU, PUECenti: DefaultPUECenti,
		ElectricityFenPerKWh: DefaultKWhFen, SpaceFenPerGPUMonth: DefaultSpaceFen, OpsFenPerGPUMonth: DefaultOpsFen,
		UtilisationPct: DefaultUtilPct, OffpeakSharePct: DefaultOffpeakPct,
	}}
}

// ParseQuery reads the calculator's parameters. An empty field takes its
// default; an invalid one takes its default too and is reported (pages show
// the message beside the field).
func ParseQuery(v url.Values) (Query, []*apperr.Error) {
	var errs []*apperr.Error
	m, _ := catalog.GPUModelBySlug(DefaultModel)
	if s := strings.TrimSpace(v.Get("gpu")); s != "" {
		if got, ok := catalog.GPUModelBySlug(s); ok {
			m = got
		} else {
			errs = append(errs, apperr.Field("gpu", "tco.err.gpu", s, m.Name))
		}
	}
	q := DefaultQuery(m)
	in := &q.Input
	// A form drawn for another model (shown_gpu) sends that model's
	// defaults back in the fields that depend on the model: they are not
	// the reader's figures, so the new model's defaults replace them.
	var stale *Query
	if s := v.Get("shown_gpu"); s != "" && s != m.Slug {
		if prev, ok := catalog.GPUModelBySlug(s); ok {
			p := DefaultQuery(prev)
			stale = &p
		}
	}
	intField := func(name string, lo, hi int, dst *int) {
		s := strings.TrimSpace(v.Get(name))
		if s == "" {
			return
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			errs = append(errs, apperr.Field(name, "tco.err.int", lo, hi))
			return
		}
		*dst = n
	}
	// yuanField reads an amount in yuan into fen, at most hiFen.
	yuanField := func(name string, hiFen int64, dst *int64) {
		s := strings.TrimSpace(v.Get(name))
		if s == "" {
			return
		}
		fen, ok := pricing.ParseYuan(s)
		if !ok || fen > hiFen {
			errs = append(errs, apperr.Field(name, "tco.err.yuan", pricing.FenToYuanString(hiFen)))
			return
		}
		*dst = fen
	}
	const maxYuanFen = 999_999_999 // ParseYuan's limit: ¥9,999,999.99
	intField("gpus", 1, maxGPUs, &in.GPUs)
	intField("months", 1, maxMonths, &in.Months)
	price, share, host := in.GPUPriceFen, in.ServerShareFen, in.HostWPerGPU
	yuanField("gpu_price", maxYuanFen, &price)
	yuanField("server_share", maxYuanFen, &share)
	intField("dep_months", 1, maxDepreciationMon, &in.DepreciationMonths)
	intField("draw_pct", 0, 100, &in.DrawPct)
	intField("host_w", 0, maxHostW, &host)
	if stale == nil || price != stale.Input.GPUPriceFen {
		in.GPUPriceFen = price
	}
	if stale == nil || share != stale.Input.ServerShareFen {
		in.ServerShareFen = share
	}
	if stale == nil || host != stale.Input.HostWPerGPU {
		in.HostWPerGPU = host
	}
	if s := strings.TrimSpace(v.Get("pue")); s != "" {
		// PUE has two decimals, as yuan have: hundredths.
		if c, ok := pricing.ParseYuan(s); ok && c >= minPUE && c <= maxPUE {
			in.PUECenti = int(c)
		} else {
			errs = append(errs, apperr.Field("pue", "tco.err.pue"))
		}
	}
	yuanField("kwh_price", maxKWhFen, &in.ElectricityFenPerKWh)
	yuanField("space", maxYuanFen, &in.SpaceFenPerGPUMonth)
	yuanField("ops", maxYuanFen, &in.OpsFenPerGPUMonth)
	intField("util_pct", 0, 100, &in.UtilisationPct)
	intField("offpeak_pct", 0, 100, &in.OffpeakSharePct)

	// Rent prices entered override the live offers'; a bad one falls back
	// to the offer's.
	rentYuan := func(name string) *int64 {
		s := strings.TrimSpace(v.Get(name))
		if s == "" {
			return nil
		}
		fen, ok := pricing.ParseYuan(s)
		if !ok || fen <= 0 {
			errs = append(errs, apperr.Field(name, "tco.err.rent_price"))
			return nil
		}
		return &fen
	}
	q.OnDemandFen = rentYuan("od_price")
	q.MonthlyFen = rentYuan("monthly_price")
	switch strings.ToLower(strings.TrimSpace(v.Get("interruptible"))) {
	case "", "0", "false", "off", "no":
	case "1", "true", "on", "yes":
		q.Interruptible = true
	default:
		errs = append(errs, apperr.Field("interruptible", "tco.err.interruptible"))
	}
	if s := strings.TrimSpace(v.Get("od_offpeak")); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= 100 {
			q.OffpeakDiscountPct = &n
		} else {
			errs = append(errs, apperr.Field("od_offpeak", "tco.err.rent_pct"))
		}
	}
	return q, errs
}

// Where a rent price in a TCO plan comes from.
const (
	FromOffer   = "offer"
	FromEntered = "entered"
	// FromInterruptible: the hourly price is an interruptible offer's
	// clearing price (Query.Interruptible), which can be interrupted.
	FromInterruptible = "interruptible"
)

// Plan is a calculator's answer: the query, the offers it compared
// against, the input as computed and the result.
type Plan struct {
	Query Query
	// Student: the offers' prices are the viewer's student prices.
	Student bool
	Offers  offers.CheapestOffers
	// OnDemandFrom and MonthlyFrom say where each rent price came from:
	// FromOffer, FromEntered, or "" when there is none (that side of
	// the comparison is left out).
	OnDemandFrom, MonthlyFrom string
	Input                     pricing.TCOInput
	Result                    pricing.TCOResult
}

// TCO compares buying with renting the cheapest live offers (or the rent
// prices entered) for a parsed query, at the prices the viewer pays
// (student: a confirmed member of an approved lab).
func Compute(ix *offers.Index, q Query, student bool) (Plan, error) {
	p := Plan{Query: q, Student: student, Offers: ix.CheapestOffers(q.Model.Slug, q.Input.OffpeakSharePct, student), Input: q.Input}
	hourly := p.Offers.OnDemand
	if o := p.Offers.OnDemand; o != nil {
		p.OnDemandFrom = FromOffer
		p.Input.OnDemand = &pricing.OnDemandPrice{PerGPUHourFen: o.UnitPriceFen(pricing.OnDemand, student), OffpeakDiscountPct: o.OffpeakDiscountPct()}
	}
	// A bid at the clearing price gets the off-peak and student discounts
	// as an on-demand price does.
	if o := p.Offers.Interruptible; q.Interruptible && o != nil {
		hourly, p.OnDemandFrom = o, FromInterruptible
		p.Input.OnDemand = &pricing.OnDemandPrice{PerGPUHourFen: offers.InterruptiblePriceFen(o, student), OffpeakDiscountPct: o.OffpeakDiscountPct()}
	}
	if q.OnDemandFen != nil {
		p.OnDemandFrom = FromEntered
		p.Input.OnDemand = &pricing.OnDemandPrice{PerGPUHourFen: *q.OnDemandFen}
		if hourly != nil {
			p.Input.OnDemand.OffpeakDiscountPct = hourly.OffpeakDiscountPct()
		}
	}
	if q.OffpeakDiscountPct != nil && p.Input.OnDemand != nil {
		p.Input.OnDemand.OffpeakDiscountPct = *q.OffpeakDiscountPct
	}
	if o := p.Offers.Monthly; o != nil {
		p.MonthlyFrom = FromOffer
		fen := o.UnitPriceFen(pricing.Month, student)
		p.Input.MonthlyPerGPUFen = &fen
	}
	if q.MonthlyFen != nil {
		p.MonthlyFrom = FromEntered
		p.Input.MonthlyPerGPUFen = q.MonthlyFen
	}
	r, err := pricing.TCO(p.Input)
	if err != nil {
		return p, apperr.Errorf(apperr.EINVALID, "%v", err)
	}
	p.Result = r
	return p, nil
}

// Reference is the defaults' answer for the public figures' case, one
// 8×A100 80GB server: what it costs to buy and to run for a year.
func Reference() (capexFen, runningPerYearFen int64) {
	m, _ := catalog.GPUModelBySlug("a100-80g-sxm")
	q := DefaultQuery(m)
	r, err := pricing.TCO(q.Input)
	if err != nil {
		panic("market: the TCO defaults are invalid: " + err.Error())
	}
	return r.CapexFen, r.RunningFenPerYear
}

// Values encodes the query as URL parameters, leaving out every figure
// equal to its default for the model: the shareable address of the
// calculation.
func (q Query) Values() url.Values {
	v := url.Values{}
	def := DefaultQuery(q.Model)
	if q.Model.Slug != DefaultModel {
		v.Set("gpu", q.Model.Slug)
	}
	ints := []struct {
		name      string
		got, want int
	}{
		{"gpus", q.Input.GPUs, def.Input.GPUs}, {"months", q.Input.Months, def.Input.Months},
		{"dep_months", q.Input.DepreciationMonths, def.Input.DepreciationMonths},
		{"draw_pct", q.Input.DrawPct, def.Input.DrawPct}, {"host_w", q.Input.HostWPerGPU, def.Input.HostWPerGPU},
		{"util_pct", q.Input.UtilisationPct, def.Input.UtilisationPct}, {"offpeak_pct", q.Input.OffpeakSharePct, def.Input.OffpeakSharePct},
	}
	for _, f := range ints {
		if f.got != f.want {
			v.Set(f.name, strconv.Itoa(f.got))
		}
	}
	fens := []struct {
		name      string
		got, want int64
	}{
		{"gpu_price", q.Input.GPUPriceFen, def.Input.GPUPriceFen}, {"server_share", q.Input.ServerShareFen, def.Input.ServerShareFen},
		{"pue", int64(q.Input.PUECenti), int64(def.Input.PUECenti)}, {"kwh_price", q.Input.ElectricityFenPerKWh, def.Input.ElectricityFenPerKWh},
		{"space", q.Input.SpaceFenPerGPUMonth, def.Input.SpaceFenPerGPUMonth}, {"ops", q.Input.OpsFenPerGPUMonth, def.Input.OpsFenPerGPUMonth},
	}
	for _, f := range fens {
		if f.got != f.want {
			v.Set(f.name, pricing.FenToYuanString(f.got))
		}
	}
	if q.OnDemandFen != nil {
		v.Set("od_price", pricing.FenToYuanString(*q.OnDemandFen))
	}
	if q.OffpeakDiscountPct != nil {
		v.Set("od_offpeak", strconv.Itoa(*q.OffpeakDiscountPct))
	}
	if q.MonthlyFen != nil {
		v.Set("monthly_price", pricing.FenToYuanString(*q.MonthlyFen))
	}
	if q.Interruptible {
		v.Set("interruptible", "1")
	}
	return v
}
