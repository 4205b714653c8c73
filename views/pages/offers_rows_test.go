package pages

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"suanli/catalog"
	"suanli/locales"
	"suanli/views"
)

// testOffer is an offer as a search index entry gives it to the table;
// a changed offer is a new *testOffer, as a changed index entry is.
type testOffer struct {
	row   OfferRow
	reads int
}

func (o *testOffer) Row(string) OfferRow {
	o.reads++
	return o.row
}

func newTestOffer(id int64, available int) *testOffer {
	m, _ := catalog.GPUModelBySlug("h100-sxm")
	bf16, pct, up := 744.9, 75.3, 99.95
	monthly, studentMonthly := int64(1_200_000), int64(1_080_000)
	return &testOffer{row: OfferRow{
		ID: id, GPU: &m, MaxGPUs: 8, AvailableGPUs: available, Interconnect: "nvlink",
		StudentDiscountPct: 10, OffpeakDiscountPct: 20,
		PricePerGPUHourFen: 2_350 + id%100, PriceFen: 2_350 + id%100, StudentPriceFen: 2_115,
		MonthlyFen: &monthly, StudentMonthlyFen: &studentMonthly,
		DC:      OfferPlace{Slug: "cd-tianfu-1", City: "chengdu", Name: "天府一号", District: "高新区"},
		Latency: map[string]float64{"chengdu": 1.2, "beijing": 28.5, "shanghai": 31, "guangzhou": 27.4},
		Report: &OfferReport{ID: id, BF16TFLOPS: &bf16, PctOfNominal: &pct, MeasuredAt: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC),
			Status: "verified", FlagBelowPct: 60, ExpectedPct: 80},
		Uptime30dPct:  &up,
		Interruptible: &OfferInterruptible{FloorFen: 900, ClearingFen: 1_100},
	}}
}

func tableCtx(lang string) views.Ctx {
	return views.Ctx{Lang: lang, Path: "/offers", URL: func(string, ...any) string { return "/x" }}
}

func renderRows(tb testing.TB, vc views.Ctx, rows []OfferListRow, w io.Writer) {
	tb.Helper()
	if err := cachedRows(vc, rows, "chengdu", true).Render(context.Background(), w); err != nil {
		tb.Fatal(err)
	}
}

// A row is read from its offer once per revision and language; a changed
// offer (a new revision) shows its new figures at once.
func TestOfferRowsCachedPerRevision(t *testing.T) {
	const id = 990_001 // no other test's id: the cache is the process's
	o := newTestOffer(id, 3)
	rows := []OfferListRow{{ID: id, Rev: o, Offer: o}}
	var first, again strings.Builder
	renderRows(t, tableCtx(locales.EN), rows, &first)
	renderRows(t, tableCtx(locales.EN), rows, &again)
	if o.reads != 1 || first.String() != again.String() {
		t.Fatalf("offer read %d times for two renders of one revision; rows equal: %v", o.reads, first.String() == again.String())
	}
	renderRows(t, tableCtx(locales.ZH), rows, io.Discard)
	if o.reads != 2 {
		t.Errorf("the Chinese row was served from the English one (%d reads)", o.reads)
	}

	changed := newTestOffer(id, 0)
	var after strings.Builder
	renderRows(t, tableCtx(locales.EN), []OfferListRow{{ID: id, Rev: changed, Offer: changed}}, &after)
	if changed.reads != 1 || after.String() == first.String() {
		t.Errorf("a changed offer showed its old row (reads of the new revision: %d)", changed.reads)
	}
	if !strings.Contains(after.String(), `class="none"`) {
		t.Errorf("the changed row does not show the offer as full:\n%s", after.String())
	}
}

// BenchmarkRows renders an offer page's 50 rows: from a warm cache, from a
// cold one (every row a new revision: rendered and stored), and with no
// cache at all.
func BenchmarkRows(b *testing.B) {
	const n = 50
	vc := tableCtx(locales.ZH)
	page := func(base int64) []OfferListRow {
		rows := make([]OfferListRow, n)
		for i := range rows {
			o := newTestOffer(base+int64(i), i%4)
			rows[i] = OfferListRow{ID: o.row.ID, Rev: o, Offer: o, Status: "verified"}
		}
		return rows
	}
	var size strings.Builder
	renderRows(b, vc, page(1_000_000), &size)
	b.Logf("a row is %d bytes of HTML", size.Len()/n)

	b.Run("warm", func(b *testing.B) {
		rows := page(2_000_000)
		renderRows(b, vc, rows, io.Discard)
		b.ReportAllocs()
		for b.Loop() {
			renderRows(b, vc, rows, io.Discard)
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		base := int64(3_000_000)
		for b.Loop() {
			b.StopTimer()
			rows := page(base)
			base += n
			b.StartTimer()
			renderRows(b, vc, rows, io.Discard)
		}
	})
	b.Run("uncached", func(b *testing.B) {
		rows := page(4_000_000)
		for i := range rows {
			rows[i].Rev = nil
		}
		b.ReportAllocs()
		for b.Loop() {
			renderRows(b, vc, rows, io.Discard)
		}
	})
}
