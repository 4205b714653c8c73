package rentaljson

import (
	"time"

	"suanli/apperr"
	"suanli/bids"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
)

// Interruption is an interruptible rental's last interruption: when its
// grace began (and its billing ended), why, and when its container was
// stopped for good.
type Interruption struct {
	At time.Time `json:"at"`
	// Reason is why, in English; Msg the same as a message of the
	// catalogues, for a client that shows it in its reader's language.
	Reason     string       `json:"reason"`
	Msg        *locales.Msg `json:"msg,omitempty"`
	GraceUntil *time.Time   `json:"grace_until"`
}

// InterruptionOf is r's last interruption (nil if never interrupted).
func InterruptionOf(r *models.Rental) *Interruption {
	if r.InterruptedAt == nil {
		return nil
	}
	out := &Interruption{At: *r.InterruptedAt, Reason: r.InterruptMsg.Or(locales.EN, r.InterruptReason), GraceUntil: r.GraceUntil}
	if !r.InterruptMsg.IsZero() {
		m := r.InterruptMsg
		out.Msg = &m
	}
	return out
}

// TermIn reads a rent request's term and bid: "interruptible" takes a
// bid (bid_per_gpu_hour_fen) and rents on demand at it; any other term
// takes none. Either mistake is refused naming the bid's field.
func TermIn(term string, bid *int64) (pricing.Term, *int64, error) {
	switch {
	case term == models.TermInterruptible && bid == nil:
		return "", nil, apperr.Field(bids.Field, "bidpages.err_bid_required")
	case term == models.TermInterruptible:
		return pricing.OnDemand, bid, nil
	case bid != nil:
		return "", nil, apperr.Field(bids.Field, "bidpages.err_bid_term")
	}
	return pricing.Term(term), nil, nil
}
