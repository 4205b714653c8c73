package market

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/models"
)

// ListedOffer is an offer as the search shows it: the stored offer, its
// datacentre and provider, its catalogue model and derived figures.
type ListedOffer struct {
	models.OfferRow
	GPU catalog.GPUModel
	// PricePerTFLOPFen is the on-demand price per GPU-hour divided by the
	// model's nominal tensor TFLOPS (BF16, or FP16 without BF16).
	PricePerTFLOPFen float64
}

// LatencyFrom returns the published latency from city in ms.
func (o *ListedOffer) LatencyFrom(city string) (float64, bool) {
	ms, ok := o.Latency[city]
	return ms, ok
}

// OfferIndex keeps every listed offer in memory, pre-sorted by each static
// sort key overall and per GPU model, so a search never scans rows through
// the database driver. Writers bump the offers version in the same
// transaction as their change; Refresh reloads when it moves. A snapshot is
// immutable once published, so searches need no lock.
type OfferIndex struct {
	db     *models.DB
	snap   atomic.Pointer[snapshot]
	reload sync.Mutex
}

type snapshot struct {
	version int64
	loaded  time.Time
	byID    map[int64]*ListedOffer
	// sorted[key][""] is every offer; sorted[key][slug] one model's offers.
	sorted map[string]map[string][]*ListedOffer
}

// staticSorts are the keys whose order does not depend on the query.
var staticSorts = []string{SortPrice, SortPricePerTFLOP, SortVRAM}

// NewOfferIndex returns an empty index over db; call Refresh to load it.
func NewOfferIndex(db *models.DB) *OfferIndex {
	ix := &OfferIndex{db: db}
	ix.snap.Store(build(nil, 0))
	return ix
}

// Refresh reloads the index if the offers version in the database differs
// from the loaded one. It reports whether it reloaded.
func (ix *OfferIndex) Refresh(ctx context.Context) (bool, error) {
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
	ix.snap.Store(build(rows, version))
	slog.Debug("offer index reloaded", "offers", len(rows), "version", version, "took", time.Since(start))
	return true, nil
}

// Run refreshes the index every interval until ctx ends, so changes made by
// other processes (workers, replicas, admin commands) show up.
func (ix *OfferIndex) Run(ctx context.Context, every time.Duration) {
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
func (ix *OfferIndex) Len() int { return len(ix.snap.Load().byID) }

// Version returns the loaded offers version.
func (ix *OfferIndex) Version() int64 { return ix.snap.Load().version }

func build(rows []models.OfferRow, version int64) *snapshot {
	s := &snapshot{version: version, loaded: time.Now(), byID: make(map[int64]*ListedOffer, len(rows)), sorted: map[string]map[string][]*ListedOffer{}}
	all := make([]*ListedOffer, 0, len(rows))
	for _, r := range rows {
		m, ok := catalog.GPUModelBySlug(r.GPUModel)
		if !ok {
			slog.Warn("offer with a GPU model missing from the catalogue", "offer", r.ID, "gpu", r.GPUModel)
			continue
		}
		o := &ListedOffer{OfferRow: r, GPU: m, PricePerTFLOPFen: float64(r.PricePerGPUHourFen) / m.TensorTFLOPS()}
		s.byID[r.ID] = o
		all = append(all, o)
	}
	for _, key := range staticSorts {
		cmpFn := comparator(key, "")
		sorted := slices.Clone(all)
		slices.SortFunc(sorted, cmpFn)
		per := map[string][]*ListedOffer{"": sorted}
		for _, o := range sorted {
			per[o.GPUModel] = append(per[o.GPUModel], o)
		}
		s.sorted[key] = per
	}
	return s
}

func byPriceThenID(a, b *ListedOffer) int {
	return cmp.Or(cmp.Compare(a.PricePerGPUHourFen, b.PricePerGPUHourFen), cmp.Compare(a.ID, b.ID))
}

// comparator orders offers for a sort key; city is used by latency only.
func comparator(key, city string) func(a, b *ListedOffer) int {
	switch key {
	case SortPricePerTFLOP, SortMeasured:
		return func(a, b *ListedOffer) int {
			return cmp.Or(cmp.Compare(a.PricePerTFLOPFen, b.PricePerTFLOPFen), byPriceThenID(a, b))
		}
	case SortVRAM:
		return func(a, b *ListedOffer) int {
			return cmp.Or(cmp.Compare(b.GPU.VRAMGB, a.GPU.VRAMGB), byPriceThenID(a, b))
		}
	case SortLatency:
		return func(a, b *ListedOffer) int {
			la, oka := a.Latency[city]
			lb, okb := b.Latency[city]
			if !oka {
				la = math.Inf(1)
			}
			if !okb {
				lb = math.Inf(1)
			}
			return cmp.Or(cmp.Compare(la, lb), byPriceThenID(a, b))
		}
	}
	return byPriceThenID
}

// Offer returns a listed offer by id, or ENOTFOUND.
func (ix *OfferIndex) Offer(id int64) (*ListedOffer, error) {
	if o, ok := ix.snap.Load().byID[id]; ok {
		return o, nil
	}
	return nil, apperr.NotFound(fmt.Sprintf("offer %d", id))
}
