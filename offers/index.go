package offers

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/models"
	"suanli/models/supply"
	"suanli/pricing"
)

// Listed is an offer as the search shows it: the stored offer, its
// datacentre and provider, its catalogue model and derived figures.
type Listed struct {
	models.OfferRow
	GPU *catalog.GPUModel
	// PricePerTFLOPFen is the on-demand price per GPU-hour divided by the
	// model's nominal tensor TFLOPS (BF16, or FP16 without BF16).
	PricePerTFLOPFen float64
	// PricePerMeasuredTFLOPFen is the same price divided by the tensor
	// TFLOPS per GPU that the node's latest benchmark report measured; 0
	// when there is no report or it lacks the figure.
	PricePerMeasuredTFLOPFen float64
	// keys are the orders that depend on the price, precomputed for each
	// price view (the list price, and the student price lab members pay).
	keys [nViews]priceKeys
	// uptimeKey is the node's 30-day uptime in percent, -1 when unknown;
	// tier is the offer's group in the measured order (MeasuredTier).
	uptimeKey float64
	tier      MeasuredTier
	// Interruptible is the offer's floor and clearing price for
	// interruptible renting, nil when it takes no bids; bidKey orders
	// by it (SortInterruptible).
	Interruptible *Interruptible
	bidKey        int64
	// WitnessStatus is the benchmark status of the offer's report judged
	// with its node's independent witnesses (see Index.Judge); "" when
	// none has measured, and the report's own status stands.
	WitnessStatus string
	// Rendered lets views cache output derived from this offer alone. An
	// offer in a snapshot never changes (a change makes a new snapshot), so
	// neither does its HTML; the cache goes with the snapshot.
	Rendered sync.Map
}

// priceView names the price that an index list orders and filters by:
// everyone sees the list price except confirmed members of approved labs,
// who pay (and are shown) each offer's student price.
type priceView uint8

const (
	listView priceView = iota
	studentView
	nViews
)

// priceKeys are an offer's price-dependent sort keys in one price view.
type priceKeys struct {
	// price is the on-demand price per GPU-hour in fen.
	price int64
	// perTFLOP is price over the nominal tensor TFLOPS; measured is price
	// over the measured TFLOPS, or perTFLOP for an unmeasured offer (which
	// sorts after every measured one).
	perTFLOP, measured float64
}

// PriceFen is the on-demand price per GPU-hour the viewer pays: the
// student price when student (a confirmed member of an approved lab), else
// the list price. Lists show it, and sort and filter by it.
func (o *Listed) PriceFen(student bool) int64 {
	return o.keys[viewOf(student)].price
}

func viewOf(student bool) priceView {
	if student {
		return studentView
	}
	return listView
}

// StudentPriceFen is an offer's on-demand price per GPU-hour for a
// confirmed member of an approved lab: the list price less the offer's
// own student discount.
func StudentPriceFen(o *models.Offer) int64 {
	return UnitPriceFen(o, pricing.OnDemand, true)
}

// LatencyFrom returns the published latency from city in ms.
func (o *Listed) LatencyFrom(city string) (float64, bool) {
	ms, ok := o.Latency[city]
	return ms, ok
}

// Index keeps every listed offer in memory, pre-sorted by each static
// sort key overall and per GPU model, so a search never scans rows through
// the database driver. Writers bump the offers version in the same
// transaction as their change; Refresh reloads when it moves. A snapshot is
// immutable once published, so searches need no lock.
type Index struct {
	db     *models.DB
	snap   atomic.Pointer[snapshot]
	reload sync.Mutex
	// Judge, when set (before the first Refresh), gives each load the
	// benchmark status of offers whose report independent witnesses
	// judged (benchmarks.JudgeOffers), by offer id: Listed.WitnessStatus.
	// New witness results move the offers version.
	Judge func(context.Context, []models.OfferRow) (map[int64]string, error)
}

type snapshot struct {
	version int64
	byID    map[int64]*Listed
	// sorted[view][key][""] is every offer, sorted[view][key][slug] one
	// model's, sorted[view][key]["@"+city] one city's and
	// sorted[view][key][slug+"@"+city] one model's in one city (the
	// commonest search: "H100s in Chengdu"), each ordered by the view's
	// prices. Each entry carries a compact copy of the filter fields (its
	// price is the view's), so a search scans contiguous memory instead of
	// chasing a pointer per offer. The student view aliases the list view
	// when no offer has a student discount.
	sorted [nViews]map[string]map[string][]entry
	// Dense numbering of the values filters compare.
	gpuIdx, cityIdx, regionIdx map[string]uint8
	dcIdx                      map[int64]uint16
	// lat[dc][city] is the published RTT in ms, or -1 when none is published.
	lat [][]float32
}

// entry is one offer in a sorted list: its filter key and the offer.
type entry struct {
	k offerKey
	o *Listed
}

