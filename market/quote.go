package market

import (
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

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
}

// QuoteInputFrom reads the quote parameters of a query.
func QuoteInputFrom(v url.Values) QuoteInput {
	return QuoteInput{GPUs: v.Get("gpus"), Start: v.Get("start"), Seconds: v.Get("seconds"), Hours: v.Get("hours"), Term: v.Get("term"), SLA: v.Get("sla")}
}

// QuoteOffer prices a request for an offer: GPUs default to 1 and may not
// exceed what one rental of the offer can take; the start defaults to now;
// the duration to one hour. Bad input is EINVALID naming the parameter.
func QuoteOffer(o models.Offer, in QuoteInput, student bool, now time.Time) (pricing.Breakdown, error) {
	r := pricing.Request{GPUs: 1, Start: now, Seconds: 3600, Term: strings.TrimSpace(in.Term), SLA: strings.TrimSpace(in.SLA)}
	if s := strings.TrimSpace(in.GPUs); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > o.MaxGPUs {
			return pricing.Breakdown{}, invalid("gpus", "err.quote_gpus", o.MaxGPUs)
		}
		r.GPUs = n
	}
	if s := strings.TrimSpace(in.Start); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t, err = time.ParseInLocation("2006-01-02T15:04", s, pricing.Shanghai)
		}
		if err != nil || t.Year() < 2000 || t.Year() > 2100 {
			return pricing.Breakdown{}, invalid("start", "err.quote_start")
		}
		r.Start = t
	}
	switch {
	case strings.TrimSpace(in.Seconds) != "":
		n, err := strconv.ParseInt(strings.TrimSpace(in.Seconds), 10, 64)
		if err != nil || n < 1 || n > pricing.MaxOnDemandSeconds {
			return pricing.Breakdown{}, invalid("seconds", "err.quote_seconds", pricing.MaxOnDemandSeconds)
		}
		r.Seconds = n
	case strings.TrimSpace(in.Hours) != "":
		h, err := strconv.ParseFloat(strings.TrimSpace(in.Hours), 64)
		if err != nil || math.IsNaN(h) || h <= 0 || h*3600 > pricing.MaxOnDemandSeconds {
			return pricing.Breakdown{}, invalid("hours", "err.quote_hours", pricing.MaxOnDemandSeconds/3600)
		}
		r.Seconds = int64(math.Round(h * 3600))
	}
	terms := pricing.Terms{
		PricePerGPUHourFen: o.PricePerGPUHourFen, WeeklyPricePerGPUFen: o.WeeklyPricePerGPUFen,
		MonthlyPricePerGPUFen: o.MonthlyPricePerGPUFen, OffpeakDiscountPct: o.OffpeakDiscountPct, StudentDiscountPct: o.StudentDiscountPct,
		MinimumSeconds: int64(o.MinDurationS),
	}
	b, err := pricing.Quote(terms, r, pricing.Buyer{Student: student})
	var qe *pricing.QuoteError
	if errors.As(err, &qe) {
		return pricing.Breakdown{}, invalid(qe.Field, "err.quote_"+qe.Field)
	}
	return b, err
}
