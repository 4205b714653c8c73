package pricing

import (
	"errors"
	"fmt"
	"math/big"
	"time"
)

// MinimumSeconds is the least an on-demand rental is billed for.
const MinimumSeconds = 60

// MaxOnDemandSeconds bounds an on-demand quote (longer use is a term).
const MaxOnDemandSeconds = 366 * 24 * 3600

// Terms are what an offer charges.
type Terms struct {
	PricePerGPUHourFen    int64
	WeeklyPricePerGPUFen  *int64
	MonthlyPricePerGPUFen *int64
	OffpeakDiscountPct    int
	StudentDiscountPct    int
	// MinimumSeconds is the offer's least billed duration on demand;
	// below the platform's MinimumSeconds (0 included) that one applies.
	MinimumSeconds int64
	// StoragePricePerGBMonthFen is what a GB of volume costs for
	// StorageMonthSeconds (no discount applies to storage).
	StoragePricePerGBMonthFen int64
}

// Buyer is what about the renter changes the price.
type Buyer struct {
	// Student is true for a confirmed member of an approved lab.
	Student bool
}

// Term is how a rental is bought: on demand (billed per second) or for
// a week or a month paid up front.
type Term string

// Terms.
const (
	OnDemand Term = "on_demand"
	Week     Term = "week"
	Month    Term = "month"
)

// Request is what to quote.
type Request struct {
	GPUs  int
	Start time.Time
	// Seconds is the on-demand duration; ignored for a term.
	Seconds int64
	Term    Term   // OnDemand (default), Week or Month
	SLA     string // a tier name; "" means standard
	// VolumeGB is the new volume the rental makes, billed as storage
	// while it exists; 0 for none (a rental that mounts an existing
	// volume adds no storage: that volume is billed already).
	VolumeGB int
}

// Discount is one discount a quote applied.
type Discount struct {
	Kind string `json:"kind"` // "offpeak" or "student"
	Pct  int    `json:"pct"`
	// Seconds it applied to (on-demand); 0 for a term.
	Seconds int64 `json:"seconds,omitempty"`
}

// Breakdown is a quote: what is billed and why. Amounts are in fen, for
// all GPUs.
type Breakdown struct {
	GPUs            int        `json:"gpus"`
	Term            Term       `json:"term"`
	Start           time.Time  `json:"start"`
	End             time.Time  `json:"end"`
	RequestedSecs   int64      `json:"requested_seconds"`
	BilledSeconds   int64      `json:"billed_seconds"`
	MinimumApplied  bool       `json:"minimum_applied"`
	PeakSeconds     int64      `json:"peak_seconds"`
	OffpeakSeconds  int64      `json:"offpeak_seconds"`
	PeakFen         int64      `json:"peak_fen"`
	OffpeakFen      int64      `json:"offpeak_fen"`
	TermFen         int64      `json:"term_fen"`
	Discounts       []Discount `json:"discounts"`
	SLATier         string     `json:"sla_tier"`
	SLASurchargePct int        `json:"sla_surcharge_pct"`
	SLASurchargeFen int64      `json:"sla_surcharge_fen"`
	// GPUFen is what the GPUs cost: the peak and off-peak parts (or the
	// term's price), the discounts and the SLA surcharge.
	GPUFen int64 `json:"gpu_fen"`
	// VolumeGB is the new volume quoted (0: none); its storage costs
	// StoragePerHourFen an hour and StoragePerDayFen a day at
	// StoragePricePerGBMonthFen, and StorageFen over [Start, End).
	VolumeGB                  int   `json:"volume_gb"`
	StoragePricePerGBMonthFen int64 `json:"storage_price_per_gb_month_fen"`
	StoragePerHourFen         int64 `json:"storage_per_hour_fen"`
	StoragePerDayFen          int64 `json:"storage_per_day_fen"`
	StorageFen                int64 `json:"storage_fen"`
	// TotalFen is GPUFen + StorageFen.
	TotalFen int64  `json:"total_fen"`
	Currency string `json:"currency"`
}

