package offers_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"suanli/catalog"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/offers"
)

// measuredAt is when the fixture reports were measured (22:00 in Shanghai).
var measuredAt = time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)

// demoH100 returns the demo H100 SXM offer of a datacentre.
func demoH100(t *testing.T, db *models.DB, dc string) models.Offer {
	t.Helper()
	var o models.Offer
	if err := db.R.Where("gpu_model = 'h100-sxm' AND datacenter_id = (SELECT id FROM datacenters WHERE slug = ?)", dc).First(&o).Error; err != nil {
		t.Fatalf("demo H100 in %s: %v", dc, err)
	}
	return o
}

// addReport stores a benchmark report for a node as the report store
// would (headline figures, latest_report_id), without bumping the version.
func addReport(t *testing.T, db *models.DB, nodeID int64, bf16, pct float64, simulated bool) int64 {
	t.Helper()
	r := models.BenchmarkReport{NodeID: nodeID, GPUModel: "h100-sxm", GPUs: 8, Trigger: models.BenchVerified, Simulated: simulated,
		Nominal: "{}", Report: "{}", BF16TFLOPS: &bf16, PctOfNominal: &pct, MeasuredAt: measuredAt, CreatedAt: measuredAt}
	if err := db.W.Create(&r).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.W.Exec(`UPDATE nodes SET latest_report_id = ? WHERE id = ?`, r.ID, nodeID).Error; err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func setUptime(t *testing.T, db *models.DB, nodeID int64, pct float64) {
	t.Helper()
	if err := db.W.Exec(`UPDATE nodes SET uptime_30d_pct = ? WHERE id = ?`, pct, nodeID).Error; err != nil {
		t.Fatal(err)
	}
}

func bumpOffers(t *testing.T, db *models.DB) {
	t.Helper()
	if err := db.W.Exec(`UPDATE market_versions SET version = version + 1 WHERE name = 'offers'`).Error; err != nil {
		t.Fatal(err)
	}
}

func offerIDs(os []*offers.Listed) []int64 {
	out := make([]int64, len(os))
	for i, o := range os {
		out[i] = o.ID
	}
	return out
}

func sameIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Offers carry their node's latest report and uptime once the version
// moves; sort=measured orders by price per measured TFLOPS (offers without
// a report after, by nominal) and sort=reliability by uptime, unknown last,
// on the pre-sorted path (one model) and the sorting path (two models).
func TestMeasuredAndReliabilityOrders(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		ix := demoIndex(t, db)
		swpark, science, cq := demoH100(t, db, "cd-tianfu-swpark"), demoH100(t, db, "cd-science-city"), demoH100(t, db, "cq-liangjiang")
		hitech, bj, sh := demoH100(t, db, "cd-hitech"), demoH100(t, db, "bj-yizhuang"), demoH100(t, db, "sh-jiading")
		gz, fra := demoH100(t, db, "gz-nansha"), demoH100(t, db, "eu-frankfurt")

		// Real at 80% of 989, simulated at 65% (flagged), real at 95%.
		r1 := addReport(t, db, swpark.NodeID, 791.2, 80, false)
		addReport(t, db, science.NodeID, 642.9, 65, true)
		addReport(t, db, cq.NodeID, 939.55, 95, false)
		setUptime(t, db, hitech.NodeID, 100)
		setUptime(t, db, swpark.NodeID, 99.97)
		setUptime(t, db, science.NodeID, 99.5)
		if reloaded, _ := ix.Refresh(ctx); reloaded {
			t.Fatal("reloaded without a version bump")
		}
		bumpOffers(t, db)
		if reloaded, err := ix.Refresh(ctx); !reloaded || err != nil {
			t.Fatalf("no reload after the bump: %v", err)
		}

		got, _ := ix.Offer(swpark.ID)
		if r := got.Report; r == nil || r.ID != r1 || r.Simulated || *r.BF16TFLOPS != 791.2 || *r.PctOfNominal != 80 || !r.MeasuredAt.Equal(measuredAt) {
			t.Fatalf("swpark report %+v", got.Report)
		}
		if got.Uptime30dPct() == nil || *got.Uptime30dPct() != 99.97 || offers.ReportFlagged(got.GPU, got.Report) {
			t.Errorf("swpark uptime %v, flagged %v", got.Uptime30dPct(), offers.ReportFlagged(got.GPU, got.Report))
		}
		if sci, _ := ix.Offer(science.ID); !sci.Report.Simulated || !offers.ReportFlagged(sci.GPU, sci.Report) {
			t.Errorf("science city report %+v: want simulated and flagged", sci.Report)
		}
		if o, _ := ix.Offer(bj.ID); o.Report != nil || o.Uptime30dPct() != nil || o.PricePerMeasuredTFLOPFen() != 0 {
			t.Errorf("bj without report or uptime: %+v %v", o.Report, o.Uptime30dPct())
		}
		// The offer page reads the same through OfferByID.
		row, err := db.OfferByID(ctx, science.ID)
		if err != nil || row.Report == nil || !row.Report.Simulated || *row.Report.PctOfNominal != 65 || *row.Uptime30dPct != 99.5 {
			t.Fatalf("OfferByID %+v %v: %v", row.Report, row.Uptime30dPct, err)
		}
		if row, _ := db.OfferByID(ctx, bj.ID); row.Report != nil || row.Uptime30dPct != nil {
			t.Errorf("OfferByID without report: %+v", row.Report)
		}

		// By hand, fen per measured TFLOPS: cq 3260/939.55 = 3.47,
		// swpark 3400/791.2 = 4.30, science 3550/642.9 = 5.52; then the
		// rest by nominal (one model, so by price): 31.80 33.00 33.20 33.80 38.00.
		measured := []int64{cq.ID, swpark.ID, science.ID, bj.ID, sh.ID, hitech.ID, gz.ID, fra.ID}
		// Uptime 100, 99.97, 99.5; then unknown by price: 31.80 32.60 33.00 33.80 38.00.
		reliable := []int64{hitech.ID, swpark.ID, science.ID, bj.ID, cq.ID, sh.ID, gz.ID, fra.ID}
		for _, c := range []struct {
			sort string
			want []int64
		}{{offers.SortMeasured, measured}, {offers.SortReliability, reliable}} {
			one := search(t, ix, offers.Query{Sort: c.sort, GPUs: []string{"h100-sxm"}, PerPage: 50})
			if ids := offerIDs(one.Offers); !sameIDs(ids, c.want) {
				t.Errorf("%s, one model: %v, want %v", c.sort, ids, c.want)
			}
			// Two models take the path that sorts its matches.
			two := search(t, ix, offers.Query{Sort: c.sort, GPUs: []string{"h100-sxm", "h200-sxm"}, PerPage: 50})
			var h100 []int64
			for _, o := range two.Offers {
				if o.GPUModel() == "h100-sxm" {
					h100 = append(h100, o.ID)
				}
			}
			if !sameIDs(h100, c.want) {
				t.Errorf("%s, two models: H100s %v, want %v", c.sort, h100, c.want)
			}
			// Over the whole market the reported (known) offers still lead.
			all := search(t, ix, offers.Query{Sort: c.sort, PerPage: 200})
			if ids := offerIDs(all.Offers[:3]); !sameIDs(ids, c.want[:3]) {
				t.Errorf("%s, all: first %v, want %v", c.sort, ids, c.want[:3])
			}
		}
	})
}

