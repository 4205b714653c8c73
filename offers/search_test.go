package offers_test

import (
	"cmp"
	"context"
	"math"
	"slices"
	"testing"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/offers"
)

func demoIndex(t testing.TB, db *models.DB) *offers.Index {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	return ix
}

func search(t *testing.T, ix *offers.Index, q offers.Query) offers.SearchResult {
	t.Helper()
	if q.Sort == "" {
		q.Sort = offers.SortPrice
	}
	r, err := ix.Search(q)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSearchSortOrders(t *testing.T) {
	ix := demoIndex(t, dbtest.SQLite(t))
	for _, key := range offers.SortKeys {
		q := offers.Query{Sort: key, From: "chengdu", PerPage: 200}
		r := search(t, ix, q)
		if r.Total != 43 || len(r.Offers) != 43 {
			t.Fatalf("%s: %d offers", key, r.Total)
		}
		ok := slices.IsSortedFunc(r.Offers, func(a, b *offers.Listed) int {
			switch key {
			case offers.SortPrice:
				return int(a.PricePerGPUHourFen() - b.PricePerGPUHourFen())
			case offers.SortPricePerTFLOP, offers.SortMeasured:
				return cmpF(a.PricePerTFLOPFen(), b.PricePerTFLOPFen())
			case offers.SortVRAM:
				return b.GPU.VRAMGB - a.GPU.VRAMGB
			case offers.SortLatency:
				return cmpF(a.Latency()["chengdu"], b.Latency()["chengdu"])
			case offers.SortInterruptible:
				bid := func(o *offers.Listed) int64 {
					if o.Interruptible == nil {
						return 1 << 62
					}
					return o.Interruptible.ClearingFen
				}
				return cmp.Or(cmp.Compare(bid(a), bid(b)), cmp.Compare(a.PricePerGPUHourFen(), b.PricePerGPUHourFen()))
			case offers.SortReliability:
				up := func(o *offers.Listed) float64 {
					if o.Uptime30dPct() == nil {
						return -1
					}
					return *o.Uptime30dPct()
				}
				return cmpF(up(b), up(a))
			}
			return 0
		})
		if !ok {
			t.Errorf("sort %s: not in order", key)
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestSearchFiltersAgreeWithABruteForceScan(t *testing.T) {
	ix := demoIndex(t, dbtest.SQLite(t))
	all := search(t, ix, offers.Query{PerPage: 200}).Offers
	queries := []offers.Query{
		{GPUs: []string{"h100-sxm", "h200-sxm"}, Region: "cn-southwest"},
		{MinGPUs: 8, MinVRAMGB: 80, Interconnect: "infiniband"},
		{MaxPriceFen: 1000, Student: true, Available: true},
		{City: "chengdu", Interconnect: "pcie"},
		{From: "beijing", MaxLatencyMS: 30},
		{GPUs: []string{"l40s"}, Available: true},
		{GPUs: []string{"h100-sxm"}, City: "chengdu"}, // served straight from a partition
		{City: "chengdu"},
		{GPUs: []string{"h100-sxm", "rtx-4090"}, City: "chengdu"},
		{GPUs: []string{"rtx-4090"}},
	}
	for _, q := range queries {
		got := search(t, ix, q)
		var want []int64
		for _, o := range all {
			if q.GPUs != nil && !slices.Contains(q.GPUs, o.GPUModel()) ||
				q.Region != "" && o.Datacenter.Region != q.Region ||
				o.MaxGPUs() < q.MinGPUs || o.GPU.VRAMGB < q.MinVRAMGB ||
				q.Interconnect == "infiniband" && o.Interconnect() != "nvlink-ib" ||
				q.Interconnect == "pcie" && o.Interconnect() != "pcie" ||
				q.MaxPriceFen > 0 && o.PricePerGPUHourFen() > q.MaxPriceFen ||
				q.Student && o.StudentDiscountPct() == 0 || q.Available && o.AvailableGPUs() == 0 ||
				q.City != "" && o.Datacenter.City != q.City {
				continue
			}
			if q.MaxLatencyMS > 0 {
				ms, ok := o.Latency()[q.From]
				if !ok || ms > q.MaxLatencyMS {
					continue
				}
			}
			want = append(want, o.ID)
		}
		var ids []int64
		for _, o := range got.Offers {
			ids = append(ids, o.ID)
		}
		if got.Total != len(want) || !slices.Equal(ids, want) {
			t.Errorf("%+v: got %v (total %d), want %v", q, ids, got.Total, want)
		}
		if len(want) == 0 {
			t.Errorf("%+v matches nothing in the demo: a weak case", q)
		}
	}
}

func TestRelaxationsCountWhatTheyBringBack(t *testing.T) {
	ix := demoIndex(t, dbtest.SQLite(t))
	q := offers.Query{GPUs: []string{"h200-sxm"}, From: "chengdu", MaxLatencyMS: 5, MaxPriceFen: 4000}
	r := search(t, ix, q)
	if r.Total != 0 || len(r.Relaxations) == 0 {
		t.Fatalf("want an empty result with relaxations, got %d / %v", r.Total, r.Relaxations)
	}
	for i, rx := range r.Relaxations {
		again := search(t, ix, rx.Query)
		if again.Total != rx.Count || rx.Count == 0 {
			t.Errorf("%s: says %d, brings back %d", rx.Filter, rx.Count, again.Total)
		}
		if i > 0 && rx.Count > r.Relaxations[i-1].Count {
			t.Errorf("relaxations not ordered by what they bring back")
		}
	}
	// The cheapest H200 within 5 ms of Chengdu is ¥46.80: the price relaxation says ¥47.
	var price *offers.Relaxation
	for i := range r.Relaxations {
		if r.Relaxations[i].Filter == "max_price" {
			price = &r.Relaxations[i]
		}
	}
	if price == nil || price.Query.MaxPriceFen != 4700 {
		t.Errorf("price relaxation %+v", price)
	}
}

// The index reloads when a writer bumps the version (here, the
// availability refresh), and only then.
func TestIndexRefreshFollowsTheVersion(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		ix := demoIndex(t, db)
		if reloaded, _ := ix.Refresh(ctx); reloaded {
			t.Error("reloaded without a change")
		}
		o := search(t, ix, offers.Query{GPUs: []string{"h100-sxm"}, City: "chengdu"}).Offers[0]
		var g models.GPU
		if err := db.R.Where("node_id = ? AND state = 'free'", o.NodeID).First(&g).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.SetGPUState(ctx, g.UUID, models.GPUBusy); err != nil {
			t.Fatal(err)
		}
		if _, err := db.RefreshAvailability(ctx); err != nil {
			t.Fatal(err)
		}
		if reloaded, err := ix.Refresh(ctx); !reloaded || err != nil {
			t.Fatalf("no reload after a change: %v", err)
		}
		now, err := ix.Offer(o.ID)
		if err != nil || now.AvailableGPUs() != o.AvailableGPUs()-1 {
			t.Errorf("available %d, want %d", now.AvailableGPUs(), o.AvailableGPUs()-1)
		}
	})
}

func BenchmarkSearchH100Chengdu100k(b *testing.B) {
	db := dbtest.SQLite(b)
	ctx := context.Background()
	if err := demo.SeedScale(ctx, db, 100_000); err != nil {
		b.Fatal(err)
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	q := offers.Query{GPUs: []string{"h100-sxm"}, City: "chengdu", Sort: offers.SortPrice, Page: 1, PerPage: 50}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ix.Search(q); err != nil {
			b.Fatal(err)
		}
	}
}

// The latency order's bucket merge gives exactly the page a full sort by
// (latency, price, id) gives, on every page.
func TestLatencyPagesMatchAFullSort(t *testing.T) {
	db := dbtest.SQLite(t)
	ctx := context.Background()
	if err := demo.SeedScale(ctx, db, 3000); err != nil {
		t.Fatal(err)
	}
	ix := demoIndex(t, db)
	for _, from := range []string{"chengdu", "beijing", "xian"} {
		for _, gpus := range [][]string{nil, {"h100-sxm"}} {
			all := search(t, ix, offers.Query{GPUs: gpus, PerPage: 200, Page: 1}).Total
			var want []*offers.Listed
			for p := 1; (p-1)*200 < all; p++ {
				want = append(want, search(t, ix, offers.Query{GPUs: gpus, PerPage: 200, Page: p}).Offers...)
			}
			lat := func(o *offers.Listed) float64 {
				if ms, ok := o.LatencyFrom(from); ok {
					return ms
				}
				return math.MaxFloat64
			}
			slices.SortFunc(want, func(a, b *offers.Listed) int {
				if la, lb := lat(a), lat(b); la != lb {
					return cmpF(la, lb)
				}
				if a.PricePerGPUHourFen() != b.PricePerGPUHourFen() {
					return int(a.PricePerGPUHourFen() - b.PricePerGPUHourFen())
				}
				return int(a.ID - b.ID)
			})
			for page := 1; (page-1)*37 < len(want); page++ {
				got := search(t, ix, offers.Query{GPUs: gpus, From: from, Sort: offers.SortLatency, PerPage: 37, Page: page})
				lo, hi := (page-1)*37, min(page*37, len(want))
				if got.Total != len(want) || len(got.Offers) != hi-lo {
					t.Fatalf("%s %v page %d: total %d n %d, want %d/%d", from, gpus, page, got.Total, len(got.Offers), len(want), hi-lo)
				}
				for i, o := range got.Offers {
					if o.ID != want[lo+i].ID {
						t.Fatalf("%s %v page %d row %d: offer %d, want %d", from, gpus, page, i, o.ID, want[lo+i].ID)
					}
				}
			}
		}
	}
}
