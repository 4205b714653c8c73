package offers

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/models"
	"suanli/models/listing"
	"suanli/models/supply"
	"suanli/pricing"
)

// priceView names the price that an index list orders and filters by:
// everyone sees the list price except confirmed members of approved labs,
// who pay (and are shown) each offer's student price.
type priceView uint8

const (
	listView priceView = iota
	studentView
	nViews
)

// PriceFen is the on-demand price per GPU-hour the viewer pays: the
// student price when student (a confirmed member of an approved lab), else
// the list price. Lists show it, and sort and filter by it.
func (o *Listed) PriceFen(student bool) int64 {
	return o.priceOf(viewOf(student))
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

// Index keeps every listed offer in memory, pre-sorted by each static sort
// key within each partition of one GPU model in one city, so a search never
// scans rows through the database driver. Writers log what they changed
// with the offers version (models.OffersChanged); Refresh reads the log and
// patches only the partitions of the offers that changed, copying them and
// sharing the rest, so a change costs what it touched, not the catalogue's
// size. A snapshot is immutable once published, so searches need no lock.
type Index struct {
	db     *models.DB
	snap   atomic.Pointer[snapshot]
	reload sync.Mutex
	// Judge, when set (before the first Refresh), gives each load the
	// benchmark status of offers whose report independent witnesses
	// judged (benchmarks.JudgeOffers), by offer id: Listed.WitnessStatus.
	// New witness results move the offers version.
	Judge func(context.Context, []models.OfferRow) (map[int64]string, error)
	// Loads counts whole loads and Patches patched ones, for tests and
	// the capacity figures.
	Loads, Patches atomic.Int64
}

// NewIndex returns an empty index over db; call Refresh to load it.
func NewIndex(db *models.DB) *Index {
	ix := &Index{db: db}
	ix.snap.Store(emptySnapshot())
	return ix
}

// patchShare is the share of the catalogue above which a change is loaded
// whole rather than patched: past it, the patch's per-offer work costs
// more than one sort of everything.
const patchShare = 4

// Refresh brings the index up to the offers version in the database: the
// offers that changed since the loaded version (from the change log), or
// everything at start and when the log cannot say (a gap, a change
// without a narrower scope). It reports whether anything changed.
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
	cur := ix.snap.Load()
	if v == cur.version {
		return false, nil
	}
	start := time.Now()
	if cur.version > 0 {
		d, err := listing.Since(ctx, ix.db, cur.version, max(cur.n/patchShare, 1000))
		if err != nil {
			return false, fmt.Errorf("load offer changes: %w", err)
		}
		if !d.Full {
			if d.Version == cur.version {
				return false, nil
			}
			ids := make([]int64, len(d.Rows))
			for i := range d.Rows {
				ids[i] = d.Rows[i].ID
			}
			running, err := supply.LiveBidsOfOffers(ctx, ix.db, ids)
			if err != nil {
				return false, fmt.Errorf("load bids: %w", err)
			}
			judged, err := ix.judge(ctx, d.Rows)
			if err != nil {
				return false, err
			}
			ix.snap.Store(cur.apply(d.Version, d.Touched, d.Rows, running, judged))
			ix.Patches.Add(1)
			slog.Debug("offer index patched", "touched", len(d.Touched), "version", d.Version, "took", time.Since(start))
			return true, nil
		}
	}
	b, n := newBuilder(0), 0
	var running supply.OfferBids
	version, err := listing.Each(ctx, ix.db, loadChunk, func(rows []models.OfferRow) error {
		if running == nil {
			// The bids of the offers' live interruptible rentals give
			// their clearing prices; read after the version (Each's
			// first read), so they are at least as new. A bid that
			// changes moves the offers version.
			var err error
			if running, err = supply.LiveBidsByOffer(ctx, ix.db); err != nil {
				return fmt.Errorf("load bids: %w", err)
			}
		}
		judged, err := ix.judge(ctx, rows)
		if err != nil {
			return err
		}
		b.add(rows, running, judged)
		n += len(rows)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("load offers: %w", err)
	}
	b.s.version = version
	ix.snap.Store(b.finish())
	ix.Loads.Add(1)
	slog.Debug("offer index loaded", "offers", n, "version", version, "took", time.Since(start))
	return true, nil
}

func (ix *Index) judge(ctx context.Context, rows []models.OfferRow) (map[int64]string, error) {
	if ix.Judge == nil || len(rows) == 0 {
		return nil, nil
	}
	statuses, err := ix.Judge(ctx, rows)
	if err != nil {
		return nil, fmt.Errorf("judge offers: %w", err)
	}
	return statuses, nil
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
func (ix *Index) Len() int { return ix.snap.Load().n }

// UptimeShown is an uptime as pages show it, 0.01 % rounded down: what
// the reliability order sorts by, and the precision at which a node's
// figure changing moves the offers version (sla.RefreshUptime), so that a
// patched index orders as a fresh one does.
func UptimeShown(pct float64) float64 { return math.Floor(pct*100) / 100 }

// loadChunk is how many rows a whole load reads at a time.
const loadChunk = 10000

// build makes a snapshot of rows, every partition sorted afresh.
func build(rows []models.OfferRow, version int64, running supply.OfferBids, judged map[int64]string) *snapshot {
	b := newBuilder(version)
	b.add(rows, running, judged)
	return b.finish()
}

// Offer returns a listed offer by id, or ENOTFOUND.
func (ix *Index) Offer(id int64) (*Listed, error) {
	if o := ix.snap.Load().ids.get(id); o != nil {
		return o, nil
	}
	return nil, apperr.NotFound(fmt.Sprintf("offer %d", id))
}
