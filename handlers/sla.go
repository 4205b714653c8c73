package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/fleet"
	"suanli/handlers/rentalvm"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/sla"
	"suanli/views/pages"
	"suanli/views/rentalpages"
)

// SLAShow is GET /sla: the SLA terms, rendered from pricing.Tiers (the
// table the credit computation uses) and the health watch's settings.
func (h *Handler) SLAShow(c echo.Context) error {
	terms := rentals.SLATerms{HeartbeatEvery: fleet.HeartbeatEvery, SilentAfter: 30 * time.Second, FreeIfFailsWithin: rentals.FreeIfFailsWithin, FlapWindow: fleet.FlapWindow}
	if h.Rentals != nil {
		terms = h.Rentals.Terms()
	}
	vt := pages.SLATerms{HeartbeatEvery: terms.HeartbeatEvery, SilentAfter: terms.SilentAfter, FreeIfFailsWithin: terms.FreeIfFailsWithin, FlapWindow: terms.FlapWindow}
	return Render(c, http.StatusOK, pages.SLAPage(ViewCtx(c), pages.SLAVM{Tiers: pricing.Tiers, Terms: vt}))
}

// rentalSLA is the rental page's SLA section: the tier and each month's
// computation, recorded or as it stands (nil for a rental without one).
func (h *Handler) rentalSLA(c echo.Context, d *rentals.RentalDetail) (*rentalpages.RentalSLA, error) {
	s, err := sla.OfRental(c.Request().Context(), h.DB, &d.Rental, d.Events, d.At)
	if err != nil || s == nil {
		return nil, err
	}
	return rentalvm.SLA(s, &d.Rental, d.At), nil
}

// uptimeVM maps a datacentre's 30-day uptime to the page's.
func uptimeVM(u sla.Uptime) pages.Uptime { return pages.Uptime{Pct: u.Pct, Nodes: u.Nodes} }
