package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/locales"
	"suanli/offers"
	"suanli/pricing"
)

// APIQuote is the answer of the quote API: the price breakdown, and what
// stopping early gives back, said before the renter pays.
type APIQuote struct {
	pricing.Breakdown
	// EarlyStopRefundFen is refunded when a week or month term is stopped
	// before its end: 0 (its GPUs stay reserved to the term's end); null
	// on demand, where nothing is paid ahead.
	EarlyStopRefundFen *int64 `json:"early_stop_refund_fen"`
	// EarlyStop says the same in the caller's language.
	EarlyStop string `json:"early_stop"`
}

// APIOfferQuote is GET /api/v1/offers/{id}/quote?gpus=&start=&seconds=&term=&sla=:
// the price breakdown for the caller (student prices for verified lab members).
func (h *Handler) APIOfferQuote(c echo.Context) error {
	row, err := h.offerFromPath(c)
	if err != nil {
		return err
	}
	in := offers.QuoteInputFrom(c.QueryParams())
	in.Hours = "" // the API takes seconds
	student := IsStudent(c)
	q, err := offers.Quote(row.Offer, in, student, h.DB.Now())
	if err != nil {
		return err
	}
	es := offers.EarlyStopOf(q.Term)
	return c.JSON(http.StatusOK, APIQuote{Breakdown: q, EarlyStopRefundFen: es.RefundFen, EarlyStop: locales.T(Lang(c), es.Key)})
}
