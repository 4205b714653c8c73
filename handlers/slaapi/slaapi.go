// Package slaapi holds the API's read of a rental's SLA: its tier's
// promise and, month by month, the measured uptime and the credit it
// earned, recorded or as it stands, computed by sla.OfRental as the
// rental page's SLA section is.
package slaapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/sla"
)

// Handler serves the SLA read.
type Handler struct{ *handlers.Handler }

// CreditStep is one step of a tier's credits: below BelowPct uptime in a
// month, CreditPct of the month's charges comes back.
type CreditStep struct {
	BelowPct  float64 `json:"below_pct"`
	CreditPct int     `json:"credit_pct"`
}

// Period is one month of a rental's SLA: its running span in the month,
// the downtime measured in it, and the credit.
type Period struct {
	// Month is YYYY-MM (Asia/Shanghai).
	Month           string    `json:"month"`
	From            time.Time `json:"from"`
	To              time.Time `json:"to"`
	Tier            string    `json:"tier"`
	PeriodSeconds   int64     `json:"period_seconds"`
	DowntimeSeconds int64     `json:"downtime_seconds"`
	UptimePct       float64   `json:"uptime_pct"`
	CreditPct       int       `json:"credit_pct"`
	BilledFen       int64     `json:"billed_fen"`
	DowntimeCostFen int64     `json:"downtime_cost_fen"`
	CreditFen       int64     `json:"credit_fen"`
	// Open: the month still runs for a live rental (figures so far);
	// Final: the month the rental ended in; Recorded: settled; Credited:
	// its credit is paid into the wallet (a ledger entry of kind sla_credit).
	Open     bool `json:"open"`
	Final    bool `json:"final"`
	Recorded bool `json:"recorded"`
	Credited bool `json:"credited"`
}

// Terms is GET /api/v1/rentals/{id}/sla's answer.
type Terms struct {
	RentalID int64 `json:"rental_id"`
	// Tier is the rental's SLA tier, UptimePct its promise a month,
	// Credits its steps (highest first) and CompensationMultiple the least
	// a due credit is, in multiples of the downtime's would-be cost.
	Tier                 string       `json:"tier"`
	UptimePct            float64      `json:"uptime_pct"`
	Credits              []CreditStep `json:"credits"`
	CompensationMultiple int          `json:"compensation_multiple"`
	// Free: a free rental earns no credit.
	Free     bool     `json:"free"`
	Periods  []Period `json:"periods"`
	Currency string   `json:"currency"`
}

// APIRentalSLA is GET /api/v1/rentals/{id}/sla, for anyone who may see
// the rental; another organisation's is 404, as for one that does not
// exist.
func (h *Handler) APIRentalSLA(c echo.Context) error {
	d, _, err := h.RentalFor(c)
	if err != nil {
		return err
	}
	s, err := sla.OfRental(c.Request().Context(), h.DB, &d.Rental, d.Events, d.At)
	if err != nil {
		return err
	}
	out := Terms{RentalID: d.Rental.ID, Tier: s.Tier.Name, UptimePct: s.Tier.UptimePct, CompensationMultiple: s.Tier.CompensationMultiple,
		Free: s.Free, Credits: []CreditStep{}, Periods: []Period{}, Currency: "cny"}
	for _, st := range s.Tier.Credits {
		out.Credits = append(out.Credits, CreditStep{BelowPct: st.BelowPct, CreditPct: st.CreditPct})
	}
	for i := range s.Periods {
		p := &s.Periods[i]
		out.Periods = append(out.Periods, Period{Month: p.Period, From: p.From.UTC(), To: p.To.UTC(), Tier: p.Tier.Name,
			PeriodSeconds: p.PeriodSecs, DowntimeSeconds: p.DowntimeSecs, UptimePct: p.UptimePct, CreditPct: p.CreditPct,
			BilledFen: p.BilledFen, DowntimeCostFen: p.DowntimeCostFen, CreditFen: p.CreditFen,
			Open: p.Open(&d.Rental, d.At), Final: p.Final, Recorded: p.Recorded, Credited: p.TxnID != nil})
	}
	return c.JSON(http.StatusOK, out)
}
