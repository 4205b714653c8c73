package pricing

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func at(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04:05", s, Shanghai)
	if err != nil {
		panic(err)
	}
	return t
}

var terms = Terms{PricePerGPUHourFen: 3400, OffpeakDiscountPct: 20, StudentDiscountPct: 10,
	WeeklyPricePerGPUFen: ptr(553500), MonthlyPricePerGPUFen: ptr(2050000)}

func ptr(n int64) *int64 { return &n }

func mustQuote(t *testing.T, r Request, b Buyer) Breakdown {
	t.Helper()
	q, err := Quote(terms, r, b)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// 2026-12-01 is a Tuesday; 2026-12-04 a Friday; 2026-12-07 a Monday.
func TestBoundaries(t *testing.T) {
	cases := []struct {
		start         string
		seconds       int64
		peak, offpeak int64
	}{
		{"2026-12-01 21:59:59", 2, 1, 1},       // 22:00:00 starts off-peak
		{"2026-12-01 07:59:59", 2, 1, 1},       // 08:00:00 starts peak
		{"2026-12-01 10:00:00", 3600, 3600, 0}, // a peak hour
		{"2026-12-01 23:00:00", 3600, 0, 3600}, // an off-peak hour
		{"2026-12-04 23:59:59", 2, 0, 2},       // Friday night into Saturday: off-peak both
		{"2026-12-06 23:59:59", 2, 0, 2},       // Sunday night into Monday 00:00 (before 08:00)
		{"2026-12-07 07:59:59", 2, 1, 1},       // Monday: peak starts at 08:00
		// Friday 21:00 for three days: 1 h on Friday, 13 h on Monday at peak.
		{"2026-12-04 21:00:00", 3 * 86400, 14 * 3600, 3*86400 - 14*3600},
	}
	for _, c := range cases {
		start := at(c.start)
		peak, off := SplitOffpeak(start, start.Add(time.Duration(c.seconds)*time.Second))
		if peak != c.peak || off != c.offpeak {
			t.Errorf("%s +%ds: peak %d off-peak %d, want %d/%d", c.start, c.seconds, peak, off, c.peak, c.offpeak)
		}
		if c.seconds >= MinimumSeconds {
			q := mustQuote(t, Request{GPUs: 1, Start: start, Seconds: c.seconds}, Buyer{})
			if q.PeakSeconds != c.peak || q.OffpeakSeconds != c.offpeak {
				t.Errorf("quote %s: %+v", c.start, q)
			}
		}
	}
}

func TestFigures(t *testing.T) {
	// One peak hour of 8 GPUs at ¥34.00: ¥272.00.
	q := mustQuote(t, Request{GPUs: 8, Start: at("2026-12-01 10:00:00"), Seconds: 3600}, Buyer{})
	if q.TotalFen != 27200 || q.PeakFen != 27200 || len(q.Discounts) != 0 {
		t.Errorf("peak hour: %+v", q)
	}
	// One off-peak hour for a student: 3400 × 0.8 × 0.9 = 2448.
	q = mustQuote(t, Request{GPUs: 1, Start: at("2026-12-01 23:00:00"), Seconds: 3600}, Buyer{Student: true})
	if q.TotalFen != 2448 || len(q.Discounts) != 2 {
		t.Errorf("student off-peak hour: %+v", q)
	}
	// The 60-second minimum: 10 s are billed as 60 s: 3400/60 = 56.67 → 57.
	q = mustQuote(t, Request{GPUs: 1, Start: at("2026-12-01 10:00:00"), Seconds: 10}, Buyer{})
	if !q.MinimumApplied || q.BilledSeconds != 60 || q.TotalFen != 57 {
		t.Errorf("minimum: %+v", q)
	}
	// Premium SLA: +15%.
	q = mustQuote(t, Request{GPUs: 1, Start: at("2026-12-01 10:00:00"), Seconds: 3600, SLA: "premium"}, Buyer{})
	if q.TotalFen != 3910 || q.SLASurchargeFen != 510 {
		t.Errorf("premium: %+v", q)
	}
	// A month up front for 2 GPUs, student: 2 × 20500 × 0.9 = ¥36,900.
	q = mustQuote(t, Request{GPUs: 2, Start: at("2026-12-01 10:00:00"), Term: Month}, Buyer{Student: true})
	if q.TotalFen != 3690000 || q.End.Sub(q.Start) != 30*24*time.Hour {
		t.Errorf("month: %+v", q)
	}
	for _, bad := range []Request{
		{GPUs: 0, Start: at("2026-12-01 10:00:00"), Seconds: 60},
		{GPUs: 65, Start: at("2026-12-01 10:00:00"), Seconds: 60},
		{GPUs: 1, Start: at("2026-12-01 10:00:00"), Seconds: 0},
		{GPUs: 1, Start: at("2026-12-01 10:00:00"), Seconds: MaxOnDemandSeconds + 1},
		{GPUs: 1, Start: at("2026-12-01 10:00:00"), Seconds: 60, SLA: "gold"},
		{GPUs: 1, Start: at("2026-12-01 10:00:00"), Term: "year"},
		{GPUs: 1, Seconds: 60},
	} {
		if _, err := Quote(terms, bad, Buyer{}); err == nil {
			t.Errorf("%+v quoted", bad)
		}
	}
	noTerms := terms
	noTerms.WeeklyPricePerGPUFen = nil
	if _, err := Quote(noTerms, Request{GPUs: 1, Start: at("2026-12-01 10:00:00"), Term: Week}, Buyer{}); err == nil {
		t.Error("weekly quoted without a weekly price")
	}
}

func genTerms(t *rapid.T) Terms {
	return Terms{
		PricePerGPUHourFen: rapid.Int64Range(1, 10_000_000).Draw(t, "price"),
		OffpeakDiscountPct: rapid.IntRange(0, 90).Draw(t, "offpeak"),
		StudentDiscountPct: rapid.IntRange(0, 90).Draw(t, "student"),
	}
}

func genStart(t *rapid.T) time.Time {
	// Any second in 2026–2028, so weekends, midnights and boundaries all occur.
	return time.Unix(rapid.Int64Range(1767225600, 1861920000).Draw(t, "start"), 0)
}

// Quoting [a,c) equals [a,b) + [b,c) within one fen (when both parts are
// past the minimum, which otherwise bills seconds that are not in [a,c)).
func TestQuoteIsAdditive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tm := genTerms(t)
		a := genStart(t)
		ab := rapid.Int64Range(MinimumSeconds, 30*86400).Draw(t, "ab")
		bc := rapid.Int64Range(MinimumSeconds, 30*86400).Draw(t, "bc")
		gpus := rapid.IntRange(1, 64).Draw(t, "gpus")
		buyer := Buyer{Student: rapid.Bool().Draw(t, "studentBuyer")}
		sla := rapid.SampledFrom([]string{"standard", "premium"}).Draw(t, "sla")
		whole, err1 := Quote(tm, Request{GPUs: gpus, Start: a, Seconds: ab + bc, SLA: sla}, buyer)
		left, err2 := Quote(tm, Request{GPUs: gpus, Start: a, Seconds: ab, SLA: sla}, buyer)
		right, err3 := Quote(tm, Request{GPUs: gpus, Start: a.Add(time.Duration(ab) * time.Second), Seconds: bc, SLA: sla}, buyer)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatal(err1, err2, err3)
		}
		if d := whole.TotalFen - left.TotalFen - right.TotalFen; d < -1 || d > 1 {
			t.Fatalf("[a,c) = %d, [a,b) + [b,c) = %d + %d", whole.TotalFen, left.TotalFen, right.TotalFen)
		}
		if whole.PeakSeconds+whole.OffpeakSeconds != ab+bc || whole.PeakSeconds != left.PeakSeconds+right.PeakSeconds {
			t.Fatalf("seconds do not add up: %+v %+v %+v", whole, left, right)
		}
	})
}

