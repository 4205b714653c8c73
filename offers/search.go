package offers

import (
	"cmp"
	"math"
	"slices"
	"suanli/apperr"
)

// SearchResult is one page of an offer search.
type SearchResult struct {
	Query  Query
	Offers []*Listed
	Total  int
	Pages  int
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
	Query Query
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
	fInterruptible
)

var filterNames = map[filter]string{
	fGPU: "gpu", fCity: "city", fRegion: "region", fMinGPUs: "min_gpus", fMinVRAM: "min_vram_gb",
	fMaxPrice: "max_price", fLatency: "max_latency_ms", fInterconnect: "interconnect",
	fAvailable: "available", fStudent: "student", fInterruptible: "interruptible",
}

func (q *Query) active() []filter {
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
	add(q.Interruptible, fInterruptible)
	return fs
}

// compiled is a query numbered like the snapshot's offer keys.
type compiled struct {
	gpuMask                    uint64
	anyGPU, hasCity, hasRegion bool
	city, region, latCity      uint8
	hasLat, hasIC, hasDC       bool
	available, student         bool
	interruptible              bool
	icMask                     uint8 // bit i set: interconnect code i allowed
	minGPUs                    uint8
	minVRAM                    uint16
	maxPrice                   int64
	maxLat                     float32
	dc                         uint16
	impossible                 bool // a value the snapshot does not know
	// view is the price the viewer pays, which orders and max_price use.
	view priceView
}

func (s *snapshot) compile(q *Query) compiled {
	c := compiled{anyGPU: len(q.GPUs) == 0, available: q.Available, student: q.Student, interruptible: q.Interruptible,
		minGPUs: uint8(min(q.MinGPUs, 255)), minVRAM: uint16(min(q.MinVRAMGB, 65535)), maxPrice: q.MaxPriceFen,
		view: viewOf(q.StudentViewer)}
	for _, g := range q.GPUs {
		if i, ok := s.gpuIdx[g]; ok {
			c.gpuMask |= 1 << i
		}
	}
	if q.City != "" {
		c.hasCity, c.city = true, idx8(s.cityIdx, q.City)
		c.impossible = c.city == none
	}
	if q.Region != "" {
		c.hasRegion, c.region = true, idx8(s.regionIdx, q.Region)
	}
	if q.MaxLatencyMS > 0 {
		c.hasLat, c.maxLat = true, float32(q.MaxLatencyMS)
	}
	c.latCity = idx8(s.cityIdx, q.LatencyCity())
	if c.hasLat && c.latCity == none {
		c.impossible = true
	}
	if q.Interconnect != "" {
		c.hasIC = true
		switch q.Interconnect {
		case "nvlink":
			c.icMask = 1<<1 | 1<<2
		case "infiniband":
			c.icMask = 1 << 2
		case "pcie":
			c.icMask = 1 << 0
		}
	}
	if q.DatacenterID != 0 {
		dc, ok := s.dcIdx[q.DatacenterID]
		c.hasDC, c.dc, c.impossible = true, dc, c.impossible || !ok
	}
	return c
}

// latency returns the published RTT from the query's latency city.
func (c *compiled) latency(s *snapshot, k *offerKey) (float32, bool) {
	if c.latCity == none {
		return 0, false
	}
	ms := s.lat[k.dc][c.latCity]
	return ms, ms >= 0
}

// match reports whether an offer passes every filter except skip.
func (c *compiled) match(s *snapshot, k *offerKey, skip filter) bool {
	switch {
	case c.impossible,
		c.hasDC && k.dc != c.dc,
		skip != fGPU && !c.anyGPU && c.gpuMask&(1<<k.gpu) == 0,
		skip != fCity && c.hasCity && k.city != c.city,
		skip != fRegion && c.hasRegion && k.region != c.region,
		skip != fMinGPUs && k.maxGPUs < c.minGPUs,
		skip != fMinVRAM && k.vram < c.minVRAM,
		skip != fMaxPrice && c.maxPrice > 0 && k.prices[c.view] > c.maxPrice,
		skip != fInterconnect && c.hasIC && c.icMask&(1<<k.ic) == 0,
		skip != fAvailable && c.available && !k.available,
		skip != fStudent && c.student && !k.student,
		skip != fInterruptible && c.interruptible && !k.interruptible:
		return false
	}
	if skip != fLatency && c.hasLat {
		ms, ok := c.latency(s, k)
		return ok && ms <= c.maxLat
	}
	return true
}

