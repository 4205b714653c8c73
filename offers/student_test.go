package offers_test

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/offers"
	"suanli/pricing"
)

// randomStudentMarket seeds n synthetic offers, then gives every offer a
// random price in a narrow band and a random student discount (so the
// student order crosses the list order often and rounds to ties), and
// some nodes a benchmark report and an uptime, and a fifth of the offers an
// interruptible floor. It returns the loaded index.
func randomStudentMarket(t *testing.T, db *models.DB, n int, rng *rand.Rand) *offers.Index {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedScale(ctx, db, n); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	if err := db.R.Model(&models.Offer{}).Order("id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	err := db.Tx(ctx, func(tx *gorm.DB) error {
		for _, id := range ids {
			if err := tx.Model(&models.Offer{}).Where("id = ?", id).Updates(map[string]any{
				"price_per_gpu_hour_fen": 2000 + rng.IntN(300),
				"student_discount_pct":   []int{0, 0, 5, 10, 15, 20, 35}[rng.IntN(7)],
			}).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO benchmark_reports (node_id, gpu_model, gpus, trigger, simulated, nominal, report, bf16_tflops, pct_of_nominal, measured_at, created_at)
			SELECT id, gpu_model, 1, 'verified', false, '{}', '{}', 100 + id % 7 * 50, 60 + id % 40, ?, ? FROM nodes WHERE id % 3 = 0`,
		`UPDATE nodes SET latest_report_id = (SELECT MAX(r.id) FROM benchmark_reports r WHERE r.node_id = nodes.id) WHERE id % 3 = 0`,
		`UPDATE nodes SET uptime_30d_pct = 99 + (id % 5) / 10.0 WHERE id % 4 = 0`,
		// A fifth of the offers take bids, with floors that tie often.
		`UPDATE offers SET interruptible_floor_per_gpu_hour_fen = 900 + id % 7 * 100 WHERE id % 5 = 0`,
		`UPDATE market_versions SET version = version + 1 WHERE name = 'offers'`,
	} {
		var args []any
		if strings.HasPrefix(strings.TrimSpace(q), "INSERT") {
			args = []any{measuredAt, measuredAt}
		}
		if err := db.W.Exec(q, args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	return ix
}

// studentPrice is the price a lab member is shown for an offer, computed
// here from the stored offer as the price table states it.
func studentPrice(o *offers.Listed) int64 {
	return pricing.Discounted(o.PricePerGPUHourFen(), o.StudentDiscountPct())
}

// bruteOrder is the order a student viewer expects for a sort key, every
// price being the student price: the key, then that price, then the id.
func bruteOrder(key, from string) func(a, b *offers.Listed) int {
	perTFLOP := func(o *offers.Listed) float64 { return float64(studentPrice(o)) / o.GPU.TensorTFLOPS() }
	measured := func(o *offers.Listed) float64 {
		if o.Report == nil {
			return 0
		}
		f := o.Report.BF16TFLOPS
		if o.GPU.BF16TFLOPS == 0 {
			f = o.Report.FP16TFLOPS
		}
		if f == nil || *f <= 0 {
			return 0
		}
		return *f
	}
	up := func(o *offers.Listed) float64 {
		if o.Uptime30dPct() == nil {
			return -1
		}
		return *o.Uptime30dPct()
	}
	lat := func(o *offers.Listed) float64 {
		if ms, ok := o.LatencyFrom(from); ok {
			return ms
		}
		return math.MaxFloat32
	}
	var first func(a, b *offers.Listed) int
	switch key {
	case offers.SortPrice:
		first = func(a, b *offers.Listed) int { return 0 }
	case offers.SortPricePerTFLOP:
		first = func(a, b *offers.Listed) int { return cmp.Compare(perTFLOP(a), perTFLOP(b)) }
	case offers.SortMeasured:
		first = func(a, b *offers.Listed) int {
			ma, mb := measured(a), measured(b)
			switch {
			case ma > 0 && mb > 0:
				return cmp.Compare(float64(studentPrice(a))/ma, float64(studentPrice(b))/mb)
			case ma > 0:
				return -1
			case mb > 0:
				return 1
			}
			return cmp.Compare(perTFLOP(a), perTFLOP(b))
		}
	case offers.SortVRAM:
		first = func(a, b *offers.Listed) int { return cmp.Compare(b.GPU.VRAMGB, a.GPU.VRAMGB) }
	case offers.SortReliability:
		first = func(a, b *offers.Listed) int { return cmp.Compare(up(b), up(a)) }
	case offers.SortLatency:
		first = func(a, b *offers.Listed) int { return cmp.Compare(lat(a), lat(b)) }
	case offers.SortInterruptible:
		// By clearing price (before discounts, the price bids are in),
		// offers that take no bids last.
		bid := func(o *offers.Listed) int64 {
			if o.Interruptible == nil {
				return math.MaxInt64
			}
			return o.Interruptible.ClearingFen
		}
		first = func(a, b *offers.Listed) int { return cmp.Compare(bid(a), bid(b)) }
	}
	return func(a, b *offers.Listed) int {
		return cmp.Or(first(a, b), cmp.Compare(studentPrice(a), studentPrice(b)), cmp.Compare(a.ID, b.ID))
	}
}

// For random offers and a viewer who pays student prices, every search's
// order (every page, every sort key, pre-sorted, merged, scanned or
// sorted per search) equals sorting the matches by the price shown, and
// max_price keeps exactly the offers whose shown price is within it.
func TestStudentViewerOrdersAndFiltersByTheirPrice(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("random seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 13))
		ix := randomStudentMarket(t, db, 1500, rng)

		all := search(t, ix, offers.Query{PerPage: 200})
		var everything []*offers.Listed
		for p := 1; p <= all.Pages; p++ {
			everything = append(everything, search(t, ix, offers.Query{PerPage: 200, Page: p}).Offers...)
		}
		if len(everything) != all.Total || all.Total < 1500 {
			t.Fatalf("read %d of %d offers", len(everything), all.Total)
		}
		// The fixture is worth something only if the two orders differ.
		byList := slices.Clone(everything)
		byStudent := slices.Clone(everything)
		slices.SortFunc(byStudent, bruteOrder(offers.SortPrice, ""))
		if slices.Equal(offerIDs(byList), offerIDs(byStudent)) {
			t.Fatal("the student order equals the list order: a weak fixture")
		}

		// A price bound in the band, as whole yuan.
		bound := int64(1800 + rng.IntN(4)*100)
		queries := []offers.Query{
			{}, // every offer: a pre-sorted list as it is
			{GPUs: []string{"h100-sxm"}, City: "chengdu"},                       // one partition as it is
			{GPUs: []string{"h100-sxm", "h200-sxm", "rtx-4090"}},                // merged runs
			{MaxPriceFen: bound},                                                // a scan of a pre-sorted list
			{GPUs: []string{"h100-sxm", "l40s"}, MaxPriceFen: bound},            // merged and filtered
			{GPUs: []string{"a100-80g-sxm"}, MaxPriceFen: bound, Student: true}, // with the student=1 filter
			{Region: "cn-southwest", Available: true},
		}
		for _, key := range offers.SortKeys {
			for _, q := range queries {
				q.StudentViewer, q.Sort, q.From = true, key, "chengdu"
				var want []*offers.Listed
				for _, o := range everything {
					if len(q.GPUs) > 0 && !slices.Contains(q.GPUs, o.GPUModel()) ||
						q.City != "" && o.Datacenter.City != q.City ||
						q.Region != "" && o.Datacenter.Region != q.Region ||
						q.Available && o.AvailableGPUs() == 0 ||
						q.Student && o.StudentDiscountPct() == 0 ||
						q.MaxPriceFen > 0 && studentPrice(o) > q.MaxPriceFen {
						continue
					}
					want = append(want, o)
				}
				if len(want) == 0 {
					t.Fatalf("%s %+v matches nothing: a weak case", key, q)
				}
				slices.SortFunc(want, bruteOrder(key, q.From))
				q.PerPage = 37
				for q.Page = 1; (q.Page-1)*37 < len(want); q.Page++ {
					got := search(t, ix, q)
					lo, hi := (q.Page-1)*37, min(q.Page*37, len(want))
					if got.Total != len(want) || !sameIDs(offerIDs(got.Offers), offerIDs(want[lo:hi])) {
						t.Fatalf("%s %+v page %d: total %d, want %d; ids %v, want %v", key, q, q.Page, got.Total, len(want),
							offerIDs(got.Offers), offerIDs(want[lo:hi]))
					}
					for _, o := range got.Offers {
						if o.PriceFen(true) != studentPrice(o) || o.PriceFen(false) != o.PricePerGPUHourFen() {
							t.Fatalf("offer %d: PriceFen %d/%d, want %d/%d", o.ID, o.PriceFen(true), o.PriceFen(false), studentPrice(o), o.PricePerGPUHourFen())
						}
					}
				}
			}
		}

		// Nothing within a bound below every student price: the price
		// relaxation suggests the cheapest student price, rounded up to
		// the yuan, and brings back what it says.
		cheapest := slices.MinFunc(everything, func(a, b *offers.Listed) int { return cmp.Compare(studentPrice(a), studentPrice(b)) })
		q := offers.Query{MaxPriceFen: studentPrice(cheapest) - 1, StudentViewer: true, Sort: offers.SortPrice}
		r := search(t, ix, q)
		var relax *offers.Relaxation
		for i := range r.Relaxations {
			if r.Relaxations[i].Filter == "max_price" {
				relax = &r.Relaxations[i]
			}
		}
		want := (studentPrice(cheapest) + 99) / 100 * 100
		if r.Total != 0 || relax == nil || relax.Query.MaxPriceFen != want || !relax.Query.StudentViewer {
			t.Fatalf("below the cheapest student price (%d): total %d, relaxation %+v, want max_price %d", studentPrice(cheapest), r.Total, relax, want)
		}
		if again := search(t, ix, relax.Query); again.Total != relax.Count {
			t.Errorf("the price relaxation says %d, brings back %d", relax.Count, again.Total)
		}
	})
}

// BenchmarkSearchStudent100k searches as a lab member (student prices)
// and as anyone else, with half the nodes reported: the student orders
// are pre-sorted like the list ones, so both cost the same.
func BenchmarkSearchStudent100k(b *testing.B) {
	_, ix := seedReported100k(b, true)
	for _, c := range []struct {
		name string
		q    offers.Query
	}{
		{"price/h100-chengdu", offers.Query{GPUs: []string{"h100-sxm"}, City: "chengdu", Sort: offers.SortPrice}},
		{"price/h100+h200", offers.Query{GPUs: []string{"h100-sxm", "h200-sxm"}, Sort: offers.SortPrice}},
		{"price/max_price", offers.Query{MaxPriceFen: 3000, Sort: offers.SortPrice}},
		{"price_per_tflop/h100+h200", offers.Query{GPUs: []string{"h100-sxm", "h200-sxm"}, Sort: offers.SortPricePerTFLOP}},
		{"latency/h100", offers.Query{GPUs: []string{"h100-sxm"}, From: "chengdu", Sort: offers.SortLatency}},
	} {
		for _, student := range []bool{false, true} {
			name := c.name + "/list"
			if student {
				name = c.name + "/student"
			}
			b.Run(name, func(b *testing.B) {
				q := c.q
				q.Page, q.PerPage, q.StudentViewer = 1, 50, student
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ix.Search(q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