// Prices are never negative and never fall as the duration grows.
func TestQuoteIsMonotonic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tm := genTerms(t)
		a := genStart(t)
		s1 := rapid.Int64Range(1, 60*86400).Draw(t, "s1")
		s2 := s1 + rapid.Int64Range(0, 60*86400).Draw(t, "more")
		buyer := Buyer{Student: rapid.Bool().Draw(t, "studentBuyer")}
		q1, err1 := Quote(tm, Request{GPUs: 1, Start: a, Seconds: s1}, buyer)
		q2, err2 := Quote(tm, Request{GPUs: 1, Start: a, Seconds: s2}, buyer)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if q1.TotalFen < 0 || q2.TotalFen < q1.TotalFen {
			t.Fatalf("%d s → %d fen, %d s → %d fen", s1, q1.TotalFen, s2, q2.TotalFen)
		}
	})
}

// Asia/Shanghai has no daylight saving: every local day is 86,400 s with
// exactly 14 peak hours on weekdays and none at weekends.
func TestNoDST(t *testing.T) {
	day := at("2026-01-01 00:00:00")
	for i := 0; i < 366; i++ {
		d := day.AddDate(0, 0, i)
		peak, off := SplitOffpeak(d, d.AddDate(0, 0, 1))
		want := int64(14 * 3600)
		if wd := d.Weekday(); wd == time.Saturday || wd == time.Sunday {
			want = 0
		}
		if peak+off != 86400 || peak != want {
			t.Fatalf("%s: peak %d off %d", d.Format("2006-01-02 Mon"), peak, off)
		}
	}
}

