// Package offers is the public offer list: an in-memory index of listed
// offers (rebuilt when the market changes), the search query with its
// parsing and validation, search and its relaxations, quotes and the
// latency endpoints a browser measures.
package offers

// This file owns the offer search query: its parameters, parsing and
// validation.

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/pricing"
)

// Sort keys for offer search.
const (
	SortPrice         = "price"
	SortPricePerTFLOP = "price_per_tflop"
	SortLatency       = "latency"
	SortVRAM          = "vram"
	// SortMeasured orders by price per measured BF16 TFLOPS (the latest
	// benchmark report); offers without one follow, by nominal.
	SortMeasured = "measured"
	// SortReliability orders by 30-day uptime, highest first, unknown last.
	SortReliability = "reliability"
)

// SortKeys lists the sort keys in display order.
var SortKeys = []string{SortPrice, SortPricePerTFLOP, SortLatency, SortVRAM, SortMeasured, SortReliability, SortInterruptible}

// Page sizes.
const (
	DefaultPerPage = 50
	MaxPerPage     = 200
)

// Query is a parsed, valid offer search. Zero values mean "no filter".
type Query struct {
	GPUs         []string // catalogue slugs, any of
	City         string   // datacentre city
	Region       string
	MinGPUs      int
	MinVRAMGB    int
	MaxPriceFen  int64 // per GPU-hour, on-demand, at the price the viewer pays
	From         string
	MaxLatencyMS float64
	Interconnect string
	Available    bool
	Student      bool
	// Interruptible keeps only offers that take bids (竞价实例).
	Interruptible bool
	Sort          string
	Page          int
	PerPage       int
	// DatacenterID restricts to one datacentre (the datacentre page).
	DatacenterID int64
	// StudentViewer is true when the viewer is a confirmed member of an
	// approved lab, and so is shown student prices: the price orders,
	// price per TFLOPS and MaxPriceFen then use each offer's student price
	// (Listed.PriceFen), the price shown. It is the viewer's, not a
	// URL parameter.
	StudentViewer bool
}

// LatencyCity is the city whose latency the results show: From, else City.
func (q Query) LatencyCity() string {
	if q.From != "" {
		return q.From
	}
	return q.City
}

// Values encodes the query back into URL parameters (defaults omitted), so
// pages can build links that keep every other filter.
func (q Query) Values() url.Values {
	v := url.Values{}
	for _, g := range q.GPUs {
		v.Add("gpu", g)
	}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("city", q.City)
	set("region", q.Region)
	if q.MinGPUs > 0 {
		v.Set("min_gpus", strconv.Itoa(q.MinGPUs))
	}
	if q.MinVRAMGB > 0 {
		v.Set("min_vram_gb", strconv.Itoa(q.MinVRAMGB))
	}
	if q.MaxPriceFen > 0 {
		v.Set("max_price", pricing.FenToYuanString(q.MaxPriceFen))
	}
	set("from", q.From)
	if q.MaxLatencyMS > 0 {
		v.Set("max_latency_ms", strconv.FormatFloat(q.MaxLatencyMS, 'f', -1, 64))
	}
	set("interconnect", q.Interconnect)
	if q.Available {
		v.Set("available", "1")
	}
	if q.Student {
		v.Set("student", "1")
	}
	if q.Interruptible {
		v.Set("interruptible", "1")
	}
	if q.Sort != "" && q.Sort != SortPrice {
		v.Set("sort", q.Sort)
	}
	if q.Page > 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	if q.PerPage != 0 && q.PerPage != DefaultPerPage {
		v.Set("per_page", strconv.Itoa(q.PerPage))
	}
	return v
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "", "0", "false", "off", "no":
		return false, true
	case "1", "true", "on", "yes":
		return true, true
	}
	return false, false
}

// ParseQuery reads an offer search from URL parameters. It returns
// the query made of every valid parameter and one error per invalid one
// (pages show those beside the field and ignore the value; the API answers
// 400). allowPerPage is true for the API, which takes per_page.
func ParseQuery(v url.Values, allowPerPage bool) (Query, []*apperr.Error) {
	q := Query{Sort: SortPrice, Page: 1, PerPage: DefaultPerPage}
	var errs []*apperr.Error
	for _, g := range v["gpu"] {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		if _, ok := catalog.GPUModelBySlug(g); !ok {
			errs = append(errs, apperr.Field("gpu", "err.gpu_unknown", g))
			continue
		}
		if !slices.Contains(q.GPUs, g) {
			q.GPUs = append(q.GPUs, g)
		}
	}
	if s := v.Get("city"); s != "" {
		if _, ok := catalog.CityBySlug(s); ok {
			q.City = s
		} else {
			errs = append(errs, apperr.Field("city", "err.city_unknown", s))
		}
	}
	if s := v.Get("region"); s != "" {
		if _, ok := catalog.RegionBySlug(s); ok {
			q.Region = s
		} else {
			errs = append(errs, apperr.Field("region", "err.region_unknown", s))
		}
	}
	intParam := func(name string, lo, hi int, dst *int) {
		s := strings.TrimSpace(v.Get(name))
		if s == "" {
			return
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			errs = append(errs, apperr.Field(name, "err.int_range", lo, hi))
			return
		}
		*dst = n
	}
	intParam("min_gpus", 1, 64, &q.MinGPUs)
	intParam("min_vram_gb", 1, 1024, &q.MinVRAMGB)
	if s := strings.TrimSpace(v.Get("max_price")); s != "" {
		fen, ok := pricing.ParseYuan(s)
		if !ok || fen <= 0 {
			errs = append(errs, apperr.Field("max_price", "err.price"))
		} else {
			q.MaxPriceFen = fen
		}
	}
	if s := v.Get("from"); s != "" {
		if _, ok := catalog.CityBySlug(s); ok {
			q.From = s
		} else {
			errs = append(errs, apperr.Field("from", "err.city_unknown", s))
		}
	}
	if s := strings.TrimSpace(v.Get("max_latency_ms")); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil || f <= 0 || f > 1000 || f != f:
			errs = append(errs, apperr.Field("max_latency_ms", "err.latency_range"))
		case q.LatencyCity() == "":
			errs = append(errs, apperr.Field("max_latency_ms", "err.latency_needs_from"))
		default:
			q.MaxLatencyMS = f
		}
	}
	if s := v.Get("interconnect"); s != "" {
		if slices.Contains(catalog.Interconnects, s) {
			q.Interconnect = s
		} else {
			errs = append(errs, apperr.Field("interconnect", "err.interconnect_unknown", s))
		}
	}
	for _, p := range []struct {
		name string
		dst  *bool
	}{{"available", &q.Available}, {"student", &q.Student}, {"interruptible", &q.Interruptible}} {
		b, ok := parseBool(v.Get(p.name))
		if !ok {
			errs = append(errs, apperr.Field(p.name, "err.bool"))
			continue
		}
		*p.dst = b
	}
	if s := v.Get("sort"); s != "" {
		switch {
		case !slices.Contains(SortKeys, s):
			errs = append(errs, apperr.Field("sort", "err.sort_unknown", s))
		case s == SortLatency && q.LatencyCity() == "":
			errs = append(errs, apperr.Field("sort", "err.sort_latency_needs_city"))
		default:
			q.Sort = s
		}
	}
	intParam("page", 1, 1_000_000, &q.Page)
	if allowPerPage {
		intParam("per_page", 1, MaxPerPage, &q.PerPage)
	}
	return q, errs
}
