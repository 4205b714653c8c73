package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/market"
)

// APIOfferQuote is GET /api/v1/offers/{id}/quote?gpus=&start=&seconds=&term=&sla=:
// the price breakdown for the caller (student prices for verified lab members).
func (h *Handler) APIOfferQuote(c echo.Context) error {
	row, err := h.offerFromPath(c)
	if err != nil {
		return err
	}
	in := market.QuoteInputFrom(c.QueryParams())
	in.Hours = "" // the API takes seconds
	student, _ := c.Get(StudentKey).(bool)
	q, err := market.QuoteOffer(row.Offer, in, student, h.DB.Now())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, q)
}
