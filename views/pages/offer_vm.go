package pages

import (
	"suanli/catalog"
	"suanli/market"
	"suanli/models"
	"suanli/pricing"
	"suanli/views"
)

// OfferVM is the offer page's view model.
type OfferVM struct {
	Offer models.OfferRow
	GPU   catalog.GPUModel
	// LatencySource is the message key saying where the latency figures
	// come from.
	LatencySource string
}

func (vm OfferVM) studentPrice() int64 {
	return pricing.Discounted(vm.Offer.PricePerGPUHourFen, vm.Offer.StudentDiscountPct)
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
		rows = append(rows, priceRow{"price.student", pricing.Discounted(base, o.StudentDiscountPct), "unit.per_gpu_hour"})
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
	Datacenter    models.Datacenter
	Latency       map[string]float64
	LatencySource string
	Offers        market.SearchResult
}
