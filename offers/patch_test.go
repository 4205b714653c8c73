package offers

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"suanli/catalog"
	"suanli/models"
	"suanli/models/supply"
)

// market is a catalogue held as rows, changed at random the ways writers
// change offers: prices, free GPUs, discounts, bids, reports, a
// datacentre's latencies, offers listed and delisted.
type market struct {
	rng  *rand.Rand
	rows map[int64]models.OfferRow
	bids supply.OfferBids
	next int64
	dcs  []*models.Datacenter
	lats map[int64]map[string]float64
}

func newMarket(seed uint64, n int) *market {
	m := &market{rng: rand.New(rand.NewPCG(seed, 7)), rows: map[int64]models.OfferRow{}, bids: supply.OfferBids{}, lats: map[int64]map[string]float64{}}
	for _, r := range syntheticRows(n) {
		m.rows[r.ID] = r
		m.next = max(m.next, r.ID)
		if !slices.Contains(m.dcs, r.Datacenter) {
			m.dcs = append(m.dcs, r.Datacenter)
			m.lats[r.Datacenter.ID] = r.Latency
		}
	}
	// A datacentre in a city the catalogue does not know.
	m.dcs = append(m.dcs, &models.Datacenter{ID: 999, City: "atlantis", Region: "nowhere"})
	m.lats[999] = map[string]float64{"chengdu": 80}
	return m
}

// change applies one random change and returns the offers it touched.
func (m *market) change() []int64 {
	ids := slices.Sorted(maps.Keys(m.rows))
	pick := func() models.OfferRow { return m.rows[ids[m.rng.IntN(len(ids))]] }
	switch m.rng.IntN(9) {
	case 0: // a new offer
		m.next++
		r := pick()
		r.ID = m.next
		r.GPUModel = catalog.GPUModels()[m.rng.IntN(len(catalog.GPUModels()))].Slug
		r.Datacenter = m.dcs[m.rng.IntN(len(m.dcs))]
		r.Latency = m.lats[r.Datacenter.ID]
		r.DatacenterID = r.Datacenter.ID
		m.rows[r.ID] = r
		return []int64{r.ID}
	case 1: // delisted
		r := pick()
		delete(m.rows, r.ID)
		return []int64{r.ID}
	case 2: // a datacentre's latencies change: every offer in it is touched
		dc := m.dcs[m.rng.IntN(len(m.dcs))]
		lat := maps.Clone(m.lats[dc.ID])
		lat[catalog.Cities()[m.rng.IntN(len(catalog.Cities()))].Slug] = float64(1 + m.rng.IntN(60))
		m.lats[dc.ID] = lat
		var touched []int64
		for id, r := range m.rows {
			if r.Datacenter.ID == dc.ID {
				r.Latency = lat
				m.rows[id] = r
				touched = append(touched, id)
			}
		}
		return touched
	case 3: // bids on an interruptible offer
		r := pick()
		floor := int64(500 + m.rng.IntN(500))
		r.InterruptibleFloorPerGPUHourFen = &floor
		m.bids[r.ID] = []int64{floor + int64(m.rng.IntN(300))}
		m.rows[r.ID] = r
		return []int64{r.ID}
	case 4: // a report
		r := pick()
		f := float64(50 + m.rng.IntN(900))
		r.Report = &models.ReportHeadline{ID: int64(m.rng.IntN(1000)), BF16TFLOPS: &f, FP16TFLOPS: &f, Simulated: m.rng.IntN(2) == 0}
		m.rows[r.ID] = r
		return []int64{r.ID}
	case 5: // several offers at once, one of them twice
		var touched []int64
		for range 3 + m.rng.IntN(20) {
			r := pick()
			r.AvailableGPUs = m.rng.IntN(9)
			m.rows[r.ID] = r
			touched = append(touched, r.ID, r.ID)
		}
		return touched
	default: // price, discount, free GPUs, uptime: the commonest
		r := pick()
		r.PricePerGPUHourFen = 1000 + m.rng.Int64N(5000)
		r.StudentDiscountPct = []int{0, 10, 20}[m.rng.IntN(3)]
		r.AvailableGPUs = m.rng.IntN(9)
		up := 90 + float64(m.rng.IntN(1000))/100
		r.Uptime30dPct = &up
		m.rows[r.ID] = r
		return []int64{r.ID}
	}
}

// listed returns the rows among ids that are still listed.
func (m *market) listed(ids []int64) []models.OfferRow {
	var out []models.OfferRow
	for _, id := range ids {
		if r, ok := m.rows[id]; ok && !slices.ContainsFunc(out, func(o models.OfferRow) bool { return o.ID == id }) {
			out = append(out, r)
		}
	}
	return out
}

func (m *market) all() []models.OfferRow {
	return slices.SortedFunc(maps.Values(m.rows), func(a, b models.OfferRow) int { return int(a.ID - b.ID) })
}