// candidates returns the runs to scan: the partitions of the query's
// models and city, each in the sort key's order when the key is static
// (sorted), else in price order.
func (s *snapshot) candidates(q *Query) (runs []run, sorted bool) {
	ki, sorted := sortIndex(q.Sort)
	if !sorted {
		ki, _ = sortIndex(SortPrice)
	}
	v := viewOf(q.StudentViewer)
	var gpus []int
	if len(q.GPUs) == 0 {
		for g := range len(s.gpuIdx) {
			gpus = append(gpus, g)
		}
	}
	for _, slug := range q.GPUs {
		if g, ok := s.gpuIdx[slug]; ok && !slices.Contains(gpus, int(g)) {
			gpus = append(gpus, int(g))
		}
	}
	cities := []int{}
	switch c := idx8(s.cityIdx, q.City); {
	case q.City == "":
		for c := range s.cityParts {
			cities = append(cities, c)
		}
	case c != none:
		cities = append(cities, int(c))
	}
	for _, g := range gpus {
		for _, c := range cities {
			if p := s.parts[g*s.cityParts+c]; p != nil {
				runs = append(runs, run{ents: p.ents, ord: p.ord[v][ki]})
			}
		}
	}
	return runs, sorted
}

// mergePage fills res with the page [from, from+n) of the matches in
// runs, each in cmpFn order, and their total: one pass counts, and the
// merge stops at the page's end. A heap of the runs' heads picks the next
// match, so many runs (every model in every city) cost log(runs) a step.
func (s *snapshot) mergePage(runs []run, c *compiled, q *Query, from, n int, cmpFn func(a, b *entry) int, res *SearchResult) {
	plain := q.DatacenterID == 0 && !slices.ContainsFunc(q.active(), func(f filter) bool { return f != fGPU && f != fCity })
	for _, r := range runs {
		if plain {
			res.Total += r.len() // the runs are exactly the matches
			continue
		}
		for i := range r.ord {
			if c.match(s, &r.at(i).k, fNone) {
				res.Total++
			}
		}
	}
	if from >= res.Total {
		return
	}
	heads := make([]int, len(runs))
	skip := func(r int) { // moves run r's head to its next match
		for !plain && heads[r] < runs[r].len() && !c.match(s, &runs[r].at(heads[r]).k, fNone) {
			heads[r]++
		}
	}
	// h holds the runs that have a head, as a binary min-heap by head.
	h := make([]int, 0, len(runs))
	less := func(a, b int) bool { return cmpFn(runs[h[a]].at(heads[h[a]]), runs[h[b]].at(heads[h[b]])) < 0 }
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(h) && less(l, m) {
				m = l
			}
			if l+1 < len(h) && less(l+1, m) {
				m = l + 1
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for r := range runs {
		if skip(r); heads[r] < runs[r].len() {
			h = append(h, r)
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for pos := 0; pos < from+n && len(h) > 0; pos++ {
		best := h[0]
		if pos >= from {
			res.Offers = append(res.Offers, runs[best].at(heads[best]).o)
		}
		heads[best]++
		if skip(best); heads[best] >= runs[best].len() {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
}

// onlyPartitionFilters reports whether q filters by nothing but what the
// index partitions its sorted lists by: at most one GPU model and a city.
func (q *Query) onlyPartitionFilters() bool {
	for _, f := range q.active() {
		if f != fGPU && f != fCity {
			return false
		}
	}
	return len(q.GPUs) <= 1 && q.DatacenterID == 0
}

// Search returns the page of offers matching q. A page past the end is an
// EINVALID error on "page" (with the result of page 1, so pages can show
// it beside the message).
func (ix *Index) Search(q Query) (SearchResult, error) {
	s := ix.snap.Load()
	if q.PerPage <= 0 {
		q.PerPage = DefaultPerPage
	}
	if q.Page <= 0 {
		q.Page = 1
	}
	c := s.compile(&q)
	runs, sorted := s.candidates(&q)
	if c.impossible {
		runs = nil
	}
	from := (q.Page - 1) * q.PerPage
	res := SearchResult{Query: q, Offers: make([]*Listed, 0, q.PerPage)}
	switch {
	case len(runs) == 0:
	case sorted && len(runs) == 1 && q.onlyPartitionFilters():
		// The run is exactly the matches, in order: no scan at all.
		r := runs[0]
		res.Total = r.len()
		for i := from; i < min(from+q.PerPage, r.len()); i++ {
			res.Offers = append(res.Offers, r.at(i).o)
		}
	case sorted && len(runs) == 1:
		// Pre-sorted: count every match but keep only the requested page.
		r := runs[0]
		for i := range r.ord {
			e := r.at(i)
			if !c.match(s, &e.k, fNone) {
				continue
			}
			if res.Total >= from && len(res.Offers) < q.PerPage {
				res.Offers = append(res.Offers, e.o)
			}
			res.Total++
		}
	case sorted:
		// Several partitions, each pre-sorted: merge them up to the page.
		s.mergePage(runs, &c, &q, from, q.PerPage, s.entryComparator(q.Sort, &c), &res)
	case q.Sort == SortLatency:
		// The runs are in price order and latency depends only on the
		// datacentre: bucket the matches per datacentre, then take the
		// buckets in latency order.
		s.latencyPage(runs, &c, from, q.PerPage, &res)
	default:
		var all []*entry
		for _, r := range runs {
			for i := range r.ord {
				if e := r.at(i); c.match(s, &e.k, fNone) {
					all = append(all, e)
				}
			}
		}
		slices.SortFunc(all, s.entryComparator(q.Sort, &c))
		res.Total = len(all)
		for i := from; i < min(from+q.PerPage, len(all)); i++ {
			res.Offers = append(res.Offers, all[i].o)
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
		return r, apperr.Field("page", "err.page_past_end", q.Page, max(res.Pages, 1))
	}
	return res, nil
}

// relaxations tries leaving out, or loosening to the nearest value that
// lets something through, each active filter in turn.
func (s *snapshot) relaxations(q Query) []Relaxation {
	// In the viewer's price view (compile's), so that the loosened
	// max_price is a price the viewer is shown. Counting needs no order:
	// every partition's entries, as they lie.
	c := s.compile(&q)
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
		for k := range s.keys() {
			if !c.match(s, k, f) {
				continue
			}
			n++
			switch f {
			case fLatency:
				if ms, ok := c.latency(s, k); ok {
					best = math.Min(best, float64(ms))
				}
			case fMaxPrice:
				best = math.Min(best, float64(k.prices[c.view]))
			case fMinGPUs:
				best = math.Max(best, float64(k.maxGPUs))
			case fMinVRAM:
				best = math.Max(best, float64(k.vram))
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
		case fInterruptible:
			rq.Interruptible = false
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
		rc := s.compile(&rq)
		count := 0
		for k := range s.keys() {
			if rc.match(s, k, fNone) {
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

// entryComparator orders entries by a sort key using the compact keys
// (latency comes from the per-datacentre table, not a map per offer):
// sorting thousands of matches by latency was a map lookup per comparison.
// Prices are those of the price view c.view (the entries' own). The
// index's pre-sorted lists use it too, so merged runs keep their order.
func (s *snapshot) entryComparator(key string, c *compiled) func(a, b *entry) int {
	v := c.view
	// Explicit ifs, not cmp.Or: cmp.Or evaluates every comparison, and the
	// later ones are rarely needed.
	byPrice := func(a, b *entry) int {
		if pa, pb := a.k.prices[v], b.k.prices[v]; pa != pb {
			return cmp.Compare(pa, pb)
		}
		return cmp.Compare(a.k.id, b.k.id)
	}
	switch key {
	case SortLatency:
		lat := func(e *entry) float32 {
			if ms, ok := c.latency(s, &e.k); ok {
				return ms
			}
			return math.MaxFloat32
		}
		return func(a, b *entry) int {
			if la, lb := lat(a), lat(b); la != lb {
				return cmp.Compare(la, lb)
			}
			return byPrice(a, b)
		}
	case SortVRAM:
		return func(a, b *entry) int {
			if a.k.vram != b.k.vram {
				return cmp.Compare(b.k.vram, a.k.vram)
			}
			return byPrice(a, b)
		}
	case SortPricePerTFLOP:
		return func(a, b *entry) int {
			if pa, pb := a.o.perTFLOP(v), b.o.perTFLOP(v); pa != pb {
				return cmp.Compare(pa, pb)
			}
			return byPrice(a, b)
		}
	case SortMeasured:
		return func(a, b *entry) int {
			if ta, tb := a.o.tier, b.o.tier; ta != tb {
				return cmp.Compare(ta, tb)
			}
			if ma, mb := a.o.measured(v), b.o.measured(v); ma != mb {
				return cmp.Compare(ma, mb)
			}
			return byPrice(a, b)
		}
	case SortReliability:
		return func(a, b *entry) int {
			if ua, ub := a.o.uptimeKey(), b.o.uptimeKey(); ua != ub {
				return cmp.Compare(ub, ua)
			}
			return byPrice(a, b)
		}
	case SortInterruptible:
		return func(a, b *entry) int {
			if ba, bb := a.o.bidKey, b.o.bidKey; ba != bb {
				return cmp.Compare(ba, bb)
			}
			return byPrice(a, b)
		}
	}
	return byPrice
}

// latencyPage fills res with the page [from, from+n) of the runs'
// matches in (latency, price, id) order, and the total. Latency depends
// only on the datacentre: a first scan counts the matches per
// datacentre, keeping none of them, and groups the datacentres by
// latency; a second scan keeps, for each group the page reaches, only
// the cheapest entries it can show (a bounded heap), so that a broad
// search (a model's matches in every city, ~80k at 1M offers) allocates
// for its page rather than for every match.
func (s *snapshot) latencyPage(runs []run, c *compiled, from, n int, res *SearchResult) {
	counts := make([]int, len(s.lat))
	for _, r := range runs {
		for i := range r.ord {
			if e := r.at(i); c.match(s, &e.k, fNone) {
				counts[e.k.dc]++
				res.Total++
			}
		}
	}
	type group struct {
		ms   float32
		dcs  []int
		size int
	}
	var groups []group
	for dc, cnt := range counts {
		if cnt == 0 {
			continue
		}
		ms, ok := c.latency(s, &offerKey{dc: uint16(dc)})
		if !ok {
			ms = math.MaxFloat32
		}
		i := slices.IndexFunc(groups, func(g group) bool { return g.ms == ms })
		if i < 0 {
			groups = append(groups, group{ms: ms})
			i = len(groups) - 1
		}
		groups[i].dcs = append(groups[i].dcs, dc)
		groups[i].size += cnt
	}
	slices.SortFunc(groups, func(a, b group) int { return cmp.Compare(a.ms, b.ms) })
	// The groups the page reaches, each with the entries it can show:
	// those up to the page's end. heapOf[dc] is its group's heap, -1 for
	// a datacentre the page does not reach.
	byPrice := s.entryComparator(SortPrice, c)
	heapOf := make([]int, len(s.lat))
	for i := range heapOf {
		heapOf[i] = -1
	}
	var heaps []boundedHeap
	var skip []int // per heap, how many of its group lie before the page
	pos := 0
	for _, g := range groups {
		if pos >= from+n {
			break
		}
		if pos+g.size > from {
			for _, dc := range g.dcs {
				heapOf[dc] = len(heaps)
			}
			heaps = append(heaps, boundedHeap{max: min(g.size, from+n-pos), cmp: byPrice})
			skip = append(skip, max(from-pos, 0))
		}
		pos += g.size
	}
	if len(heaps) == 0 {
		return
	}
	for _, r := range runs {
		for i := range r.ord {
			if e := r.at(i); heapOf[e.k.dc] >= 0 && c.match(s, &e.k, fNone) {
				heaps[heapOf[e.k.dc]].push(e)
			}
		}
	}
	for i := range heaps {
		for _, e := range heaps[i].sorted()[skip[i]:] {
			if len(res.Offers) == n {
				return
			}
			res.Offers = append(res.Offers, e.o)
		}
	}
}

// boundedHeap keeps the max smallest entries pushed, by cmp: a max-heap
// whose root is the largest kept.
type boundedHeap struct {
	max int
	cmp func(a, b *entry) int
	es  []*entry
}

func (h *boundedHeap) push(e *entry) {
	if len(h.es) < h.max {
		h.es = append(h.es, e)
		for i := len(h.es) - 1; i > 0; {
			p := (i - 1) / 2
			if h.cmp(h.es[p], h.es[i]) >= 0 {
				break
			}
			h.es[p], h.es[i] = h.es[i], h.es[p]
			i = p
		}
		return
	}
	if h.max == 0 || h.cmp(e, h.es[0]) >= 0 {
		return
	}
	h.es[0] = e
	for i := 0; ; {
		l, big := 2*i+1, i
		if l < len(h.es) && h.cmp(h.es[l], h.es[big]) > 0 {
			big = l
		}
		if r := l + 1; r < len(h.es) && h.cmp(h.es[r], h.es[big]) > 0 {
			big = r
		}
		if big == i {
			return
		}
		h.es[i], h.es[big] = h.es[big], h.es[i]
		i = big
	}
}

// sorted returns the kept entries in cmp order (reordering the heap).
func (h *boundedHeap) sorted() []*entry {
	slices.SortFunc(h.es, h.cmp)
	return h.es
}

// keys yields every listed offer's key, in no order.
func (s *snapshot) keys() func(yield func(*offerKey) bool) {
	return func(yield func(*offerKey) bool) {
		for _, p := range s.parts {
			if p == nil {
				continue
			}
			for i := range p.ents {
				if !yield(&p.ents[i].k) {
					return
				}
			}
		}
	}
}
