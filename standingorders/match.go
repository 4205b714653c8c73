package standingorders

// This file is the matching itself, on plain values in memory: which
// order goes first (Rank), which offers an order accepts and in which
// order it tries them (candidates), and the walk that gives each order in
// turn the GPUs it needs (run). The pass (pass.go) loads the values and
// does the renting.

import (
	"cmp"
	"iter"
	"slices"
	"strings"
	"time"

	"suanli/models"
	"suanli/models/orderstore"
	"suanli/offers"
)

// want is an open order as matching sees it.
type want struct {
	order *orderstore.Order
	// bid is an interruptible order's bid (0: on demand), maxPrice an
	// on-demand order's highest price.
	bid, maxPrice int64
	maxLat        float64
	sla           string
	dc, node      int64
}

func wantOf(o *orderstore.Order) *want {
	w := &want{order: o, maxLat: float64(o.MaxLatencyMS), sla: cmp.Or(o.SLA, "standard")}
	if o.BidPerGPUHourFen != nil {
		w.bid = *o.BidPerGPUHourFen
	} else if o.MaxPriceFen != nil {
		w.maxPrice = *o.MaxPriceFen
	}
	if o.DatacenterID != nil {
		w.dc = *o.DatacenterID
	}
	if o.NodeID != nil {
		w.node = *o.NodeID
	}
	return w
}

// accepts is the price an order ranks by: an on-demand order's highest
// price, an interruptible order's bid.
func (w *want) accepts() int64 { return cmp.Or(w.maxPrice, w.bid) }

// rank sorts open orders into the order in which they get free GPUs:
// on-demand orders before interruptible ones (free GPUs go to on-demand
// renters first, then to bids, as package bids has it); within each, the
// higher price accepted first (an on-demand order's max_price_fen, an
// interruptible order's bid); within one price, first come, first served
// (the earlier order, then the lower id).
func rank(ws []*want) {
	slices.SortFunc(ws, func(a, b *want) int {
		return cmp.Or(
			cmp.Compare(boolIdx(a.bid > 0), boolIdx(b.bid > 0)),
			cmp.Compare(b.accepts(), a.accepts()),
			a.order.CreatedAt.Compare(b.order.CreatedAt),
			cmp.Compare(a.order.ID, b.order.ID))
	})
}

// free is one offer with free GPUs as matching sees it.
type free struct {
	offer        orderstore.FreeOffer
	studentPrice int64
	// pool is its node's free GPUs of its model, shared by the node's
	// offers of that model: an order that takes some takes them from all.
	pool *int
	// lat is the published latency to its datacentre by city.
	lat map[string]float64
}

func (f *free) price(student bool) int64 {
	if student {
		return f.studentPrice
	}
	return f.offer.PricePerGPUHourFen
}

// supply is the offers with free GPUs, per GPU model sorted by price
// (the list price, and the student price for orders that pay it).
type supply struct {
	byModel map[string]*[2][]*free
}

type poolKey struct {
	node  int64
	model string
}

// newSupply indexes the free offers with their datacentres' latencies.
func newSupply(fs []orderstore.FreeOffer, lats []models.DatacenterLatency) *supply {
	latOf := map[int64]map[string]float64{}
	for _, l := range lats {
		if latOf[l.DatacenterID] == nil {
			latOf[l.DatacenterID] = map[string]float64{}
		}
		latOf[l.DatacenterID][l.FromCity] = l.RTTms
	}
	pools := map[poolKey]*int{}
	s := &supply{byModel: map[string]*[2][]*free{}}
	for _, o := range fs {
		k := poolKey{o.NodeID, o.GPUModel}
		if pools[k] == nil {
			n := o.AvailableGPUs
			pools[k] = &n
		}
		m := models.Offer{PricePerGPUHourFen: o.PricePerGPUHourFen, StudentDiscountPct: o.StudentDiscountPct}
		f := &free{offer: o, studentPrice: offers.StudentPriceFen(&m), pool: pools[k], lat: latOf[o.DatacenterID]}
		lists := s.byModel[o.GPUModel]
		if lists == nil {
			lists = &[2][]*free{}
			s.byModel[o.GPUModel] = lists
		}
		lists[0] = append(lists[0], f)
		lists[1] = append(lists[1], f)
	}
	for _, lists := range s.byModel {
		for i, student := range []bool{false, true} {
			slices.SortFunc(lists[i], func(a, b *free) int {
				return cmp.Or(cmp.Compare(a.price(student), b.price(student)), cmp.Compare(a.offer.ID, b.offer.ID))
			})
		}
	}
	return s
}

