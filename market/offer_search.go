package market

import (
	"math"
	"slices"

	"suanli/apperr"
	"suanli/catalog"
)

// SearchResult is one page of an offer search.
type SearchResult struct {
	Query   OfferQuery
	Offers  []*ListedOffer
	Total   int
	Pages   int
	Version int64
	// Relaxations, when nothing matched, say how many offers each change of
	// one filter would bring back, most first.
	Relaxations []Relaxation
}

// Relaxation is one filter change that would let offers through.
type Relaxation struct {
	// Filter is the parameter name ("max_latency_ms", "gpu", …).
	Filter string
	// Count is how many offers match with the change.
	Count int
	// Query is the search with the change applied.
	Query OfferQuery
}

// filter identifies one filter of a query, so relaxations can leave it out.
type filter int

const (
	fNone filter = iota
	fGPU
	fCity
	fRegion
	fMinGPUs
	fMinVRAM
	fMaxPrice
	fLatency
	fInterconnect
	fAvailable
	fStudent
)

var filterNames = map[filter]string{
	fGPU: "gpu", fCity: "city", fRegion: "region", fMinGPUs: "min_gpus", fMinVRAM: "min_vram_gb",
	fMaxPrice: "max_price", fLatency: "max_latency_ms", fInterconnect: "interconnect",
	fAvailable: "available", fStudent: "student",
}

func (q *OfferQuery) active() []filter {
	var fs []filter
	add := func(on bool, f filter) {
		if on {
			fs = append(fs, f)
		}
	}
	add(len(q.GPUs) > 0, fGPU)
	add(q.City != "", fCity)
	add(q.Region != "", fRegion)
	add(q.MinGPUs > 0, fMinGPUs)
	add(q.MinVRAMGB > 0, fMinVRAM)
	add(q.MaxPriceFen > 0, fMaxPrice)
	add(q.MaxLatencyMS > 0, fLatency)
	add(q.Interconnect != "", fInterconnect)
	add(q.Available, fAvailable)
	add(q.Student, fStudent)
	return fs
}

// matches reports whether o passes every filter of q except skip.
func (q *OfferQuery) matches(o *ListedOffer, skip filter) bool {
	if q.DatacenterID != 0 && o.DatacenterID != q.DatacenterID {
		return false
	}
	if skip != fGPU && len(q.GPUs) > 0 && !slices.Contains(q.GPUs, o.GPUModel) {
		return false
	}
	if skip != fCity && q.City != "" && o.Datacenter.City != q.City {
		return false
	}
	if skip != fRegion && q.Region != "" && o.Datacenter.Region != q.Region {
		return false
	}
	if skip != fMinGPUs && o.MaxGPUs < q.MinGPUs {
		return false
	}
	if skip != fMinVRAM && o.GPU.VRAMGB < q.MinVRAMGB {
		return false
	}
	if skip != fMaxPrice && q.MaxPriceFen > 0 && o.PricePerGPUHourFen > q.MaxPriceFen {
		return false
	}
	if skip != fLatency && q.MaxLatencyMS > 0 {
		ms, ok := o.Latency[q.LatencyCity()]
		if !ok || ms > q.MaxLatencyMS {
			return false
		}
	}
	if skip != fInterconnect && q.Interconnect != "" && !catalog.InterconnectMatches(o.Interconnect, q.Interconnect) {
		return false
	}
	if skip != fAvailable && q.Available && o.AvailableGPUs == 0 {
		return false
	}
	if skip != fStudent && q.Student && o.StudentDiscountPct == 0 {
		return false
	}
	return true
}

// candidates returns the offers to scan, already in sort order when the
// sort key is static; sorted reports which.
func (s *snapshot) candidates(q *OfferQuery) (list []*ListedOffer, sorted bool) {
	key := q.Sort
	if key == SortMeasured {
		// No benchmark reports are stored yet, so "measured" orders by
		// nominal price per TFLOPS; the page says so.
		key = SortPricePerTFLOP
	}
	per, static := s.sorted[key]
	if !static {
		per = s.sorted[SortPrice]
	}
	if len(q.GPUs) == 1 {
		return per[q.GPUs[0]], static
	}
	if len(q.GPUs) == 0 {
		return per[""], static
	}
	var out []*ListedOffer
	for _, g := range q.GPUs {
		out = append(out, per[g]...)
	}
	return out, false
}

