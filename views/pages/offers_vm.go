// Package pages holds the market's public pages (the offer list, an offer,
// a datacentre, benchmark reports, the SLA and latency pages, the API
// docs) and their plain view models; each other area has its own package
// beside it (accountpages, providerpages, adminpages, rentalpages,
// tcopages).
package pages

import (
	"context"
	"hash/maphash"
	"io"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"suanli/catalog"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/rowcache"
)

// OffersVM is the offer list page's view model.
type OffersVM struct {
	// RawQuery is the request's query string exactly as sent: with no
	// errors, it and the language determine the filter form's HTML.
	RawQuery string
	// Query is the search the results are for.
	Query OfferQuery
	// SortKeys are the orders the form offers, in display order.
	SortKeys []string
	// Results are the page's offers and how many matched in all.
	Results OfferList
	// Pages is the number of result pages; PrevValues and NextValues are
	// the URL parameters of the pages before and after this one.
	Pages                  int
	PrevValues, NextValues url.Values
	// Demo and Synthetic say whether a shown offer is a demo or synthetic one.
	Demo, Synthetic bool
	// Relaxations, when nothing matched, are the changes of one filter
	// that would bring offers back, most first.
	Relaxations []OfferRelaxation
	// Errors maps a field name to its message, already translated.
	Errors map[string]string
	// Raw holds the submitted values, so a rejected value stays in its
	// field for the renter to correct.
	Raw url.Values
}

// OfferQuery is the search an offer list shows, as its form and header
// show it.
type OfferQuery struct {
	GPUs                                   []string
	City, Region, From, Interconnect, Sort string
	Available, Student                     bool
	// Interruptible: only offers that take bids (竞价实例).
	Interruptible bool
	Page          int
	// LatencyCity is the city whose latency the results show ("" for none).
	LatencyCity string
	// SortedByMeasured and SortedByReliability say that the results are
	// ordered by measured TFLOPS or by uptime, which the list explains.
	SortedByMeasured, SortedByReliability bool
}

// OfferRelaxation is one filter change that would let offers through.
type OfferRelaxation struct {
	// Filter is the parameter name ("max_latency_ms", "gpu", …); Count is
	// how many offers match with the change.
	Filter string
	Count  int
	// Values are the URL parameters of the search with the change applied,
	// and the relaxed limits its label names.
	Values       url.Values
	MaxLatencyMS float64
	MaxPriceFen  int64
	MinGPUs      int
	MinVRAMGB    int
}

// OfferList is a table of offers: the rows shown and how many matched.
type OfferList struct {
	Total int
	Rows  []OfferListRow
}

// OfferListRow is one row of an offer table. Its HTML is cached in the
// process-wide row cache under ID, Rev and what else it depends on;
// Offer gives the row's figures, read only when the row is not cached.
type OfferListRow struct {
	// ID is the offer's id; Rev names the offer's current figures and
	// changes whenever they do (the search index's entry, a pointer: an
	// entry is replaced, never changed). Rev must be comparable; nil
	// means the row is rendered every time.
	ID    int64
	Rev   any
	Offer OfferRowSource
	// Status, when set, is the benchmark status judged with the offer's
	// witnesses (renter-measured, platform-audited), which the search
	// index does not hold: it replaces the report's own and is part of
	// the cache key.
	Status string
}

// OfferRowSource gives an offer's row figures with names in lang.
type OfferRowSource interface {
	Row(lang string) OfferRow
}

// OfferRow is what an offer table shows of one offer.
type OfferRow struct {
	ID  int64
	GPU *catalog.GPUModel
	// MaxGPUs is the most GPUs one rental may take; AvailableGPUs how many are free.
	MaxGPUs, AvailableGPUs                 int
	Interconnect                           string
	StudentDiscountPct, OffpeakDiscountPct int
	Demo, Synthetic                        bool
	// PricePerGPUHourFen is the list price; PriceFen and StudentPriceFen
	// are what everyone and a confirmed lab member pay per GPU-hour.
	PricePerGPUHourFen        int64
	PriceFen, StudentPriceFen int64
	// MonthlyFen and StudentMonthlyFen are the monthly prices per GPU,
	// nil when the offer sells no month.
	MonthlyFen, StudentMonthlyFen *int64
	DC                            OfferPlace
	// Latency maps a city slug to the round-trip time from it in ms.
	Latency map[string]float64
	// Report is the node's latest benchmark report, nil when none.
	Report *OfferReport
	// Uptime30dPct is the node's 30-day uptime, nil when unknown.
	Uptime30dPct *float64
	// Interruptible is the offer's floor and clearing price for
	// interruptible renting, nil when it takes no bids.
	Interruptible *OfferInterruptible
}