// An offer's own minimum duration is what a short on-demand quote bills,
// as the meter bills it at stop; one below the platform's 60 s does not
// lower that.
func TestQuoteBillsTheOffersMinimum(t *testing.T) {
	start := at("2026-12-01 10:00:00") // peak
	for _, c := range []struct {
		min, secs, billed int64
		applied           bool
	}{
		{600, 30, 600, true},
		{600, 599, 600, true},
		{600, 601, 601, false},
		{0, 30, MinimumSeconds, true},
		{10, 30, MinimumSeconds, true},
	} {
		tm := terms
		tm.MinimumSeconds = c.min
		q, err := Quote(tm, Request{GPUs: 1, Start: start, Seconds: c.secs}, Buyer{})
		if err != nil {
			t.Fatal(err)
		}
		if q.BilledSeconds != c.billed || q.MinimumApplied != c.applied {
			t.Errorf("minimum %d s, %d s asked: billed %d s (minimum applied %v), want %d s (%v)",
				c.min, c.secs, q.BilledSeconds, q.MinimumApplied, c.billed, c.applied)
		}
		// 600 s at ¥34/h peak is ¥5.67.
		if c.min == 600 && c.secs == 30 && q.TotalFen != 567 {
			t.Errorf("600-s minimum at ¥34/h: %d fen, want 567", q.TotalFen)
		}
	}
}

