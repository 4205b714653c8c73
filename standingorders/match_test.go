package standingorders

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/orderstore"
)

var t0 = time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)

func onDemand(id int64, maxFen int64, at int) *want {
	return wantOf(&orderstore.Order{ID: id, GPUModel: "h100-sxm", GPUs: 1, MaxPriceFen: &maxFen, CreatedAt: t0.Add(time.Duration(at) * time.Second),
		ExpiresAt: t0.Add(time.Hour), Action: orderstore.ActionRent})
}

func bidding(id int64, bid int64, at int) *want {
	return wantOf(&orderstore.Order{ID: id, GPUModel: "h100-sxm", GPUs: 1, BidPerGPUHourFen: &bid, CreatedAt: t0.Add(time.Duration(at) * time.Second),
		ExpiresAt: t0.Add(time.Hour), Action: orderstore.ActionRent})
}

func ids(ws []*want) []int64 {
	var out []int64
	for _, w := range ws {
		out = append(out, w.order.ID)
	}
	return out
}

// On-demand orders before bids; the higher price accepted first; at one
// price the earlier order, then the lower id.
func TestRank(t *testing.T) {
	ws := []*want{bidding(1, 900, 0), onDemand(2, 3000, 5), onDemand(3, 3500, 9), onDemand(4, 3000, 1), bidding(5, 1200, 7),
		onDemand(6, 3000, 1), bidding(7, 1200, 2)}
	rank(ws)
	if got, want := ids(ws), []int64{3, 4, 6, 2, 7, 5, 1}; !slices.Equal(got, want) {
		t.Fatalf("ranked %v, want %v", got, want)
	}
}

func freeOffer(id, node int64, price int64, avail int, floor *int64) orderstore.FreeOffer {
	return orderstore.FreeOffer{ID: id, NodeID: node, DatacenterID: node, GPUModel: "h100-sxm", MaxGPUs: 8, AvailableGPUs: avail,
		PricePerGPUHourFen: price, StudentDiscountPct: 20, InterruptibleFloorPerGPUHourFen: floor, SLATiers: "standard,premium", City: "chengdu"}
}

func candidateIDs(s *supply, w *want) (out []string) {
	for f, bid := range s.candidates(w) {
		if bid == nil {
			out = append(out, fmt.Sprintf("%d", f.offer.ID))
		} else {
			out = append(out, fmt.Sprintf("%d@%d", f.offer.ID, *bid))
		}
	}
	return out
}

