package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/fleet"
	"suanli/models"
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
	vt := pages.SLATerms{HeartbeatEvery: terms.HeartbeatEvery, SilentAfter: terms.SilentAfter, FreeIfFailsWithin: terms.FreeIfFailsWithin, FlapWindow: terms.FlapWindow}
	return Render(c, http.StatusOK, pages.SLAPage(ViewCtx(c), pages.SLAVM{Tiers: pricing.Tiers, Terms: vt}))
}

// rentalSLA adds the rental page's SLA section to its view model: the
// tier and each month's computation, recorded or as it stands.
func (h *Handler) rentalSLA(c echo.Context, vm *pages.RentalVM) error {
	d := vm.D
	s, err := sla.OfRental(c.Request().Context(), h.DB, &d.Rental, d.Events, d.At)
	if err != nil || s == nil {
		return err
	}
	vm.SLA = rentalSLAVM(s, &d.Rental, d.At)
	return nil
}

// rentalSLAVM maps a rental's SLA terms to the page's section at now.
func rentalSLAVM(s *sla.RentalTerms, r *models.Rental, now time.Time) *pages.RentalSLA {
	out := &pages.RentalSLA{Tier: s.Tier, Free: s.Free, Periods: make([]pages.SLAPeriod, 0, len(s.Periods))}
	for i := range s.Periods {
		p := &s.Periods[i]
		out.Periods = append(out.Periods, pages.SLAPeriod{
			Period: p.Period, From: p.From, To: p.To, Tier: p.Tier,
			PeriodSecs: p.PeriodSecs, DowntimeSecs: p.DowntimeSecs, UptimePct: p.UptimePct,
			CreditPct: p.CreditPct, BilledFen: p.BilledFen, DowntimeCostFen: p.DowntimeCostFen, CreditFen: p.CreditFen,
			Final: p.Final, Recorded: p.Recorded, Credited: p.TxnID != nil, Open: p.Open(r, now),
		})
	}
	return out
}

// uptimeVM maps a datacentre's 30-day uptime to the page's.
func uptimeVM(u sla.Uptime) pages.Uptime { return pages.Uptime{Pct: u.Pct, Nodes: u.Nodes} }