// QuoteError is a request that cannot be quoted; Field names the parameter.
type QuoteError struct {
	Field, Reason string
}

func (e *QuoteError) Error() string { return e.Field + ": " + e.Reason }

// ErrNoTerm is returned when the offer has no price for the term asked for.
var ErrNoTerm = errors.New("this offer has no price for that term")

// Quote prices a request. On demand, every second is billed at the peak or
// off-peak rate of the instant it falls in (off-peak: 22:00–08:00
// Asia/Shanghai and weekends), with at least the offer's minimum (never
// under MinimumSeconds) billed;
// discounts multiply, base × (1 − off-peak) × (1 − student); the SLA
// surcharge applies on top. The exact amount is rounded to the fen once,
// at the end, so quoting [a,c) equals [a,b) + [b,c) within one fen. A term
// (week or month) is paid up front at its price; the student discount and
// the SLA surcharge apply to it, the off-peak discount does not. A new
// volume adds its storage over the same window (StorageFen), at the
// offer's storage price, with no discount or surcharge.
func Quote(t Terms, r Request, b Buyer) (Breakdown, error) {
	q := Breakdown{GPUs: r.GPUs, Term: r.Term, Start: r.Start.UTC(), Currency: "cny", Discounts: []Discount{}}
	if q.Term == "" {
		q.Term = OnDemand
	}
	tier, ok := TierByName(r.SLA)
	if !ok {
		return Breakdown{}, &QuoteError{"sla", fmt.Sprintf("unknown SLA tier %q", r.SLA)}
	}
	q.SLATier, q.SLASurchargePct = tier.Name, tier.SurchargePct
	if r.GPUs < 1 || r.GPUs > 64 {
		return Breakdown{}, &QuoteError{"gpus", "must be 1 to 64"}
	}
	if t.PricePerGPUHourFen <= 0 {
		return Breakdown{}, &QuoteError{"offer", "has no price"}
	}
	if r.Start.IsZero() {
		return Breakdown{}, &QuoteError{"start", "missing"}
	}
	if r.VolumeGB < 0 || t.StoragePricePerGBMonthFen < 0 {
		return Breakdown{}, &QuoteError{"volume_gb", "must not be negative"}
	}
	student := 0
	if b.Student && t.StudentDiscountPct > 0 {
		student = t.StudentDiscountPct
	}
	gpus := big.NewInt(int64(r.GPUs))
	// exact is the amount in fen × den, before the SLA surcharge.
	var exact *big.Int
	var den *big.Int
	switch q.Term {
	case OnDemand:
		if r.Seconds <= 0 || r.Seconds > MaxOnDemandSeconds {
			return Breakdown{}, &QuoteError{"seconds", fmt.Sprintf("must be 1 to %d", MaxOnDemandSeconds)}
		}
		least := max(t.MinimumSeconds, MinimumSeconds)
		q.RequestedSecs, q.BilledSeconds = r.Seconds, max(r.Seconds, least)
		q.MinimumApplied = r.Seconds < least
		q.End = q.Start.Add(time.Duration(q.BilledSeconds) * time.Second)
		q.PeakSeconds, q.OffpeakSeconds = SplitOffpeak(q.Start, q.End)
		// fen = price × gpus × (peak × (100−stu)·100 + offpeak × (100−off)(100−stu)) / (3600 · 100 · 100)
		peak := new(big.Int).Mul(big.NewInt(q.PeakSeconds), big.NewInt(int64((100-student)*100)))
		off := new(big.Int).Mul(big.NewInt(q.OffpeakSeconds), big.NewInt(int64((100-t.OffpeakDiscountPct)*(100-student))))
		unit := new(big.Int).Mul(big.NewInt(t.PricePerGPUHourFen), gpus)
		den = big.NewInt(3600 * 100 * 100)
		q.PeakFen = roundDiv(new(big.Int).Mul(unit, peak), den)
		q.OffpeakFen = roundDiv(new(big.Int).Mul(unit, off), den)
		exact = new(big.Int).Mul(unit, new(big.Int).Add(peak, off))
		if t.OffpeakDiscountPct > 0 && q.OffpeakSeconds > 0 {
			q.Discounts = append(q.Discounts, Discount{Kind: "offpeak", Pct: t.OffpeakDiscountPct, Seconds: q.OffpeakSeconds})
		}
		if student > 0 {
			q.Discounts = append(q.Discounts, Discount{Kind: "student", Pct: student, Seconds: q.BilledSeconds})
		}
	case Week, Month:
		price, days := t.WeeklyPricePerGPUFen, 7
		if q.Term == Month {
			price, days = t.MonthlyPricePerGPUFen, 30
		}
		if price == nil {
			return Breakdown{}, &QuoteError{"term", ErrNoTerm.Error()}
		}
		q.End = q.Start.AddDate(0, 0, days)
		q.BilledSeconds = int64(q.End.Sub(q.Start) / time.Second)
		den = big.NewInt(100)
		exact = new(big.Int).Mul(new(big.Int).Mul(big.NewInt(*price), gpus), big.NewInt(int64(100-student)))
		q.TermFen = roundDiv(exact, den)
		if student > 0 {
			q.Discounts = append(q.Discounts, Discount{Kind: "student", Pct: student})
		}
	default:
		return Breakdown{}, &QuoteError{"term", "must be on_demand, week or month"}
	}
	subtotal := roundDiv(exact, den)
	withSLA := new(big.Int).Mul(exact, big.NewInt(int64(100+tier.SurchargePct)))
	q.GPUFen = roundDiv(withSLA, new(big.Int).Mul(den, big.NewInt(100)))
	q.SLASurchargeFen = q.GPUFen - subtotal
	if r.VolumeGB > 0 {
		q.VolumeGB, q.StoragePricePerGBMonthFen = r.VolumeGB, t.StoragePricePerGBMonthFen
		q.StoragePerHourFen = StorageFen(r.VolumeGB, t.StoragePricePerGBMonthFen, 3600)
		q.StoragePerDayFen = StorageFen(r.VolumeGB, t.StoragePricePerGBMonthFen, 86400)
		q.StorageFen = StorageFen(r.VolumeGB, t.StoragePricePerGBMonthFen, q.BilledSeconds)
	}
	q.TotalFen = q.GPUFen + q.StorageFen
	return q, nil
}

