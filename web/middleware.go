package web

import (
	"cmp"
	"context"
	"log/slog"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/handlers"
	"suanli/locales"
	"suanli/offers"
	"suanli/reqlog"
)

// observe logs every request with its request id and records metrics. It
// runs the error handler itself, so the logged status is the one sent. The
// line also carries what became known about the request (reqlog): the
// user, the organisation an authorisation check resolved, the node of an
// agent's credential, and the rental or organisation named in the path.
func observe(m *metrics, names map[string]string) echo.MiddlewareFunc {
	record := m.middleware(names)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		inner := record(next)
		return func(c echo.Context) error {
			start := time.Now()
			ctx := reqlog.With(c.Request().Context())
			c.SetRequest(c.Request().WithContext(ctx))
			pathIDs(ctx, c) // routing has run: the route's parameters are known
			_ = inner(c)
			r := c.Request()
			lvl := requestLevel(r.URL.Path, c.Response().Status)
			if rawKind(c) == rawProxy && lvl == slog.LevelInfo && c.Response().Status < 500 {
				// A proxied app's own traffic (Jupyter polls its API every
				// few seconds): its failures still show.
				lvl = slog.LevelDebug
			}
			if !slog.Default().Enabled(r.Context(), lvl) {
				return nil
			}
			if u := handlers.CurrentUser(c); u != nil {
				reqlog.Set(ctx, "user_id", u.ID)
			}
			slog.Log(r.Context(), lvl, "http", append([]any{
				"method", r.Method, "path", loggedPath(r.URL.Path), "route", names[r.Method+" "+c.Path()], "status", c.Response().Status,
				"bytes", c.Response().Size, "dur_ms", float64(time.Since(start).Microseconds()) / 1000,
				"request_id", requestID(c), "remote", c.RealIP()}, reqlog.Attrs(ctx)...)...)
			return nil
		}
	}
}

// rawKey is where markRaw keeps the route's rawRoutes kind.
const rawKey = "raw_route"

// markRaw records, for the middleware after it, how the route's requests
// are handled (rawRoutes; raw maps route paths to kinds). A rawBody route
// is raw only for a multipart body.
func markRaw(raw map[string]int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			k := raw[c.Path()]
			if k == rawBody {
				if mt, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType)); mt != echo.MIMEMultipartForm {
					k = 0
				}
			}
			if k != 0 {
				c.Set(rawKey, k)
			}
			return next(c)
		}
	}
}

// rawKind is the route's rawRoutes kind (0: an ordinary route).
func rawKind(c echo.Context) int {
	k, _ := c.Get(rawKey).(int)
	return k
}

// agentPrefix starts every node agent route (heartbeats, task polls,
// results).
const agentPrefix = "/agent/"

// requestLevel is the level of a request's log line. Routine machine
// traffic is debug: probes, metrics scrapes, static files and the node
// agents, whose heartbeats and long-polls come every few seconds from
// every node and would bury everything else (the demo's 43 nodes wrote
// 15,000 lines in 22 minutes). An agent request that fails still shows:
// at info when refused (4xx), at warn when the server failed (5xx).
func requestLevel(path string, status int) slog.Level {
	switch {
	case path == "/healthz" || path == "/readyz" || path == "/metrics" || path == agent.PathPing || strings.HasPrefix(path, "/static/"):
		return slog.LevelDebug
	case strings.HasPrefix(path, agentPrefix):
		switch {
		case status >= 500:
			return slog.LevelWarn
		case status >= 400:
			return slog.LevelInfo
		}
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// loggedPath is a request's path as the log shows it: a share link's
// token is a credential, and stays out of logs.
func loggedPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "/share/"); ok {
		_, after, found := strings.Cut(rest, "/")
		if found {
			return "/share/…/" + after
		}
		return "/share/…"
	}
	return p
}

// pathIDs records the rental or organisation id a route names in its path
// (a refused request is logged with the id it tried); an authorisation
// check that resolves the organisation later overwrites it.
func pathIDs(ctx context.Context, c echo.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return
	}
	p := c.Path()
	switch {
	case strings.HasPrefix(p, "/rentals/:id"), strings.HasPrefix(p, "/api/v1/rentals/:id"):
		reqlog.Set(ctx, "rental_id", id)
	case strings.HasPrefix(p, "/orgs/:id"):
		reqlog.Set(ctx, "org_id", id)
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
		if offers.PingOrigin(o) == o {
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
		if rawKind(c) == rawProxy {
			// A container's app answers with its own headers (Jupyter
			// needs its inline scripts); the proxy sets what it must.
			h.Set("X-Content-Type-Options", "nosniff")
			return next(c)
		}
		h.Set("Content-Security-Policy", csp(nil))
		c.Response().Before(func() {
			policy := ""
			if origins, _ := c.Get(handlers.ConnectSrcKey).([]string); len(origins) > 0 {
				policy = csp(origins)
			}
			if c.Get(handlers.InlineStylesKey) == true {
				policy = strings.Replace(cmp.Or(policy, csp(nil)), "style-src 'self'", "style-src 'self' 'unsafe-inline'", 1)
			}
			if policy != "" {
				c.Response().Header().Set("Content-Security-Policy", policy)
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
		if !strings.HasPrefix(c.Request().URL.Path, "/static/") && rawKind(c) != rawProxy {
			c.Response().Header().Set("Cache-Control", "no-cache")
		}
		return next(c)
	}
}