// offerKey holds what the filters test, densely numbered.
type offerKey struct {
	id        int64 // the offer's id: the last tie-break of every order
	price     int64 // per GPU-hour in the list's price view
	vram      uint16
	dc        uint16
	gpu       uint8
	city      uint8
	region    uint8
	ic        uint8
	maxGPUs   uint8
	student   bool
	available bool
	// interruptible: the offer takes bids (the interruptible filter).
	interruptible bool
}

// none numbers a value the snapshot does not know (it never matches).
const none = 255

// staticSorts are the keys whose order does not depend on the query. A
// key's list may alias an earlier one's when the snapshot's data makes
// their orders equal (see build).
var staticSorts = []string{SortPrice, SortPricePerTFLOP, SortVRAM, SortMeasured, SortReliability, SortInterruptible}

// BelowExpectedShare is the share of what a model really reaches (its
// catalogue ExpectedPct of nominal: about 80 % on Hopper, 87 % on the
// A100 SXM, 78 % on the B200 per ml-engineering's MAMF table) below which
// a benchmark report is flagged on its offers: 85 % of it, wider than the
// 5 % spread between GPUs of one node and a sustained run's thermal loss.
const BelowExpectedShare = 0.85

// FlagBelowPct is the share of nominal, in percent, below which a report
// of model m is flagged: BelowExpectedShare of what the model reaches
// (68 % of nominal on an H100 SXM, 74 % on an A100 SXM).
func FlagBelowPct(m *catalog.GPUModel) float64 {
	return m.ExpectedPct * BelowExpectedShare
}

// ReportFlagged reports whether a benchmark report of model m measured
// less than FlagBelowPct of nominal. A refused report has no figure and
// is never flagged (it says it was refused instead).
func ReportFlagged(m *catalog.GPUModel, r *models.ReportHeadline) bool {
	return m != nil && r != nil && !r.Refused && r.PctOfNominal != nil && *r.PctOfNominal < FlagBelowPct(m)
}

// MeasuredTier is an offer's group in the measured order (sort=measured):
// offers measured on real GPUs first, by price per measured TFLOPS; then
// offers whose figures are simulated, by their own simulated figure, so
// that a simulated figure never ranks among (or above) measured ones;
// then the unmeasured, by price per nominal TFLOPS: no report, no tensor
// figure, or a report the server refused (never used as a measurement).
type MeasuredTier uint8

// Measured tiers, in order.
const (
	TierMeasured MeasuredTier = iota
	TierSimulated
	TierUnmeasured
)

// MeasuredTier is the offer's group in the measured order.
func (o *Listed) MeasuredTier() MeasuredTier { return o.tier }

// measuredTierOf is the tier of an offer of model m with report r.
func measuredTierOf(m *catalog.GPUModel, r *models.ReportHeadline) MeasuredTier {
	switch {
	case measuredTFLOPS(m, r) <= 0:
		return TierUnmeasured
	case r.Simulated:
		return TierSimulated
	}
	return TierMeasured
}

// measuredTFLOPS is the tensor TFLOPS per GPU a report measured, matching
// the nominal figure price per TFLOPS uses (BF16, or FP16 for models
// without BF16); 0 when the report lacks it or was refused.
func measuredTFLOPS(m *catalog.GPUModel, r *models.ReportHeadline) float64 {
	if r == nil || r.Refused {
		return 0
	}
	f := r.BF16TFLOPS
	if m.BF16TFLOPS == 0 {
		f = r.FP16TFLOPS
	}
	if f == nil || *f <= 0 {
		return 0
	}
	return *f
}

// NewIndex returns an empty index over db; call Refresh to load it.
func NewIndex(db *models.DB) *Index {
	ix := &Index{db: db}
	ix.snap.Store(build(nil, 0, nil))
	return ix
}

// Refresh reloads the index if the offers version in the database differs
// from the loaded one. It reports whether it reloaded.
func (ix *Index) Refresh(ctx context.Context) (bool, error) {
	v, err := ix.db.OffersVersion(ctx)
	if err != nil {
		return false, err
	}
	if v == ix.snap.Load().version {
		return false, nil
	}
	ix.reload.Lock()
	defer ix.reload.Unlock()
	if v == ix.snap.Load().version {
		return false, nil
	}
	start := time.Now()
	rows, version, err := ix.db.ListedOffers(ctx)
	if err != nil {
		return false, fmt.Errorf("load offers: %w", err)
	}
	// The bids of the offers' live interruptible rentals give their
	// clearing prices: one more query per load. A bid that changes moves
	// the offers version, so a reload follows.
	running, err := supply.LiveBidsByOffer(ctx, ix.db)
	if err != nil {
		return false, fmt.Errorf("load bids: %w", err)
	}
	snap := build(rows, version, running)
	if ix.Judge != nil {
		statuses, err := ix.Judge(ctx, rows)
		if err != nil {
			return false, fmt.Errorf("judge offers: %w", err)
		}
		for id, st := range statuses {
			if o := snap.byID[id]; o != nil {
				o.WitnessStatus = st
			}
		}
	}
	ix.snap.Store(snap)
	slog.Debug("offer index reloaded", "offers", len(rows), "version", version, "took", time.Since(start))
	return true, nil
}

