package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/fleet"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/sla"
	"suanli/views/pages"
)

// SLAShow is GET /sla: the SLA terms, rendered from pricing.Tiers (the
// table the credit computation uses) and the health watch's settings.
func (h *Handler) SLAShow(c echo.Context) error {
	terms := rentals.SLATerms{HeartbeatEvery: fleet.HeartbeatEvery, SilentAfter: 30 * time.Second, FreeIfFailsWithin: rentals.FreeIfFailsWithin, FlapWindow: fleet.FlapWindow}
	if h.Rentals != nil {
		terms = h.Rentals.Terms()
	}
	return Render(c, http.StatusOK, pages.SLAPage(ViewCtx(c), pages.SLAVM{Tiers: pricing.Tiers, Terms: terms}))
}

// rentalSLA adds the rental page's SLA section to its view model: the
// tier and each month's computation, recorded or as it stands.
func (h *Handler) rentalSLA(c echo.Context, vm *pages.RentalVM) error {
	d := vm.D
	s, err := sla.OfRental(c.Request().Context(), h.DB, &d.Rental, d.Events, d.At)
	vm.SLA = s
	return err
}
