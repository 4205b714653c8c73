// Package handlers holds the HTTP handlers, one file per resource. A
// handler binds and validates input, calls market or models, and renders;
// rules and transactions live elsewhere.
package handlers

import (
	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"suanli/locales"
	"suanli/market"
	"suanli/models"
	"suanli/views"
)

// Handler carries the dependencies every handler needs; main and web set it.
type Handler struct {
	DB    *models.DB
	Index *market.OfferIndex
}

// LangKey is the echo context key under which the locale middleware stores
// the request's language.
const LangKey = "lang"

// Lang returns the request's language (zh-CN by default).
func Lang(c echo.Context) string {
	if l, ok := c.Get(LangKey).(string); ok && l != "" {
		return l
	}
	return locales.ZH
}

// ViewCtx builds the view context for the request.
func ViewCtx(c echo.Context) views.Ctx {
	return views.Ctx{
		Lang:      Lang(c),
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID),
		Path:      c.Request().URL.RequestURI(),
		URL:       c.Echo().Reverse,
	}
}

// IsHTMX reports whether the request came from htmx (and so wants a fragment).
func IsHTMX(c echo.Context) bool {
	return c.Request().Header.Get("HX-Request") == "true" && c.Request().Header.Get("HX-Boosted") != "true"
}

// Render writes a templ component as an HTML response with the status.
func Render(c echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response())
}

// JSONError is the one JSON error shape: {"error":{"code":…,"message":…}}.
type JSONError struct {
	Error JSONErrorBody `json:"error"`
}

// JSONErrorBody is the inside of JSONError.
type JSONErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Param names the query parameter at fault, for bad input.
	Param string `json:"param,omitempty"`
}
