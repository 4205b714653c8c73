package pages

import (
	"net/url"
	"strconv"

	"suanli/catalog"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
)

// OfferVM is the offer page's view model.
type OfferVM struct {
	Offer OfferDetail
	GPU   catalog.GPUModel
	// LatencySource is the message key saying where the latency figures
	// come from.
	LatencySource string
	// Ping times the visitor's own latency to the datacentre.
	Ping Ping
	// Quote is the quote panel's result for the submitted (or default)
	// request; QuoteErrors has a message per rejected field.
	Quote       *pricing.Breakdown
	QuoteForm   views.Form
	QuoteErrors map[string]string
	// EarlyStopKey is the message saying what stopping the quote's term
	// early refunds ("" without a quote).
	EarlyStopKey string
	// Images are the catalogue images the offer offers, its default first.
	Images []OfferImage
	// DriverCUDA is the CUDA version the offer's node's driver supports
	// ("" until its agent reports one).
	DriverCUDA string
	// Witnesses are the renter-measured and platform-audited figures.
	Witnesses OfferWitnesses
}

// OfferImage is a catalogue image as the offer page lists it.
type OfferImage struct {
	Slug, Name string
	// CUDAVersion is its CUDA runtime ("" for none).
	CUDAVersion string
	Jupyter     bool
	// SizeBytes is nil while unknown.
	SizeBytes *int64
	// Cached: the offer's node has it (no pull); Compatible: the node's
	// CUDA driver can run it.
	Cached, Compatible bool
}

// rentLink is the offer page's Rent button: the rent page with the quote
// panel's choice of GPUs, term, tier and volume size.
func rentLink(vc views.Ctx, vm OfferVM) string {
	v := url.Values{}
	for _, k := range []string{"gpus", "term", "sla", "volume_gb"} {
		if s := vm.QuoteForm.Get(k); s != "" && vm.QuoteErrors[k] == "" {
			v.Set(k, s)
		}
	}
	u := vc.URL(routenames.RentalsNew, views.I64(vm.Offer.ID))
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

var quoteFields = []string{"gpus", "hours", "term", "start", "sla", "volume_gb"}

// startValue is the datetime-local value of the quote's start (Asia/Shanghai).
func (vm OfferVM) startValue() string {
	if s := vm.QuoteForm.Get("start"); s != "" {
		return s
	}
	if vm.Quote != nil {
		return vm.Quote.Start.In(pricing.Shanghai).Format("2006-01-02T15:04")
	}
	return ""
}

// volumeValue is the quote's volume size: as entered, else the one the
// quote priced (the size a rent makes).
func (vm OfferVM) volumeValue() string {
	if s := vm.QuoteForm.Get("volume_gb"); s != "" {
		return s
	}
	if vm.Quote != nil && vm.Quote.VolumeGB > 0 {
		return strconv.Itoa(vm.Quote.VolumeGB)
	}
	return ""
}

func (vm OfferVM) hoursValue() string {
	if s := vm.QuoteForm.Get("hours"); s != "" {
		return s
	}
	return "1"
}

func (vm OfferVM) studentPrice() int64 { return vm.Offer.StudentPriceFen }

// OfferDetail is what the offer page shows of an offer: its row in the
// list and the rest of the offer.
type OfferDetail struct {
	OfferRow
	NodeID int64
	// Status is the offer's listing status ("listed", …).
	Status       string
	ProviderName string
	VCPUPerGPU   int
	RAMGBPerGPU  int
	DiskGB       int
	// WeeklyPricePerGPUFen and MonthlyPricePerGPUFen are the term prices
	// per GPU, nil when the offer sells no such term.
	WeeklyPricePerGPUFen, MonthlyPricePerGPUFen *int64
	// CustomImages: renters may run their own image.
	CustomImages bool
	// StoragePricePerGBMonthFen is the volume price per GB and 30 days;
	// NoGPUPricePerHourFen the hourly price without GPUs (no-GPU mode).
	StoragePricePerGBMonthFen, NoGPUPricePerHourFen int64
	// Storage is the datacentre's storage kind: "local" or "shared".
	Storage string
}

type priceRow struct {
	labelKey string
	fen      int64
	unitKey  string
}

// amount shows hourly prices to the fen and term prices in whole yuan
// when they are whole, as the list does.
func (p priceRow) amount() string {
	if p.unitKey != "unit.per_gpu_hour" && p.fen%100 == 0 {
		return views.YuanWhole(p.fen)
	}
	return views.Yuan(p.fen)
}

func (vm OfferVM) prices() []priceRow {
	o := vm.Offer
	base := o.PricePerGPUHourFen
	rows := []priceRow{{"price.on_demand", base, "unit.per_gpu_hour"}}
	if o.OffpeakDiscountPct > 0 {
		rows = append(rows, priceRow{"price.offpeak", pricing.Discounted(base, o.OffpeakDiscountPct), "unit.per_gpu_hour"})
	}
	if o.StudentDiscountPct > 0 {
		rows = append(rows, priceRow{"price.student", o.StudentPriceFen, "unit.per_gpu_hour"})
	}
	if o.OffpeakDiscountPct > 0 && o.StudentDiscountPct > 0 {
		rows = append(rows, priceRow{"price.student_offpeak", pricing.Discounted(base, o.OffpeakDiscountPct, o.StudentDiscountPct), "unit.per_gpu_hour"})
	}
	if o.WeeklyPricePerGPUFen != nil {
		rows = append(rows, priceRow{"price.weekly", *o.WeeklyPricePerGPUFen, "unit.per_gpu_week"})
	}
	if o.MonthlyPricePerGPUFen != nil {
		rows = append(rows, priceRow{"price.monthly", *o.MonthlyPricePerGPUFen, "unit.per_gpu_month"})
	}
	return rows
}

// storageKind is a storage kind's message suffix ("local" for anything
// unknown: the safe thing to promise).
func storageKind(s string) string {
	if s == "shared" {
		return "shared"
	}
	return "local"
}

// sizeText is an image's size in GB, or "—" while unknown.
func sizeText(b *int64) string {
	if b == nil {
		return "—"
	}
	return strconv.FormatFloat(float64(*b)/1e9, 'f', 1, 64) + " GB"
}

// measuredOr writes a measured figure with its unit, or "—" when the
// report lacks it.
func measuredOr(f *float64, unit string) string {
	if f == nil {
		return "—"
	}
	return tflopsText(*f) + unit
}

// slaURL links the SLA page by its route name, or by its public path
// while no route of that name is registered.
func slaURL(vc views.Ctx) string {
	if u := vc.URL(routenames.SLA); u != "" {
		return u
	}
	return "/sla"
}

type latencyRow struct {
	city string
	ms   float64
}

func latencyRows(lat map[string]float64) []latencyRow {
	var out []latencyRow
	for _, c := range catalog.Cities() {
		if ms, ok := lat[c.Slug]; ok {
			out = append(out, latencyRow{c.Slug, ms})
		}
	}
	return out
}

// DatacenterVM is the datacentre page's view model.
type DatacenterVM struct {
	Datacenter    DatacenterInfo
	Latency       map[string]float64
	LatencySource string
	Offers        OfferList
	// Ping times the visitor's own latency to the datacentre.
	Ping Ping
	// Uptime is the datacentre's 30-day uptime.
	Uptime Uptime
}

// DatacenterInfo is what the datacentre page shows of a datacentre, named
// in the reader's language.
type DatacenterInfo struct {
	Name, District, City, Region, Tier string
	UplinkGbps                         int
	Demo                               bool
	// Storage is "local" or "shared" (where renters' volumes live).
	Storage string
}