// OfferInterruptible is what an offer shows of interruptible renting
// (竞价实例), per GPU-hour in fen before the off-peak and student
// discounts: the provider's floor, and the clearing price, what a bid must
// reach to run now (the floor while a GPU is free or no bid runs, else the
// lowest bid running, which a higher bid interrupts).
type OfferInterruptible struct {
	FloorFen    int64
	ClearingFen int64
}

// OfferPlace is an offer's datacentre, named in the reader's language.
type OfferPlace struct {
	Slug, City, Name, District string
}

// OfferReport is what offers show of a benchmark report: its per-GPU
// headline figures (nil when that load was absent).
type OfferReport struct {
	ID                                              int64
	BF16TFLOPS, FP16TFLOPS, MemBWGBps, PctOfNominal *float64
	Simulated                                       bool
	MeasuredAt                                      time.Time
	// Flagged is true when the share of nominal is below FlagBelowPct
	// (a share of what the model really reaches, ExpectedPct).
	Flagged      bool
	FlagBelowPct float64
	ExpectedPct  float64
	// Status is benchmarks.Status: verified, unverified, disputed,
	// refused or simulated.
	Status string
}

func (vm OffersVM) gpuChecked(slug string) bool { return slices.Contains(vm.Query.GPUs, slug) }

// field returns the submitted text of a field.
func (vm OffersVM) field(name string) string { return vm.Raw.Get(name) }

func withQuery(base string, v url.Values) string {
	if len(v) == 0 {
		return base
	}
	return base + "?" + v.Encode()
}

// yourPrice is the on-demand price per GPU-hour the reader pays: the
// student price for a confirmed member of an approved lab.
// The search orders and filters by the same figure (ListedOffer.PriceFen).
func yourPrice(vc views.Ctx, o OfferRow) int64 {
	if vc.Student {
		return o.StudentPriceFen
	}
	return o.PriceFen
}

// yourMonthly is the monthly price per GPU the viewer pays (a lab member's
// student discount applies to terms as to hours; pricing.Quote), nil when
// the offer sells no month.
func yourMonthly(vc views.Ctx, o OfferRow) *int64 {
	if vc.Student {
		return o.StudentMonthlyFen
	}
	return o.MonthlyFen
}

// offpeakPrice is the reader's price at the off-peak rate (discounts multiply).
func offpeakPrice(vc views.Ctx, o OfferRow) int64 {
	if vc.Student {
		return pricing.Discounted(o.PricePerGPUHourFen, o.OffpeakDiscountPct, o.StudentDiscountPct)
	}
	return pricing.Discounted(o.PricePerGPUHourFen, o.OffpeakDiscountPct)
}

func offerURL(vc views.Ctx, o OfferRow) string {
	return vc.URL(routenames.OffersShow, strconv.FormatInt(o.ID, 10))
}

func dcURL(vc views.Ctx, slug string) string { return vc.URL(routenames.DatacentersShow, slug) }

func bf16(vc views.Ctx, m catalog.GPUModel) string {
	if m.BF16TFLOPS == 0 {
		return vc.T("spec.no_bf16", views.Num(m.FP16TFLOPS))
	}
	return views.Num(m.BF16TFLOPS)
}

func latencyCell(vc views.Ctx, o OfferRow, city string) string {
	if city == "" {
		return "—"
	}
	if ms, ok := o.Latency[city]; ok {
		return views.MS(ms)
	}
	return vc.T("latency.unpublished")
}

func relaxLabel(vc views.Ctx, r OfferRelaxation) string {
	q := r
	switch r.Filter {
	case "max_latency_ms":
		return vc.N("relax.latency", r.Count, views.Num(q.MaxLatencyMS))
	case "max_price":
		return vc.N("relax.price", r.Count, views.Yuan(q.MaxPriceFen))
	case "min_gpus":
		return vc.N("relax.min_gpus", r.Count, q.MinGPUs)
	case "min_vram_gb":
		return vc.N("relax.min_vram", r.Count, q.MinVRAMGB)
	}
	return vc.N("relax.drop", r.Count, vc.T("filter."+r.Filter))
}

// tflopsText writes a measured figure to one decimal ("791.3", "62").
func tflopsText(f float64) string { return views.Num(math.Round(f*10) / 10) }

// pctText writes a share of nominal as a whole percent ("80%").
func pctText(f float64) string { return views.Num(math.Round(f)) + "%" }

// reportDate is the day a report was measured, in Asia/Shanghai.
func reportDate(r *OfferReport) string {
	return r.MeasuredAt.In(pricing.Shanghai).Format("2006-01-02")
}

func reportURL(vc views.Ctx, r *OfferReport) string {
	return vc.URL(routenames.BenchmarksShow, strconv.FormatInt(r.ID, 10))
}

