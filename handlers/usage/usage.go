// Package usage holds the handlers of a rental's GPU usage: the JSON
// API's telemetry history and the rental page's section, which polls it
// where the page's event stream cannot push it (package rentalwatch).
package usage

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/views/rentalpages"
)

// Handler serves the usage endpoints.
type Handler struct{ *handlers.Handler }

// APISample is one telemetry sample of a GPU.
type APISample struct {
	At         time.Time `json:"at"`
	UtilPct    int       `json:"util_pct"`
	MemUsedMiB int64     `json:"mem_used_mib"`
	PowerW     float64   `json:"power_w"`
	TempC      int       `json:"temp_c"`
	SMClockMHz int       `json:"sm_clock_mhz"`
}

// APIGPUUsage is one GPU of a rental and its samples, oldest first.
type APIGPUUsage struct {
	UUID    string      `json:"uuid"`
	Samples []APISample `json:"samples"`
}

// APIUsage is GET /api/v1/rentals/{id}/usage's answer.
type APIUsage struct {
	GPUs      []APIGPUUsage `json:"gpus"`
	Simulated bool          `json:"simulated"`
}

// APIRentalUsage is GET /api/v1/rentals/{id}/usage: per GPU the rental
// holds (or held last), the telemetry samples taken while it held it
// (the last 24 hours'). Another organisation's rental is 404.
func (h *Handler) APIRentalUsage(c echo.Context) error {
	d, _, err := h.RentalFor(c)
	if err != nil {
		return err
	}
	us, err := h.Rentals.Fleet().RentalUsage(c.Request().Context(), d.Rental.ID, d.GPUs)
	if err != nil {
		return err
	}
	out := APIUsage{GPUs: []APIGPUUsage{}, Simulated: d.Simulated()}
	for _, u := range us {
		g := APIGPUUsage{UUID: u.GPU.UUID, Samples: []APISample{}}
		for _, s := range u.Samples {
			g.Samples = append(g.Samples, APISample{At: s.At.UTC(), UtilPct: s.UtilPct, MemUsedMiB: s.MemUsedMiB,
				PowerW: s.PowerW, TempC: s.TempC, SMClockMHz: s.SMClockMHz})
		}
		out.GPUs = append(out.GPUs, g)
	}
	return c.JSON(http.StatusOK, out)
}

// RentalUsage is GET /rentals/{id}/usage: the rental page's GPU usage
// section, which polls it while the rental is not settled and the page's
// event stream does not push it (no change feed, or no stream in the
// browser).
func (h *Handler) RentalUsage(c echo.Context) error {
	d, _, err := h.RentalFor(c)
	if err != nil {
		return err
	}
	vm, err := h.RentalUsageVM(c, d)
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, rentalpages.RentalUsage(handlers.ViewCtx(c), *vm))
}