// Run refreshes the index every interval until ctx ends, so changes made by
// other processes (workers, replicas, admin commands) show up.
func (ix *Index) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := ix.Refresh(ctx); err != nil && ctx.Err() == nil {
				slog.Error("offer index refresh", "err", err)
			}
		}
	}
}

// Len returns the number of listed offers in the index.
func (ix *Index) Len() int { return len(ix.snap.Load().byID) }

func build(rows []models.OfferRow, version int64, running supply.OfferBids) *snapshot {
	s := &snapshot{
		version: version, byID: make(map[int64]*Listed, len(rows)),
		gpuIdx: map[string]uint8{}, cityIdx: map[string]uint8{}, regionIdx: map[string]uint8{}, dcIdx: map[int64]uint16{},
	}
	for i, m := range catalog.GPUModels() {
		s.gpuIdx[m.Slug] = uint8(i)
	}
	for i, c := range catalog.Cities() {
		s.cityIdx[c.Slug] = uint8(i)
	}
	for i, r := range catalog.Regions() {
		s.regionIdx[r.Slug] = uint8(i)
	}
	var all [nViews][]entry
	for v := range all {
		all[v] = make([]entry, 0, len(rows))
	}
	gpus := map[string]*catalog.GPUModel{}
	for _, m := range catalog.GPUModels() {
		gpus[m.Slug] = &m
	}
	anyMeasured, anyUptime, anyStudent, anyBids := false, false, false, false
	for _, r := range rows {
		m, ok := gpus[r.GPUModel]
		if !ok {
			slog.Warn("offer with a GPU model missing from the catalogue", "offer", r.ID, "gpu", r.GPUModel)
			continue
		}
		o := &Listed{OfferRow: r, GPU: m, PricePerTFLOPFen: float64(r.PricePerGPUHourFen) / m.TensorTFLOPS(), uptimeKey: -1,
			tier: measuredTierOf(m, r.Report)}
		measured := measuredTFLOPS(m, r.Report)
		if measured > 0 {
			o.PricePerMeasuredTFLOPFen = float64(r.PricePerGPUHourFen) / measured
			anyMeasured = true
		}
		for v, price := range [nViews]int64{listView: r.PricePerGPUHourFen, studentView: StudentPriceFen(&r.Offer)} {
			k := priceKeys{price: price, perTFLOP: float64(price) / m.TensorTFLOPS()}
			k.measured = k.perTFLOP
			if measured > 0 {
				k.measured = float64(price) / measured
			}
			o.keys[v] = k
		}
		anyStudent = anyStudent || o.keys[studentView].price != o.keys[listView].price
		o.Interruptible = interruptibleOf(&r.Offer, running[r.ID])
		o.bidKey = bidKey(o.Interruptible)
		anyBids = anyBids || o.Interruptible != nil
		if r.Uptime30dPct != nil {
			o.uptimeKey = *r.Uptime30dPct
			anyUptime = true
		}
		s.byID[r.ID] = o
		k := s.key(o)
		for v := range all {
			k.price = o.keys[v].price
			all[v] = append(all[v], entry{k: k, o: o})
		}
	}
	// The partitions' sizes are the same in every list: count them once,
	// so that each partition is allocated once at its size.
	sizes := s.partitionSizes(all[listView])
	// The views share nothing they write: build them side by side.
	var wg sync.WaitGroup
	for v := range nViews {
		if v == studentView && !anyStudent {
			continue // every student price is the list price: aliased below
		}
		lists := map[string]map[string][]entry{}
		s.sorted[v] = lists
		wg.Go(func() {
			for _, key := range staticSorts {
				// Without any report (uptime) the measured (reliability)
				// order is the nominal price per TFLOPS (price) order:
				// share its lists.
				switch {
				case key == SortMeasured && !anyMeasured:
					continue
				case key == SortReliability && !anyUptime:
					continue
				case key == SortInterruptible && !anyBids:
					continue
				}
				// The searches' own comparator, so that merging pre-sorted
				// runs (mergePage) keeps their order; it reads the compact
				// keys, chasing no pointer for the price and VRAM orders.
				sorted := slices.Clone(all[v])
				slices.SortFunc(sorted, s.entryComparator(key, &compiled{view: v}))
				lists[key] = s.partition(sorted, sizes)
			}
			if !anyMeasured {
				lists[SortMeasured] = lists[SortPricePerTFLOP]
			}
			if !anyUptime {
				lists[SortReliability] = lists[SortPrice]
			}
			// No offer takes bids: every one sorts after the (no)
			// interruptible ones by price, the price order.
			if !anyBids {
				lists[SortInterruptible] = lists[SortPrice]
			}
		})
	}
	wg.Wait()
	if !anyStudent {
		s.sorted[studentView] = s.sorted[listView]
	}
	return s
}