// flagLabel is the flag of a report below LowPctOfNominal.
func flagLabel(vc views.Ctx, r *OfferReport) string {
	return vc.T("offers.m.flag_low", views.Num(math.Round(r.FlagBelowPct)))
}

// uptimeText writes a 30-day uptime, truncated (never rounded up) to two
// decimals, or "—" when unknown.
func uptimeText(p *float64) string {
	if p == nil {
		return "—"
	}
	return strconv.FormatFloat(math.Floor(*p*100)/100, 'f', 2, 64) + "%"
}

func interconnectLabel(vc views.Ctx, ic string) string { return vc.T("ic." + ic) }

func sortLabel(vc views.Ctx, key string) string { return vc.T("sort." + key) }

// rowCacheBytes is the row cache's budget. A row is ~1.55 kB of HTML and
// ~1.75 kB with its key (BenchmarkRows logs the size), so 8 MiB keeps
// ~4,800 rows: 50-row pages of the ~50 most popular searches in both
// languages. The cache is live heap, which the GC's target doubles, and
// the server's whole memory target at 100k offers is 150 MB. A miss costs
// one row's render, ~13 µs.
const rowCacheBytes = 8 << 20

// rowCache holds the offer tables' rows of every offer, language and
// latency city within rowCacheBytes.
var rowCache = rowcache.New(rowCacheBytes, func(k rowCacheKey) uint64 { return uint64(k.id) })

// rowCacheKey names a row's HTML: the offer, its revision and the rest.
// A revision that is a pointer keeps its index entry alive until the
// row is evicted; an old revision's rows are never read again, so CLOCK
// evicts them first.
type rowCacheKey struct {
	id  int64
	rev any
	rowKey
}

// cachedRow returns the offer's row HTML, rendering it on a miss. The
// result grid of the offer list is most of its page; rendering 50 rows
// per request was 80% of its cost.
func cachedRow(vc views.Ctx, o OfferListRow, city string, withDC bool) string {
	key := rowCacheKey{o.ID, o.Rev, rowKey{vc.Lang, city, o.Status, withDC, vc.Student}}
	if o.Rev != nil {
		if s, ok := rowCache.Get(key); ok {
			return s
		}
	}
	var b strings.Builder
	row := o.Offer.Row(vc.Lang)
	if row.Report != nil && o.Status != "" {
		row.Report.Status = o.Status
	}
	if err := offerRow(vc, row, city, withDC).Render(context.Background(), &b); err != nil {
		// Rendering into a strings.Builder cannot fail but for a template
		// bug; show nothing rather than half a row.
		return ""
	}
	s := b.String()
	if o.Rev != nil {
		// The builder's buffer grew by doubling: a copy of the row's own
		// length keeps the cache's memory what its budget counts. The
		// city may be a slice of the request's query: copy it rather than
		// keep the whole query alive.
		s = strings.Clone(s)
		key.city = strings.Clone(city)
		rowCache.Put(key, s, len(key.city)+len(key.status))
	}
	return s
}

// rowKey is what a row's HTML depends on besides the offer.
type rowKey struct {
	lang, city, status string
	withDC, student    bool
}

// cachedRows writes the rows of offers straight to the page.
func cachedRows(vc views.Ctx, rows []OfferListRow, city string, withDC bool) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		for _, o := range rows {
			if _, err := io.WriteString(w, cachedRow(vc, o, city, withDC)); err != nil {
				return err
			}
		}
		return nil
	})
}

// filterForms caches the filter form's HTML by language and raw query:
// the form depends on nothing else when no field has an error, and a
// market's popular searches repeat. Every distinct query string is a new
// entry, so the cache has a byte budget (filterFormBytes) rather than
// growing with the queries seen.
var filterForms = rowcache.New(filterFormBytes, func(k string) uint64 { return maphash.String(formSeed, k) })

// filterFormBytes is the filter forms' budget: a form is ~5.5 kB of HTML
// (every GPU model and city is an option), so 2 MiB keeps the forms of
// ~370 searches, the popular ones. (It was 4,096 forms, ~22 MB.)
const filterFormBytes = 2 << 20

var formSeed = maphash.MakeSeed()

func cachedFilters(vc views.Ctx, vm OffersVM) string {
	cacheable := len(vm.Errors) == 0 && len(vm.RawQuery) < 512
	key := vc.Lang + "?" + vm.RawQuery
	if cacheable {
		if s, ok := filterForms.Get(key); ok {
			return s
		}
	}
	var b strings.Builder
	if err := offerFilters(vc, vm).Render(context.Background(), &b); err != nil {
		return ""
	}
	s := b.String()
	if cacheable {
		filterForms.Put(key, s, len(key))
	}
	return s
}
