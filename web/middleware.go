package web

import (
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/handlers"
	"suanli/locales"
	"suanli/market"
)

// observe logs every request with its request id and records metrics. It
// runs the error handler itself, so the logged status is the one sent.
func observe(m *metrics, names map[string]string) echo.MiddlewareFunc {
	record := m.middleware(names)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		inner := record(next)
		return func(c echo.Context) error {
			start := time.Now()
			_ = inner(c)
			r := c.Request()
			lvl := slog.LevelInfo
			if r.URL.Path == "/healthz" || r.URL.Path == "/metrics" || r.URL.Path == agent.PathPing || strings.HasPrefix(r.URL.Path, "/static/") {
				lvl = slog.LevelDebug
			}
			if !slog.Default().Enabled(r.Context(), lvl) {
				return nil
			}
			slog.Log(r.Context(), lvl, "http",
				"method", r.Method, "path", r.URL.Path, "status", c.Response().Status,
				"bytes", c.Response().Size, "dur_ms", float64(time.Since(start).Microseconds())/1000,
				"request_id", requestID(c), "remote", c.RealIP())
			return nil
		}
	}
}

// The Content-Security-Policy, around its connect-src list.
const (
	cspHead = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'"
	cspTail = "; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)

// csp is the policy of a response whose scripts may also fetch from the
// origins (the node agents' ping endpoints on the offer and datacentre
// pages); an origin that is not a plain scheme://host[:port] is left out.
func csp(origins []string) string {
	var b strings.Builder
	b.WriteString(cspHead)
	for _, o := range origins {
		if market.PingOrigin(o) == o {
			b.WriteString(" " + o)
		}
	}
	b.WriteString(cspTail)
	return b.String()
}

// securityHeaders sets the headers every response carries. The CSP allows
// no inline script or style: htmx is configured by a meta tag instead. A
// handler may widen connect-src for its own response (handlers.ConnectSrcKey).
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp(nil))
		c.Response().Before(func() {
			if origins, _ := c.Get(handlers.ConnectSrcKey).([]string); len(origins) > 0 {
				c.Response().Header().Set("Content-Security-Policy", csp(origins))
			}
		})
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if c.IsTLS() || c.Request().Header.Get(echo.HeaderXForwardedProto) == "https" {
			h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
		}
		return next(c)
	}
}

// locale picks the language: the reader's remembered choice, else the
// browser's Accept-Language, else zh-CN.
func locale(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		lang := ""
		if ck, err := c.Cookie(handlers.LangCookie); err == nil {
			lang = locales.Normalize(ck.Value)
		}
		if lang == "" {
			lang = locales.FromAcceptLanguage(c.Request().Header.Get("Accept-Language"))
		}
		c.Set(handlers.LangKey, lang)
		h := c.Response().Header()
		h.Set("Content-Language", lang)
		h.Add(echo.HeaderVary, "Accept-Language")
		h.Add(echo.HeaderVary, "Cookie")
		return next(c)
	}
}

// cacheControl makes pages and API answers revalidate: they change with availability.
func cacheControl(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !strings.HasPrefix(c.Request().URL.Path, "/static/") {
			c.Response().Header().Set("Cache-Control", "no-cache")
		}
		return next(c)
	}
}