// partSizes counts the entries of each partition of a list by the dense
// numbers of model and city (offerKey.gpu, offerKey.city).
type partSizes struct {
	gpu, city, both []int // both[gpu*len(city)+city]
}

// Every entry's model is in the catalogue (build leaves out the others).
func (s *snapshot) partitionSizes(list []entry) *partSizes {
	n := &partSizes{gpu: make([]int, len(s.gpuIdx)), city: make([]int, len(s.cityIdx))}
	n.both = make([]int, len(n.gpu)*len(n.city))
	for i := range list {
		g, c := int(list[i].k.gpu), int(list[i].k.city)
		n.gpu[g]++
		if c != none {
			n.city[c]++
			n.both[g*len(n.city)+c]++
		}
	}
	return n
}

// partition splits a sorted list into its partitions (see
// snapshot.sorted), keeping the order: by the dense numbers, each slice
// allocated at its size, rather than a map lookup and two string
// concatenations per entry.
func (s *snapshot) partition(sorted []entry, n *partSizes) map[string][]entry {
	mk := func(sizes []int) [][]entry {
		out := make([][]entry, len(sizes))
		for i, size := range sizes {
			if size > 0 {
				out[i] = make([]entry, 0, size)
			}
		}
		return out
	}
	byGPU, byCity, both := mk(n.gpu), mk(n.city), mk(n.both)
	per := map[string][]entry{"": sorted}
	for _, e := range sorted {
		g, c := int(e.k.gpu), int(e.k.city)
		byGPU[g] = append(byGPU[g], e)
		if c == none {
			// A city the catalogue does not know: no search names it, but
			// keep its partitions as before, by name.
			city := "@" + e.o.Datacenter.City
			per[city] = append(per[city], e)
			per[e.o.GPUModel+city] = append(per[e.o.GPUModel+city], e)
			continue
		}
		byCity[c] = append(byCity[c], e)
		both[g*len(byCity)+c] = append(both[g*len(byCity)+c], e)
	}
	gpus, cities := catalog.GPUModels(), catalog.Cities()
	for g, l := range byGPU {
		if len(l) > 0 {
			per[gpus[g].Slug] = l
		}
	}
	for c, l := range byCity {
		if len(l) > 0 {
			per["@"+cities[c].Slug] = l
		}
	}
	for i, l := range both {
		if len(l) > 0 {
			per[gpus[i/len(byCity)].Slug+"@"+cities[i%len(byCity)].Slug] = l
		}
	}
	return per
}

func idx8(m map[string]uint8, k string) uint8 {
	if i, ok := m[k]; ok {
		return i
	}
	return none
}

// key numbers an offer's filter fields, registering its datacentre.
func (s *snapshot) key(o *Listed) offerKey {
	dc, ok := s.dcIdx[o.DatacenterID]
	if !ok {
		dc = uint16(len(s.lat))
		s.dcIdx[o.DatacenterID] = dc
		row := make([]float32, len(s.cityIdx))
		for i := range row {
			row[i] = -1
		}
		for city, ms := range o.Latency {
			if ci, ok := s.cityIdx[city]; ok {
				row[ci] = float32(ms)
			}
		}
		s.lat = append(s.lat, row)
	}
	ic := uint8(0)
	switch o.Interconnect {
	case catalog.InterconnectNVLink:
		ic = 1
	case catalog.InterconnectNVLinkIB:
		ic = 2
	}
	return offerKey{
		id: o.ID, price: o.PricePerGPUHourFen, vram: uint16(min(o.GPU.VRAMGB, 65535)), dc: dc,
		gpu: idx8(s.gpuIdx, o.GPUModel), city: idx8(s.cityIdx, o.Datacenter.City), region: idx8(s.regionIdx, o.Datacenter.Region),
		ic: ic, maxGPUs: uint8(min(o.MaxGPUs, 255)), student: o.StudentDiscountPct > 0, available: o.AvailableGPUs > 0,
		interruptible: o.Interruptible != nil,
	}
}

// Offer returns a listed offer by id, or ENOTFOUND.
func (ix *Index) Offer(id int64) (*Listed, error) {
	if o, ok := ix.snap.Load().byID[id]; ok {
		return o, nil
	}
	return nil, apperr.NotFound(fmt.Sprintf("offer %d", id))
}