// Search returns the page of offers matching q. A page past the end is an
// EINVALID error on "page" (with the result of page 1, so pages can show
// it beside the message).
func (ix *OfferIndex) Search(q OfferQuery) (SearchResult, error) {
	s := ix.snap.Load()
	if q.PerPage <= 0 {
		q.PerPage = DefaultPerPage
	}
	if q.Page <= 0 {
		q.Page = 1
	}
	list, sorted := s.candidates(&q)
	from := (q.Page - 1) * q.PerPage
	res := SearchResult{Query: q, Version: s.version}
	if sorted {
		// Pre-sorted: count every match but keep only the requested page.
		for _, o := range list {
			if !q.matches(o, fNone) {
				continue
			}
			if res.Total >= from && len(res.Offers) < q.PerPage {
				res.Offers = append(res.Offers, o)
			}
			res.Total++
		}
	} else {
		var all []*ListedOffer
		for _, o := range list {
			if q.matches(o, fNone) {
				all = append(all, o)
			}
		}
		slices.SortFunc(all, comparator(q.Sort, q.LatencyCity()))
		res.Total = len(all)
		if from < len(all) {
			res.Offers = all[from:min(from+q.PerPage, len(all))]
		}
	}
	res.Pages = (res.Total + q.PerPage - 1) / q.PerPage
	if res.Total == 0 {
		res.Relaxations = s.relaxations(q)
	}
	if q.Page > 1 && q.Page > res.Pages {
		first := q
		first.Page = 1
		r, _ := ix.Search(first)
		return r, invalid("page", "err.page_past_end", q.Page, max(res.Pages, 1))
	}
	return res, nil
}

// relaxations tries leaving out, or loosening to the nearest value that
// lets something through, each active filter in turn.
func (s *snapshot) relaxations(q OfferQuery) []Relaxation {
	all := s.sorted[SortPrice][""]
	var out []Relaxation
	for _, f := range q.active() {
		rq := q
		rq.Page = 1
		// Nearest loosened value for numeric filters, among offers that
		// pass every other filter.
		best := math.Inf(1)
		if f == fMinGPUs || f == fMinVRAM {
			best = math.Inf(-1)
		}
		n := 0
		for _, o := range all {
			if !q.matches(o, f) {
				continue
			}
			n++
			switch f {
			case fLatency:
				if ms, ok := o.Latency[q.LatencyCity()]; ok {
					best = math.Min(best, ms)
				}
			case fMaxPrice:
				best = math.Min(best, float64(o.PricePerGPUHourFen))
			case fMinGPUs:
				best = math.Max(best, float64(o.MaxGPUs))
			case fMinVRAM:
				best = math.Max(best, float64(o.GPU.VRAMGB))
			}
		}
		if n == 0 {
			continue
		}
		switch f {
		case fGPU:
			rq.GPUs = nil
		case fCity:
			rq.City = ""
			if rq.From == "" {
				// The latency filter was measured from this city; keep it.
				rq.From = q.City
			}
		case fRegion:
			rq.Region = ""
		case fInterconnect:
			rq.Interconnect = ""
		case fAvailable:
			rq.Available = false
		case fStudent:
			rq.Student = false
		case fLatency:
			if math.IsInf(best, 1) {
				continue
			}
			rq.MaxLatencyMS = math.Ceil(best)
		case fMaxPrice:
			rq.MaxPriceFen = int64(math.Ceil(best/100) * 100) // whole yuan
		case fMinGPUs:
			rq.MinGPUs = int(best)
		case fMinVRAM:
			rq.MinVRAMGB = int(best)
		}
		// Count what the loosened query really lets through.
		count := 0
		for _, o := range all {
			if rq.matches(o, fNone) {
				count++
			}
		}
		if count > 0 {
			out = append(out, Relaxation{Filter: filterNames[f], Count: count, Query: rq})
		}
	}
	slices.SortStableFunc(out, func(a, b Relaxation) int { return b.Count - a.Count })
	return out
}

// ErrPagePastEnd reports whether err is the page-past-the-end error.
func ErrPagePastEnd(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Field == "page"
}
