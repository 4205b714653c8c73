package offers

import (
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"suanli/apperr"
	"suanli/models"
	"suanli/pricing"
)

// QuoteInput is a quote request as submitted (page form or API query).
type QuoteInput struct {
	GPUs  string
	Start string // RFC 3339, or the page's "2006-01-02T15:04" in Asia/Shanghai; empty: now
	// Seconds (API) or Hours (page) give the on-demand duration.
	Seconds string
	Hours   string
	Term    string
	SLA     string
	// VolumeGB is the new volume's size (empty: the size a rent makes);
	// VolumeID, when set, names an existing volume to mount instead,
	// which adds no storage (it is billed already).
	VolumeGB string
	VolumeID string
}

// QuoteInputFrom reads the quote parameters of a query.
func QuoteInputFrom(v url.Values) QuoteInput {
	return QuoteInput{GPUs: v.Get("gpus"), Start: v.Get("start"), Seconds: v.Get("seconds"), Hours: v.Get("hours"), Term: v.Get("term"), SLA: v.Get("sla"),
		VolumeGB: v.Get("volume_gb"), VolumeID: v.Get("volume_id")}
}

// Quote prices a request for an offer: GPUs default to 1 and may not
// exceed what one rental of the offer can take; the start defaults to now;
// the duration to one hour; the new volume to the one a rent makes (none
// when an existing volume is mounted), billed at the offer's storage
// price over the quoted window. Bad input is EINVALID naming the parameter.
func Quote(o models.Offer, in QuoteInput, student bool, now time.Time) (pricing.Breakdown, error) {
	r := pricing.Request{GPUs: 1, Start: now, Seconds: 3600, Term: pricing.Term(strings.TrimSpace(in.Term)), SLA: strings.TrimSpace(in.SLA)}
	if s := strings.TrimSpace(in.GPUs); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > o.MaxGPUs {
			return pricing.Breakdown{}, apperr.Field("gpus", "err.quote_gpus", o.MaxGPUs)
		}
		r.GPUs = n
	}
	if s := strings.TrimSpace(in.Start); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t, err = time.ParseInLocation("2006-01-02T15:04", s, pricing.Shanghai)
		}
		if err != nil || t.Year() < 2000 || t.Year() > 2100 {
			return pricing.Breakdown{}, apperr.Field("start", "err.quote_start")
		}
		r.Start = t
	}
	switch {
	case strings.TrimSpace(in.Seconds) != "":
		n, err := strconv.ParseInt(strings.TrimSpace(in.Seconds), 10, 64)
		if err != nil || n < 1 || n > pricing.MaxOnDemandSeconds {
			return pricing.Breakdown{}, apperr.Field("seconds", "err.quote_seconds", pricing.MaxOnDemandSeconds)
		}
		r.Seconds = n
	case strings.TrimSpace(in.Hours) != "":
		h, err := strconv.ParseFloat(strings.TrimSpace(in.Hours), 64)
		if err != nil || math.IsNaN(h) || h <= 0 || h*3600 > pricing.MaxOnDemandSeconds {
			return pricing.Breakdown{}, apperr.Field("hours", "err.quote_hours", pricing.MaxOnDemandSeconds/3600)
		}
		r.Seconds = int64(math.Round(h * 3600))
	}
	gb, err := quoteVolumeGB(&o, in)
	if err != nil {
		return pricing.Breakdown{}, err
	}
	r.VolumeGB = gb
	terms := pricing.Terms{
		PricePerGPUHourFen: o.PricePerGPUHourFen, WeeklyPricePerGPUFen: o.WeeklyPricePerGPUFen,
		MonthlyPricePerGPUFen: o.MonthlyPricePerGPUFen, OffpeakDiscountPct: o.OffpeakDiscountPct, StudentDiscountPct: o.StudentDiscountPct,
		MinimumSeconds: int64(o.MinDurationS), StoragePricePerGBMonthFen: o.StoragePricePerGBMonthFen,
	}
	b, err := pricing.Quote(terms, r, pricing.Buyer{Student: student})
	var qe *pricing.QuoteError
	if errors.As(err, &qe) {
		return pricing.Breakdown{}, apperr.Field(qe.Field, "err.quote_"+qe.Field)
	}
	return b, err
}

// quoteVolumeGB is the size of the new volume a quote prices, by the
// rent's rule: none when an existing volume is mounted, else the size
// asked for (1 to the offer's disk), else the default.
func quoteVolumeGB(o *models.Offer, in QuoteInput) (int, error) {
	if s := strings.TrimSpace(in.VolumeID); s != "" {
		if id, err := strconv.ParseInt(s, 10, 64); err != nil || id < 1 {
			return 0, apperr.Field("volume_id", "err.volume_unknown")
		}
		return 0, nil
	}
	gb := 0
	if s := strings.TrimSpace(in.VolumeGB); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, apperr.Field("volume_gb", "err.volume_size", MaxVolumeGBOf(o))
		}
		gb = n
	}
	return VolumeSize(gb, o)
}

// UnitPriceFen is what one GPU of an offer costs a renter per unit of a
// billing term: per hour on demand, per week or month for a term (0 when
// the offer sells no such term). The student discount applies (student: a
// confirmed member of an approved lab paying from the lab); the off-peak
// discount does not, pages show it beside.
func UnitPriceFen(o *models.Offer, term pricing.Term, student bool) int64 {
	price := o.PricePerGPUHourFen
	switch term {
	case pricing.Week, pricing.Month:
		p := o.WeeklyPricePerGPUFen
		if term == pricing.Month {
			p = o.MonthlyPricePerGPUFen
		}
		if p == nil {
			return 0
		}
		price = *p
	}
	if student {
		return pricing.Discounted(price, o.StudentDiscountPct)
	}
	return price
}

// DefaultPayer picks the organisation a rent form starts with, given the
// on-demand price per GPU-hour of the offer from each organisation the
// renter may pay from (personal first): the cheapest, the earlier on a
// tie. That is the price the offer's pages showed the renter (a lab member
// is shown the student price), so the form does not start at a higher
// one. It returns -1 when there is none.
func DefaultPayer(prices []int64) int {
	best := -1
	for i, p := range prices {
		if best < 0 || p < prices[best] {
			best = i
		}
	}
	return best
}

// EarlyStop is what stopping a rental before the end of its quoted
// duration gives back, for the rent form and the quote to say before the
// renter pays.
type EarlyStop struct {
	// RefundFen is refunded on an early stop of a week or month term:
	// always 0, the term being paid up front and its GPUs reserved to the
	// term's end (Rentals.Stop keeps them); nil on demand, where nothing is
	// paid ahead and billing ends at the stop.
	RefundFen *int64
	// Key is the message saying so.
	Key string
}

// EarlyStopOf says what stopping early refunds for a billing term.
func EarlyStopOf(term pricing.Term) EarlyStop {
	switch term {
	case pricing.Week, pricing.Month:
		var none int64
		return EarlyStop{RefundFen: &none, Key: "quote.early_stop.term"}
	}
	return EarlyStop{Key: "quote.early_stop.on_demand"}
}