// seedReported100k seeds 100,000 synthetic offers and gives every other
// node a benchmark report and an uptime (zero, half: no reports yet).
func seedReported100k(b *testing.B, half bool) (*models.DB, *offers.Index) {
	db := dbtest.SQLite(b)
	ctx := context.Background()
	if err := demo.SeedScale(ctx, db, 100_000); err != nil {
		b.Fatal(err)
	}
	if half {
		for _, q := range []string{
			`INSERT INTO benchmark_reports (node_id, gpu_model, gpus, trigger, simulated, nominal, report, bf16_tflops, pct_of_nominal, measured_at, created_at)
				SELECT id, gpu_model, 1, 'verified', id % 4 = 0, '{}', '{}', 100 + id % 700, 60 + id % 40, ?, ? FROM nodes WHERE id % 2 = 0`,
			`UPDATE nodes SET uptime_30d_pct = 99 + (id % 100) / 100.0,
				latest_report_id = (SELECT MAX(r.id) FROM benchmark_reports r WHERE r.node_id = nodes.id) WHERE id % 2 = 0`,
		} {
			args := []any{}
			if strings.HasPrefix(strings.TrimSpace(q), "INSERT") {
				args = []any{measuredAt, measuredAt}
			}
			if err := db.W.Exec(q, args...).Error; err != nil {
				b.Fatal(err)
			}
		}
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	return db, ix
}

// BenchmarkIndexReload100k is a full reload of the offer index (the read
// and every pre-sorted list), with half the nodes reported or none.
func BenchmarkIndexReload100k(b *testing.B) {
	for _, half := range []bool{false, true} {
		name := "no-reports"
		if half {
			name = "half-reported"
		}
		b.Run(name, func(b *testing.B) {
			db, ix := seedReported100k(b, half)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := db.W.Exec(`UPDATE market_versions SET version = version + 1 WHERE name = 'offers'`).Error; err != nil {
					b.Fatal(err)
				}
				if reloaded, err := ix.Refresh(ctx); !reloaded || err != nil {
					b.Fatalf("reload: %v %v", reloaded, err)
				}
			}
		})
	}
}