// fits reports whether the offer meets the order's filters other than
// price, and has the GPUs free now.
func (w *want) fits(f *free) bool {
	o, ord := &f.offer, w.order
	if *f.pool < ord.GPUs || o.MaxGPUs < ord.GPUs {
		return false
	}
	if ord.City != "" && o.City != ord.City {
		return false
	}
	if w.dc != 0 && o.DatacenterID != w.dc || w.node != 0 && o.NodeID != w.node {
		return false
	}
	if ord.FromCity != "" && w.maxLat > 0 {
		if ms, ok := f.lat[ord.FromCity]; !ok || ms > w.maxLat {
			return false
		}
	}
	if ord.VolumeGB > 0 && o.DiskGB > 0 && ord.VolumeGB > o.DiskGB {
		return false
	}
	return sellsTier(o.SLATiers, w.sla)
}

// sellsTier is models.Offer.SellsTier on the offer's tier list.
func sellsTier(tiers, tier string) bool {
	if tiers == "" {
		return tier == "standard"
	}
	for t := range strings.SplitSeq(tiers, ",") {
		if strings.TrimSpace(t) == tier {
			return true
		}
	}
	return false
}

// candidates are the offers the order accepts, cheapest for it first
// (then by id), each with the bid to rent it at (nil: on demand):
//
//   - an on-demand order takes offers whose on-demand price (the student
//     price when it pays student prices) is at most its max_price_fen;
//   - an interruptible order takes offers whose on-demand list price is
//     at most its bid, on demand (never interrupted, at that lower
//     price), and interruptible offers whose floor is at most its bid,
//     at its bid.
//
// An offer's free GPUs are read as the walk reaches it, so an order sees
// what the orders before it left.
func (s *supply) candidates(w *want) iter.Seq2[*free, *int64] {
	return func(yield func(*free, *int64) bool) {
		lists := s.byModel[w.order.GPUModel]
		if lists == nil {
			return
		}
		if w.bid == 0 {
			student := w.order.Student
			for _, f := range lists[boolIdx(student)] {
				if f.price(student) > w.maxPrice {
					return
				}
				if w.fits(f) && !yield(f, nil) {
					return
				}
			}
			return
		}
		bid := w.bid
		for _, f := range lists[0] {
			var at *int64
			if f.offer.PricePerGPUHourFen > bid {
				if fl := f.offer.InterruptibleFloorPerGPUHourFen; fl == nil || *fl > bid {
					continue
				}
				at = &bid
			}
			if w.fits(f) && !yield(f, at) {
				return
			}
		}
	}
}

func boolIdx(b bool) int {
	if b {
		return 1
	}
	return 0
}

// outcome is what trying an order on an offer came to.
type outcome int

const (
	// took: it rented; the offer's node has that many GPUs fewer.
	took outcome = iota
	// told: a notify order told its owner; no GPU was taken.
	told
	// noneFree: the offer had fewer free GPUs than read (another rent
	// took them): no order gets it in this pass; the order tries its next.
	noneFree
	// passOver: this offer cannot take this order (it does not offer its
	// image, say): the order tries its next.
	passOver
	// done: the order is over for this pass (it failed, another pass
	// filled it, or an error left it open for the next pass).
	done
)

// run walks the ranked orders, giving each in turn its cheapest
// acceptable offer that has its GPUs free (try rents it), so an order
// takes the GPUs it needs before the next is considered; an order whose
// rent fails takes nothing from the others. Orders expired at now are
// skipped (the pass expires them).
func run(ws []*want, s *supply, now time.Time, try func(*want, *free, *int64) outcome) {
	for _, w := range ws {
		if !w.order.ExpiresAt.After(now) {
			continue
		}
	offers:
		for f, bid := range s.candidates(w) {
			switch try(w, f, bid) {
			case took:
				*f.pool -= w.order.GPUs
				break offers
			case told, done:
				break offers
			case noneFree:
				*f.pool = 0
			case passOver:
			}
		}
	}
}
