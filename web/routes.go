package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/static"
)

// Route names; views and tests build URLs from them with echo's Reverse.
const (
	RouteHome       = "home"
	RouteOffers     = "offers.list"
	RouteOffer      = "offers.show"
	RouteDatacenter = "datacenters.show"
	RouteLangSwitch = "lang.switch"
	RouteAPIOffers  = "api.offers.list"
	RouteAPIOffer   = "api.offers.show"
	RouteHealthz    = "healthz"
	RouteReadyz     = "readyz"
	RouteMetrics    = "metrics"
	RouteStatic     = "static"
)

// route is one row of the route table.
type route struct {
	method, path, name string
	handler            echo.HandlerFunc
}

// routes is the one route table of the application.
func routes(h *handlers.Handler, m *metrics) []route {
	return []route{
		{"GET", "/", RouteHome, h.OffersList},
		{"GET", "/offers", RouteOffers, h.OffersList},
		{"GET", "/offers/:id", RouteOffer, h.OfferShow},
		{"GET", "/datacenters/:slug", RouteDatacenter, h.DatacenterShow},
		{"GET", "/lang/:lang", RouteLangSwitch, h.LangSwitch},

		{"GET", "/api/v1/offers", RouteAPIOffers, h.APIOffersList},
		{"GET", "/api/v1/offers/:id", RouteAPIOffer, h.APIOfferShow},

		{"GET", "/healthz", RouteHealthz, h.Healthz},
		{"GET", "/readyz", RouteReadyz, h.Readyz},
		{"GET", "/metrics", RouteMetrics, echo.WrapHandler(m.handler())},
		{"GET", static.Prefix + "*", RouteStatic, echo.WrapHandler(http.HandlerFunc(static.ServeHTTP))},
	}
}