// probeQueries are searches over every path: one partition, merged runs,
// filters, latency pages, both price views, deep pages, relaxations.
func probeQueries() []Query {
	var qs []Query
	for _, key := range SortKeys {
		for _, student := range []bool{false, true} {
			base := Query{Sort: key, From: "chengdu", StudentViewer: student, PerPage: 7}
			qs = append(qs, base)
			for _, page := range []int{1, 3, 40} {
				q := base
				q.Page = page
				q.GPUs = []string{"h100-sxm"}
				qs = append(qs, q)
				q.City = "chengdu"
				qs = append(qs, q)
				q.GPUs = []string{"h100-sxm", "rtx-4090", "a100-80g-sxm"}
				qs = append(qs, q)
				q.City = ""
				q.Available, q.MaxPriceFen, q.MinGPUs = true, 4000, 2
				qs = append(qs, q)
			}
			q := base
			q.MaxLatencyMS, q.Student, q.Interruptible = 30, true, true
			qs = append(qs, q)
			q = base
			q.GPUs, q.City, q.MaxPriceFen = []string{"b200"}, "frankfurt", 100 // nothing: relaxations
			qs = append(qs, q)
		}
	}
	return qs
}

func indexOf(s *snapshot) *Index {
	ix := &Index{}
	ix.snap.Store(s)
	return ix
}

// describe flattens a search result to compare two indexes by.
func describe(r SearchResult, err error) string {
	out := fmt.Sprintf("err=%v total=%d pages=%d:", err, r.Total, r.Pages)
	for _, o := range r.Offers {
		out += fmt.Sprintf(" %d/%d/%d/%v", o.ID, o.PricePerGPUHourFen(), o.AvailableGPUs(), o.Interruptible != nil)
	}
	for _, x := range r.Relaxations {
		out += fmt.Sprintf(" relax %s=%d %v", x.Filter, x.Count, x.Query.Values().Encode())
	}
	return out
}

// TestPatchedIndexSearchesAsAFullBuild applies random change sequences to
// a snapshot change by change (the replicas' path) and compares every
// probe search, the full price list and the cheapest offers with a
// snapshot built from scratch over the same rows.
func TestPatchedIndexSearchesAsAFullBuild(t *testing.T) {
	queries := probeQueries()
	for seed := range uint64(6) {
		m := newMarket(seed, 400+int(seed)*150)
		snap := build(m.all(), 1, m.bids, nil)
		seen := map[int64]bool{} // every id an offer had
		for id := range m.rows {
			seen[id] = true
		}
		for step := 1; step <= 150; step++ {
			touched := m.change()
			for _, id := range touched {
				seen[id] = true
			}
			snap = snap.apply(int64(step+1), touched, m.listed(touched), m.bids, nil)
			if step%25 != 0 {
				continue
			}
			patched, full := indexOf(snap), indexOf(build(m.all(), int64(step+1), m.bids, nil))
			if patched.Len() != full.Len() || patched.Len() != len(m.rows) {
				t.Fatalf("seed %d step %d: %d offers patched, %d built, %d rows", seed, step, patched.Len(), full.Len(), len(m.rows))
			}
			for _, q := range queries {
				if a, b := describe(patched.Search(q)), describe(full.Search(q)); a != b {
					t.Fatalf("seed %d step %d query %s:\npatched %s\nbuilt   %s", seed, step, q.Values().Encode(), a, b)
				}
			}
			for _, student := range []bool{false, true} {
				_, a := patched.ByPrice(student)
				_, b := full.ByPrice(student)
				if !slices.Equal(ids(a), ids(b)) {
					t.Fatalf("seed %d step %d: ByPrice(%v) differs", seed, step, student)
				}
				for _, g := range catalog.GPUModels() {
					ca, cb := patched.CheapestOffers(g.Slug, 30, student), full.CheapestOffers(g.Slug, 30, student)
					if fmt.Sprint(ca.Listed, id(ca.OnDemand), id(ca.Monthly), id(ca.Interruptible)) !=
						fmt.Sprint(cb.Listed, id(cb.OnDemand), id(cb.Monthly), id(cb.Interruptible)) {
						t.Fatalf("seed %d step %d: cheapest %s differs", seed, step, g.Slug)
					}
				}
			}
			for id := range seen {
				a, err := patched.Offer(id)
				r, listed := m.rows[id]
				switch {
				case listed && (a == nil || a.ID != id || a.PricePerGPUHourFen() != r.PricePerGPUHourFen):
					t.Fatalf("seed %d step %d: offer %d not current", seed, step, id)
				case !listed && err == nil:
					t.Fatalf("seed %d step %d: offer %d is found, but no longer listed", seed, step, id)
				}
			}
		}
	}
}

func ids(os []*Listed) []int64 {
	out := make([]int64, len(os))
	for i, o := range os {
		out[i] = o.ID
	}
	return out
}

func id(o *Listed) int64 {
	if o == nil {
		return 0
	}
	return o.ID
}

// BenchmarkPatchOneOffer100k is what a replica spends on one offer's
// changed availability at 100k offers: the in-memory patch, without the
// database read.
func BenchmarkPatchOneOffer100k(b *testing.B) {
	rows := syntheticRows(100_000)
	snap := build(rows, 1, nil, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	v := int64(1)
	cpu0 := cpuTime()
	for b.Loop() {
		r := rows[rng.IntN(len(rows))]
		r.AvailableGPUs = rng.IntN(9)
		v++
		snap = snap.apply(v, []int64{r.ID}, []models.OfferRow{r}, nil, nil)
	}
	// CPU rather than wall time: the figure the target names, and
	// one that other work on a shared machine inflates much less.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