// A new volume's storage is quoted beside the GPUs, at the offer's price
// per GB and 30 days, per hour, per day and over the quoted window, with
// no discount or surcharge; the total is both. To the fen.
func TestQuoteIncludesTheVolumesStorage(t *testing.T) {
	tm := terms
	tm.StoragePricePerGBMonthFen = 30 // ¥0.30 a GB-month
	start := at("2026-12-01 10:00:00")
	quote := func(r Request, b Buyer) Breakdown {
		t.Helper()
		q, err := Quote(tm, r, b)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	for _, c := range []struct {
		name                    string
		req                     Request
		buyer                   Buyer
		gpu, hour, day, storage int64
		wantTotal               int64
	}{
		// 50 GB × 30 fen = 1500 fen per 30 days: 50 fen a day, 2.08 an
		// hour; two peak hours of one GPU at ¥34: 6800 + 4.17 → 4.
		{"two hours", Request{GPUs: 1, Start: start, Seconds: 7200, VolumeGB: 50}, Buyer{}, 6800, 2, 50, 4, 6804},
		// The student discount and the SLA surcharge are the GPUs' only:
		// 3400 × 0.9 × 1.15 = 3519; an hour of storage 2 fen.
		{"student premium hour", Request{GPUs: 1, Start: start, Seconds: 3600, VolumeGB: 50, SLA: "premium"}, Buyer{Student: true}, 3519, 2, 50, 2, 3521},
		// A week up front for 2 GPUs (2 × 5535 = ¥11,070), and 7 days of
		// storage metered beside it: 7 × 50 = 350.
		{"week", Request{GPUs: 2, Start: start, Term: Week, VolumeGB: 50}, Buyer{}, 1107000, 2, 50, 350, 1107350},
		// A month of 7 GB: 7 × 30 = 210 fen; a day 7 fen, an hour 0.29 → 0.
		{"month of 7 GB", Request{GPUs: 1, Start: start, Term: Month, VolumeGB: 7}, Buyer{}, 2050000, 0, 7, 210, 2050210},
		// The 60-s minimum bills 60 s of GPU; the storage of those 60 s of
		// 1000 GB: 1000 × 30 × 60 / 2,592,000 = 0.69 → 1.
		{"minimum", Request{GPUs: 1, Start: start, Seconds: 10, VolumeGB: 1000}, Buyer{}, 57, 42, 1000, 1, 58},
		// Mounting an existing volume adds nothing.
		{"no new volume", Request{GPUs: 1, Start: start, Seconds: 3600}, Buyer{}, 3400, 0, 0, 0, 3400},
	} {
		q := quote(c.req, c.buyer)
		if q.GPUFen != c.gpu || q.StoragePerHourFen != c.hour || q.StoragePerDayFen != c.day || q.StorageFen != c.storage || q.TotalFen != c.wantTotal {
			t.Errorf("%s: GPUs %d, storage %d/h %d/day %d in all, total %d; want %d, %d/h %d/day %d, total %d",
				c.name, q.GPUFen, q.StoragePerHourFen, q.StoragePerDayFen, q.StorageFen, q.TotalFen, c.gpu, c.hour, c.day, c.storage, c.wantTotal)
		}
		if q.VolumeGB != c.req.VolumeGB || (q.VolumeGB > 0) != (q.StoragePricePerGBMonthFen == 30) {
			t.Errorf("%s: volume %d GB at %d, want %d GB at the offer's 30", c.name, q.VolumeGB, q.StoragePricePerGBMonthFen, c.req.VolumeGB)
		}
	}
	if _, err := Quote(tm, Request{GPUs: 1, Start: start, Seconds: 60, VolumeGB: -1}, Buyer{}); err == nil {
		t.Error("a negative volume quoted")
	}
}

// Storage quoted over [a,c) is [a,b) + [b,c) within one fen, as the
// meter, which bills it per second and carries what is below a fen.
func TestStorageQuoteIsAdditive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gb := rapid.IntRange(1, 10000).Draw(t, "gb")
		price := rapid.Int64Range(0, 1000).Draw(t, "price")
		ab := rapid.Int64Range(1, 60*86400).Draw(t, "ab")
		bc := rapid.Int64Range(1, 60*86400).Draw(t, "bc")
		whole, left, right := StorageFen(gb, price, ab+bc), StorageFen(gb, price, ab), StorageFen(gb, price, bc)
		if d := whole - left - right; d < -1 || d > 1 {
			t.Fatalf("%d GB at %d: [a,c) %d, [a,b) + [b,c) = %d + %d", gb, price, whole, left, right)
		}
		// Per second, with the carry, as the meter posts it.
		var posted, carry int64
		for _, secs := range []int64{ab, bc} {
			num := int64(gb)*price*secs + carry
			posted, carry = posted+num/StorageMonthSeconds, num%StorageMonthSeconds
		}
		if d := whole - posted; d < 0 || d > 1 {
			t.Fatalf("%d GB at %d for %d s: quoted %d, metered %d", gb, price, ab+bc, whole, posted)
		}
	})
}
