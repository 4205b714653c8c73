package handlers

import (
	"net/url"

	"suanli/benchmarks"
	"suanli/catalog"
	"suanli/images"
	"suanli/models"
	"suanli/offers"
	"suanli/pricing"
	"suanli/views/pages"
)

// offersVM maps a search to the offer list page's view model.
func offersVM(res offers.SearchResult, errs map[string]string, raw url.Values, rawQuery string) pages.OffersVM {
	q := res.Query
	vm := pages.OffersVM{
		RawQuery: rawQuery, Query: offerQueryVM(q), SortKeys: offers.SortKeys,
		Results: offerListVM(res), Pages: res.Pages, Errors: errs, Raw: raw,
	}
	if q.Page > 1 {
		prev := q
		prev.Page--
		vm.PrevValues = prev.Values()
	}
	if q.Page < res.Pages {
		next := q
		next.Page++
		vm.NextValues = next.Values()
	}
	for _, o := range res.Offers {
		vm.Demo = vm.Demo || o.Demo()
		vm.Synthetic = vm.Synthetic || o.Synthetic()
	}
	for _, r := range res.Relaxations {
		vm.Relaxations = append(vm.Relaxations, pages.OfferRelaxation{
			Filter: r.Filter, Count: r.Count, Values: r.Query.Values(),
			MaxLatencyMS: r.Query.MaxLatencyMS, MaxPriceFen: r.Query.MaxPriceFen,
			MinGPUs: r.Query.MinGPUs, MinVRAMGB: r.Query.MinVRAMGB,
		})
	}
	return vm
}

// offerQueryVM maps a parsed search to what the form and header show.
func offerQueryVM(q offers.Query) pages.OfferQuery {
	return pages.OfferQuery{
		GPUs: q.GPUs, City: q.City, Region: q.Region, From: q.From, Interconnect: q.Interconnect, Sort: q.Sort,
		Available: q.Available, Student: q.Student, Interruptible: q.Interruptible, Page: q.Page, LatencyCity: q.LatencyCity(),
		SortedByMeasured: q.Sort == offers.SortMeasured, SortedByReliability: q.Sort == offers.SortReliability,
	}
}

// offerListVM maps a search's offers to table rows, their benchmark
// status judged with their nodes' witnesses as the index holds it. The
// index entry is the row's revision: a changed offer gets a new entry, so
// its cached HTML is not served again, and the offer is read only when
// the row is not cached.
func offerListVM(res offers.SearchResult) pages.OfferList {
	rows := make([]pages.OfferListRow, len(res.Offers))
	for i, o := range res.Offers {
		rows[i] = pages.OfferListRow{ID: o.ID, Rev: o, Offer: (*listedRow)(o), Status: o.WitnessStatus()}
	}
	return pages.OfferList{Total: res.Total, Rows: rows}
}

// listedRow is an indexed offer as an offer table reads it.
type listedRow offers.Listed

// Row maps the indexed offer to its row's figures, names in lang.
func (r *listedRow) Row(lang string) pages.OfferRow {
	o := (*offers.Listed)(r)
	stored := o.Row() // built for this render: the index's record is compact
	row := offerRowVM(&stored, lang)
	row.GPU = o.GPU
	row.PriceFen, row.StudentPriceFen = o.PriceFen(false), o.PriceFen(true)
	row.Interruptible = (*pages.OfferInterruptible)(o.Interruptible)
	return row
}

// offerRowVM maps a stored offer to an offer table row's figures; the
// prices are the list and student on-demand prices.
func offerRowVM(o *models.OfferRow, lang string) pages.OfferRow {
	row := pages.OfferRow{
		ID: o.ID, MaxGPUs: o.MaxGPUs, AvailableGPUs: o.AvailableGPUs, Interconnect: o.Interconnect,
		StudentDiscountPct: o.StudentDiscountPct, OffpeakDiscountPct: o.OffpeakDiscountPct,
		Demo: o.Demo, Synthetic: o.Synthetic,
		PricePerGPUHourFen: o.PricePerGPUHourFen, PriceFen: o.PricePerGPUHourFen,
		StudentPriceFen: offers.StudentPriceFen(&o.Offer),
		Latency:         o.Latency, Report: offerReportVM(o.GPUModel, o.Report), Uptime30dPct: o.Uptime30dPct,
	}
	if o.MonthlyPricePerGPUFen != nil {
		list, student := offers.UnitPriceFen(&o.Offer, pricing.Month, false), offers.UnitPriceFen(&o.Offer, pricing.Month, true)
		row.MonthlyFen, row.StudentMonthlyFen = &list, &student
	}
	if dc := o.Datacenter; dc != nil {
		row.DC = pages.OfferPlace{Slug: dc.Slug, City: dc.City, Name: dc.Name(lang), District: dc.District(lang)}
	}
	return row
}

// offerReportVM maps the report headline of a node of GPU model slug
// (nil for none), with its status.
func offerReportVM(slug string, r *models.ReportHeadline) *pages.OfferReport {
	if r == nil {
		return nil
	}
	m, _ := catalog.GPUModelBySlug(slug)
	return &pages.OfferReport{
		ID: r.ID, BF16TFLOPS: r.BF16TFLOPS, FP16TFLOPS: r.FP16TFLOPS, MemBWGBps: r.MemBWGBps, PctOfNominal: r.PctOfNominal,
		Simulated: r.Simulated, MeasuredAt: r.MeasuredAt,
		Flagged: offers.ReportFlagged(&m, r), FlagBelowPct: offers.FlagBelowPct(&m), ExpectedPct: m.ExpectedPct,
		Status: string(benchmarks.HeadlineStatus(slug, r, benchmarks.Independent{})),
	}
}

// offerDetailVM maps a stored offer to what the offer page shows.
func offerDetailVM(o *models.OfferRow, lang string) pages.OfferDetail {
	d := pages.OfferDetail{
		OfferRow: offerRowVM(o, lang), NodeID: o.NodeID, Status: o.Status,
		VCPUPerGPU: o.VCPUPerGPU, RAMGBPerGPU: o.RAMGBPerGPU, DiskGB: o.DiskGB,
		WeeklyPricePerGPUFen: o.WeeklyPricePerGPUFen, MonthlyPricePerGPUFen: o.MonthlyPricePerGPUFen,
		CustomImages: o.CustomImages, StoragePricePerGBMonthFen: o.StoragePricePerGBMonthFen, NoGPUPricePerHourFen: o.NoGPUPricePerHourFen,
	}
	if o.Datacenter != nil {
		d.Storage = string(o.Datacenter.Storage)
	}
	if o.Provider != nil {
		d.ProviderName = o.Provider.Name(lang)
	}
	return d
}

// datacenterInfoVM maps a datacentre record, named in lang.
func datacenterInfoVM(dc *models.Datacenter, lang string) pages.DatacenterInfo {
	return pages.DatacenterInfo{
		Name: dc.Name(lang), District: dc.District(lang), City: dc.City, Region: dc.Region, Tier: dc.Tier,
		UplinkGbps: dc.UplinkGbps, Demo: dc.Demo, Storage: string(dc.Storage),
	}
}

// offerImagesVM maps an offer's images to what its page lists.
func offerImagesVM(imgs []images.Image) []pages.OfferImage {
	out := make([]pages.OfferImage, len(imgs))
	for i, im := range imgs {
		out[i] = pages.OfferImage{Slug: im.Slug, Name: im.Name, CUDAVersion: im.CUDAVersion, Jupyter: im.Jupyter,
			SizeBytes: im.SizeBytes, Cached: im.Cached, Compatible: im.Compatible}
	}
	return out
}