// What an order accepts, cheapest for it first: on demand up to its max
// price (the student price for a lab); on a bid, offers whose on-demand
// price is within the bid (on demand) or whose floor is (at the bid); the
// city, latency, volume's datacentre, SLA tier and free GPUs filter.
func TestCandidates(t *testing.T) {
	floor := int64(1500)
	s := newSupply([]orderstore.FreeOffer{
		freeOffer(1, 1, 3000, 4, nil),
		freeOffer(2, 2, 2500, 1, &floor),
		freeOffer(3, 3, 3400, 8, &floor),
		func() orderstore.FreeOffer {
			o := freeOffer(4, 4, 2000, 8, nil)
			o.City, o.SLATiers = "beijing", "standard"
			return o
		}(),
	}, []models.DatacenterLatency{{DatacenterID: 1, FromCity: "chongqing", RTTms: 12}, {DatacenterID: 2, FromCity: "chongqing", RTTms: 30}})
	for _, c := range []struct {
		name string
		w    *want
		want []string
	}{
		{"up to the max price, cheapest first", onDemand(1, 3000, 0), []string{"4", "2", "1"}},
		{"the student price", func() *want { w := onDemand(1, 2720, 0); w.order.Student = true; return w }(), []string{"4", "2", "1", "3"}},
		{"two GPUs: not where one is free", func() *want { w := onDemand(1, 3000, 0); w.order.GPUs = 2; return w }(), []string{"4", "1"}},
		{"a city", func() *want { w := onDemand(1, 9000, 0); w.order.City = "chengdu"; return w }(), []string{"2", "1", "3"}},
		{"a latency", func() *want {
			w := onDemand(1, 9000, 0)
			w.order.FromCity, w.maxLat = "chongqing", 20
			return w
		}(), []string{"1"}},
		{"a volume's datacentre", func() *want { w := onDemand(1, 9000, 0); w.dc = 3; return w }(), []string{"3"}},
		{"an SLA tier", func() *want { w := onDemand(1, 9000, 0); w.sla = "premium"; return w }(), []string{"2", "1", "3"}},
		{"a bid: on demand within it, else at the floor", bidding(1, 2600, 0), []string{"4", "2", "3@2600"}},
		{"a bid below every floor", bidding(1, 1000, 0), nil},
	} {
		if got := candidateIDs(s, c.w); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Each order in turn takes the GPUs it needs from its first candidate
// with enough free; a refused order takes nothing; a lost race empties the
// offer for the pass; an expired order is skipped.
func TestRun(t *testing.T) {
	s := newSupply([]orderstore.FreeOffer{freeOffer(1, 1, 2000, 2, nil), freeOffer(2, 2, 2500, 1, nil), freeOffer(3, 3, 2600, 3, nil)}, nil)
	refused, expired, raced := onDemand(2, 3000, 1), onDemand(3, 3000, 2), onDemand(4, 3000, 3)
	expired.order.ExpiresAt = t0
	ws := []*want{onDemand(1, 3000, 0), refused, expired, raced, onDemand(5, 3000, 4), onDemand(6, 3000, 5), onDemand(7, 3000, 6)}
	got := map[int64]int64{}
	run(ws, s, t0, func(w *want, f *free, bid *int64) outcome {
		switch {
		case w == refused:
			return done
		case w == raced && f.offer.ID == 1:
			return noneFree
		}
		got[w.order.ID] = f.offer.ID
		return took
	})
	want := map[int64]int64{1: 1, 4: 2, 5: 3, 6: 3, 7: 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("took %v, want %v", got, want)
	}
}

// benchMarket is n open orders (most of which match nothing: their price
// is too low, their city elsewhere, or they want too many GPUs) against
// the free GPUs of 200 offers across the catalogue's popular models.
func benchMarket(n int) ([]*want, []orderstore.FreeOffer) {
	rng := rand.New(rand.NewPCG(1, 2))
	gpuModels := []string{"h100-sxm", "h200-sxm", "a100-80g-sxm", "rtx-4090", "l40s", "h20"}
	cities := []string{"chengdu", "chongqing", "beijing", "shanghai", "guangzhou"}
	var fs []orderstore.FreeOffer
	for i := range 200 {
		fs = append(fs, orderstore.FreeOffer{ID: int64(i + 1), NodeID: int64(i + 1), DatacenterID: int64(i%20 + 1), GPUModel: gpuModels[i%len(gpuModels)],
			MaxGPUs: 8, AvailableGPUs: rng.IntN(3), PricePerGPUHourFen: int64(2000 + rng.IntN(3000)), SLATiers: "standard,premium", City: cities[i%len(cities)]})
	}
	ws := make([]*want, n)
	for i := range ws {
		price := int64(500 + rng.IntN(1500)) // below every offer
		if i%500 == 0 {
			price = 6000 // a few match
		}
		o := &orderstore.Order{ID: int64(i + 1), GPUModel: gpuModels[i%len(gpuModels)], GPUs: 1 + rng.IntN(4), MaxPriceFen: &price,
			City: cities[rng.IntN(len(cities))], CreatedAt: t0.Add(time.Duration(i) * time.Second), ExpiresAt: t0.Add(time.Hour), Action: orderstore.ActionRent}
		ws[i] = wantOf(o)
	}
	rank(ws)
	return ws, fs
}

// BenchmarkMatch10k is the in-memory part of a pass: 10,000 open orders
// against an availability change (the offers with free GPUs indexed, every
// order walked, the few that match "rented").
func BenchmarkMatch10k(b *testing.B) {
	ws, fs := benchMarket(10_000)
	b.ReportAllocs()
	for b.Loop() {
		s := newSupply(fs, nil)
		rented := 0
		run(ws, s, t0, func(*want, *free, *int64) outcome { rented++; return took })
		if rented == 0 {
			b.Fatal("nothing matched")
		}
	}
}

// benchPass is the whole pass over 10,000 open orders in db, none of
// which matches (their prices are below every offer's), right after an
// availability change: expiry, the orders (reloaded when reload, else
// kept since the last pass), the free offers and their latencies, and the
// match.
func benchPass(b *testing.B, db *models.DB, reload bool) {
	r := newRig(b, db, 0)
	r.free(0, 1, 2, 3)
	gpuModels := []string{"b200", "h100-sxm", "h200-sxm", "a100-80g-sxm", "rtx-4090", "l40s", "h20"}
	cities := []string{"", "chengdu", "beijing", "frankfurt"}
	os := make([]orderstore.Order, 10_000)
	for i := range os {
		price := int64(100 + i%300)
		os[i] = orderstore.Order{OrgID: r.org.ID, UserID: r.user.ID, GPUModel: gpuModels[i%len(gpuModels)], City: cities[i%len(cities)],
			MaxPriceFen: &price, GPUs: 1 + i%4, Action: orderstore.ActionRent, SLA: "standard", SSHPublicKey: sshKey(),
			Status: orderstore.Open, ExpiresAt: r.clock.Now().Add(24 * time.Hour), CreatedAt: r.clock.Now()}
		if i%3 == 0 {
			os[i].FromCity, os[i].MaxLatencyMS = "chengdu", 30
		}
	}
	must(b, db.W.CreateInBatches(os, 500).Error)
	must(b, db.W.Exec(`UPDATE market_versions SET version = version + 1 WHERE name = 'standing_orders'`).Error)
	r.pass() // the first pass reads them
	b.ResetTimer()
	for b.Loop() {
		if reload {
			b.StopTimer()
			must(b, db.W.Exec(`UPDATE market_versions SET version = version + 1 WHERE name = 'standing_orders'`).Error)
			b.StartTimer()
		}
		if err := r.svc.Pass(r.ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := len(r.rentals()); n != 0 {
		b.Fatalf("%d rentals: the benchmark's orders should match nothing", n)
	}
}

// BenchmarkPass10k: a pass over 10,000 open orders on SQLite, with the
// orders kept in memory (the usual case: an availability change, no
// order changed since the last pass) and read again (an order changed).
func BenchmarkPass10k(b *testing.B) {
	b.Run("sqlite/kept", func(b *testing.B) { benchPass(b, dbtest.SQLite(b), false) })
	b.Run("sqlite/reloaded", func(b *testing.B) { benchPass(b, dbtest.SQLite(b), true) })
	b.Run("postgres/kept", func(b *testing.B) { benchPass(b, dbtest.Postgres(b), false) })
	b.Run("postgres/reloaded", func(b *testing.B) { benchPass(b, dbtest.Postgres(b), true) })
}