// BenchmarkSearchMeasured100k searches by the new orders with half the
// nodes reported: one model in one city (pre-sorted) and two models
// (sorted per search).
func BenchmarkSearchMeasured100k(b *testing.B) {
	_, ix := seedReported100k(b, true)
	for _, c := range []struct {
		name string
		q    offers.Query
	}{
		{"measured/h100-chengdu", offers.Query{GPUs: []string{"h100-sxm"}, City: "chengdu", Sort: offers.SortMeasured}},
		{"measured/h100+h200", offers.Query{GPUs: []string{"h100-sxm", "h200-sxm"}, Sort: offers.SortMeasured}},
		{"reliability/h100+h200", offers.Query{GPUs: []string{"h100-sxm", "h200-sxm"}, Sort: offers.SortReliability}},
		{"price_per_tflop/h100+h200", offers.Query{GPUs: []string{"h100-sxm", "h200-sxm"}, Sort: offers.SortPricePerTFLOP}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.q.Page, c.q.PerPage = 1, 50
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ix.Search(c.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Searches over several models merge the models' pre-sorted lists up to
// the page; every page equals the same page of a full sort, for every
// static order, with and without other filters.
func TestMergedPagesMatchAFullSort(t *testing.T) {
	db := dbtest.SQLite(t)
	ctx := context.Background()
	if err := demo.SeedScale(ctx, db, 3000); err != nil {
		t.Fatal(err)
	}
	// Reports and uptimes on some nodes, with ties, so that every rule of
	// both orders is exercised.
	for _, q := range []string{
		`INSERT INTO benchmark_reports (node_id, gpu_model, gpus, trigger, simulated, nominal, report, bf16_tflops, pct_of_nominal, measured_at, created_at)
			SELECT id, gpu_model, 1, 'verified', id % 2 = 0, '{}', '{}', 100 + id % 7 * 50, 60 + id % 40, ?, ? FROM nodes WHERE id % 3 = 0`,
		`UPDATE nodes SET latest_report_id = (SELECT MAX(r.id) FROM benchmark_reports r WHERE r.node_id = nodes.id) WHERE id % 3 = 0`,
		`UPDATE nodes SET uptime_30d_pct = 99 + (id % 5) / 10.0 WHERE id % 4 = 0`,
	} {
		var args []any
		if strings.Contains(q, "INSERT") {
			args = []any{measuredAt, measuredAt}
		}
		if err := db.W.Exec(q, args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	ix := demoIndex(t, db)
	all := search(t, ix, offers.Query{PerPage: 200})
	if all.Total < 3000 {
		t.Fatalf("%d offers", all.Total)
	}
	var everything []*offers.Listed
	for p := 1; p <= all.Pages; p++ {
		everything = append(everything, search(t, ix, offers.Query{PerPage: 200, Page: p}).Offers...)
	}
	up := func(o *offers.Listed) float64 {
		if o.Uptime30dPct() == nil {
			return -1
		}
		return *o.Uptime30dPct()
	}
	orders := map[string]func(a, b *offers.Listed) int{
		offers.SortPrice:         func(a, b *offers.Listed) int { return 0 },
		offers.SortPricePerTFLOP: func(a, b *offers.Listed) int { return cmpF(a.PricePerTFLOPFen(), b.PricePerTFLOPFen()) },
		offers.SortVRAM:          func(a, b *offers.Listed) int { return b.GPU.VRAMGB - a.GPU.VRAMGB },
		offers.SortReliability:   func(a, b *offers.Listed) int { return cmpF(up(b), up(a)) },
		// Measured on real GPUs, then simulated (never mixed with them),
		// then unmeasured by nominal.
		offers.SortMeasured: func(a, b *offers.Listed) int {
			tier := func(o *offers.Listed) int {
				switch {
				case o.PricePerMeasuredTFLOPFen() == 0:
					return 2
				case o.Report.Simulated:
					return 1
				}
				return 0
			}
			if ta, tb := tier(a), tier(b); ta != tb {
				return ta - tb
			}
			if a.PricePerMeasuredTFLOPFen() > 0 {
				return cmpF(a.PricePerMeasuredTFLOPFen(), b.PricePerMeasuredTFLOPFen())
			}
			return cmpF(a.PricePerTFLOPFen(), b.PricePerTFLOPFen())
		},
	}
	for key, order := range orders {
		for _, q := range []offers.Query{
			{GPUs: []string{"h100-sxm", "h200-sxm", "rtx-4090"}},
			{GPUs: []string{"h100-sxm", "a100-80g-sxm"}, City: "chengdu"},
			{GPUs: []string{"h100-sxm", "l40s", "b200"}, Available: true, MaxPriceFen: 4000},
		} {
			var want []*offers.Listed
			for _, o := range everything {
				if slices.Contains(q.GPUs, o.GPUModel()) && (q.City == "" || o.Datacenter.City == q.City) &&
					(!q.Available || o.AvailableGPUs() > 0) && (q.MaxPriceFen == 0 || o.PricePerGPUHourFen() <= q.MaxPriceFen) {
					want = append(want, o)
				}
			}
			slices.SortFunc(want, func(a, b *offers.Listed) int {
				if c := order(a, b); c != 0 {
					return c
				}
				if a.PricePerGPUHourFen() != b.PricePerGPUHourFen() {
					return int(a.PricePerGPUHourFen() - b.PricePerGPUHourFen())
				}
				return int(a.ID - b.ID)
			})
			q.Sort, q.PerPage = key, 37
			for q.Page = 1; (q.Page-1)*37 < len(want); q.Page++ {
				got := search(t, ix, q)
				lo, hi := (q.Page-1)*37, min(q.Page*37, len(want))
				if got.Total != len(want) || !sameIDs(offerIDs(got.Offers), offerIDs(want[lo:hi])) {
					t.Fatalf("%s %v page %d: total %d, want %d; ids %v, want %v", key, q.GPUs, q.Page, got.Total, len(want), offerIDs(got.Offers), offerIDs(want[lo:hi]))
				}
			}
		}
	}
}

// Under sort=measured, figures measured on real GPUs come first, then
// simulated ones (never mixed with them, even when cheaper per TFLOPS),
// then the unmeasured by nominal, a refused report among them: its
// figures are no measurement.
func TestMeasuredOrderKeepsSimulatedAndRefusedApart(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		ix := demoIndex(t, db)
		swpark, science, cq := demoH100(t, db, "cd-tianfu-swpark"), demoH100(t, db, "cd-science-city"), demoH100(t, db, "cq-liangjiang")
		hitech, bj, sh := demoH100(t, db, "cd-hitech"), demoH100(t, db, "bj-yizhuang"), demoH100(t, db, "sh-jiading")
		gz, fra := demoH100(t, db, "gz-nansha"), demoH100(t, db, "eu-frankfurt")

		addReport(t, db, swpark.NodeID, 700, 70.8, false) // 3400/700 = 4.86 fen per TFLOPS
		addReport(t, db, science.NodeID, 811, 82, true)   // 3550/811 = 4.38, but simulated
		refused := models.BenchmarkReport{NodeID: cq.NodeID, GPUModel: "h100-sxm", GPUs: 8, Trigger: models.BenchOnDemand,
			Nominal: "{}", Report: "{}", RefusedReason: "bf16_gemm_tflops: 1e+09, above the nominal 989", MeasuredAt: measuredAt, CreatedAt: measuredAt}
		if err := db.W.Create(&refused).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Exec(`UPDATE nodes SET latest_report_id = ? WHERE id = ?`, refused.ID, cq.NodeID).Error; err != nil {
			t.Fatal(err)
		}
		bumpOffers(t, db)
		if _, err := ix.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if o, _ := ix.Offer(cq.ID); o.Report == nil || !o.Report.Refused || o.PricePerMeasuredTFLOPFen() != 0 || o.MeasuredTier() != offers.TierUnmeasured {
			t.Fatalf("the refused report's offer: %+v, tier %d", o.Report, o.MeasuredTier())
		}
		if o, _ := ix.Offer(science.ID); o.MeasuredTier() != offers.TierSimulated {
			t.Errorf("simulated report's tier %d", o.MeasuredTier())
		}
		want := []int64{swpark.ID, science.ID, bj.ID, cq.ID, sh.ID, hitech.ID, gz.ID, fra.ID}
		for _, gpus := range [][]string{{"h100-sxm"}, {"h100-sxm", "h200-sxm"}} {
			got := search(t, ix, offers.Query{Sort: offers.SortMeasured, GPUs: gpus, PerPage: 50})
			var h100 []int64
			for _, o := range got.Offers {
				if o.GPUModel() == "h100-sxm" {
					h100 = append(h100, o.ID)
				}
			}
			if !sameIDs(h100, want) {
				t.Errorf("%v: %v, want %v", gpus, h100, want)
			}
		}
	})
}

// The "below expectation" flag is relative to what each model really
// reaches (the catalogue's ExpectedPct), not a flat share of nominal.
func TestReportFlaggedBelowWhatTheModelReaches(t *testing.T) {
	pct := func(p float64) *models.ReportHeadline { return &models.ReportHeadline{PctOfNominal: &p} }
	h100, _ := catalog.GPUModelBySlug("h100-sxm")
	a100, _ := catalog.GPUModelBySlug("a100-80g-sxm")
	if offers.FlagBelowPct(&h100) != 80*offers.BelowExpectedShare || offers.FlagBelowPct(&a100) != 87*offers.BelowExpectedShare {
		t.Fatalf("flag lines: H100 %v, A100 %v", offers.FlagBelowPct(&h100), offers.FlagBelowPct(&a100))
	}
	// 72% of nominal: fine on an H100 (which reaches 80%), low on an A100 (87%).
	if offers.ReportFlagged(&h100, pct(72)) || !offers.ReportFlagged(&a100, pct(72)) {
		t.Errorf("72%%: H100 flagged %v, A100 flagged %v", offers.ReportFlagged(&h100, pct(72)), offers.ReportFlagged(&a100, pct(72)))
	}
	if r := pct(10); !offers.ReportFlagged(&h100, r) {
		t.Error("10% of nominal is not flagged")
	} else if r.Refused = true; offers.ReportFlagged(&h100, r) {
		t.Error("a refused report is flagged as low instead of refused")
	}
}