// StorageMonthSeconds is the month storage prices are quoted for (30
// days): a volume of S GB at P fen per GB-month owes S×P/StorageMonthSeconds
// fen a second.
const StorageMonthSeconds = 30 * 24 * 3600

// StorageFen is what seconds of a volume of gb GB cost at pricePerGBMonth
// fen per GB-month, rounded half up to the fen (the meter bills the same
// amount per second and carries what is below a fen, so over any
// interval it bills this within one fen).
func StorageFen(gb int, pricePerGBMonthFen, seconds int64) int64 {
	if gb <= 0 || pricePerGBMonthFen <= 0 || seconds <= 0 {
		return 0
	}
	num := new(big.Int).Mul(big.NewInt(int64(gb)), big.NewInt(pricePerGBMonthFen))
	return roundDiv(num.Mul(num, big.NewInt(seconds)), big.NewInt(StorageMonthSeconds))
}

// roundDiv divides and rounds half up (both operands are non-negative).
func roundDiv(num, den *big.Int) int64 {
	n := new(big.Int).Mul(num, big.NewInt(2))
	n.Add(n, den)
	n.Quo(n, new(big.Int).Mul(den, big.NewInt(2)))
	return n.Int64()
}

// TermEnd is when a term rental that starts (or renews) at from ends: a
// month is 30 days, a week 7.
func TermEnd(term Term, from time.Time) time.Time {
	if term == Month {
		return from.AddDate(0, 0, 30)
	}
	return from.AddDate(0, 0, 7)
}
