package handlers

import (
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/models"
	"suanli/offers"
	"suanli/views/pages"
)

// ConnectSrcKey is the echo context key under which a handler lists the
// origins (scheme://host[:port]) its page's scripts may fetch from; the
// web layer adds them to that response's CSP connect-src, and only to it.
const ConnectSrcKey = "csp.connect-src"

// InlineStylesKey, set to true by a handler, lets its page's scripts add
// style elements (the CSP's style-src gains 'unsafe-inline' for that
// response only): xterm.js, on the terminal page, styles itself so.
const InlineStylesKey = "csp.inline-styles"

// Ping is GET /ping: the latency endpoint that agents serve, served by the
// marketplace too. The demo's simulated nodes run inside this process and
// report it as theirs; a browser's round trip to it is its round trip to
// this server.
func (h *Handler) Ping(c echo.Context) error {
	agent.PingHandler().ServeHTTP(c.Response(), c.Request())
	return nil
}

// latencyProbe returns what the page needs to time the visitor's round
// trip to the datacentre (its agents' ping endpoints) and allows the
// page's CSP to reach their origins. An htmx fragment needs none.
func (h *Handler) latencyProbe(c echo.Context, dc *models.Datacenter) (pages.Ping, error) {
	if dc == nil || h.Rentals == nil || IsHTMX(c) {
		return pages.Ping{}, nil
	}
	urls, err := offers.PingURLs(c.Request().Context(), h.DB, dc.ID)
	if err != nil || len(urls) == 0 {
		return pages.Ping{}, err
	}
	var origins []string
	for _, u := range urls {
		if o := offers.PingOrigin(u); o != "" && !slices.Contains(origins, o) {
			origins = append(origins, o)
		}
	}
	c.Set(ConnectSrcKey, origins)
	// The demo's in-process agents report this server's own endpoint.
	own := strings.TrimRight(h.Rentals.BaseURL, "/") + agent.PathPing
	return pages.Ping{URLs: urls, Simulated: slices.Contains(urls, own)}, nil
}
