// Package web assembles the HTTP side: the route table, middleware, the
// central error handler, metrics and the server's lifecycle.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"suanli/handlers"
)

// Options are the web layer's settings.
type Options struct {
	// SecureCookies marks the session and CSRF cookies Secure (HTTPS only).
	SecureCookies bool
	// Collectors are extra Prometheus collectors to serve on /metrics.
	Collectors []prometheus.Collector
	// RateLimit limits API requests per token; the zero value limits none.
	RateLimit RateLimit
	// Heartbeats limits each node's heartbeats; the zero value is the
	// default limit (see HeartbeatLimit).
	Heartbeats HeartbeatLimit
}

// New builds the echo instance with every route and middleware. h must
// have its Sessions and Accounts set.
func New(h *handlers.Handler, opts Options) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler
	e.IPExtractor = echo.ExtractIPDirect()
	m := newMetrics(opts.Collectors...)
	table := routes(h, m)
	names := make(map[string]string, len(table))
	raw := map[string]int{}
	for _, r := range table {
		if r.method == anyMethod {
			for _, rt := range e.Match(proxiedMethods, r.path, guard(r.access, r.handler)) {
				rt.Name = r.name
				names[rt.Method+" "+r.path] = r.name
			}
		} else {
			e.Add(r.method, r.path, guard(r.access, r.handler)).Name = r.name
			names[r.method+" "+r.path] = r.name
		}
		if k := rawRoutes[r.name]; k != 0 {
			raw[r.path] = k
		}
	}
	e.Use(
		middleware.RequestID(),
		markRaw(raw),
		observe(m, names),
		middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			slog.Error("panic", "err", err, "request_id", requestID(c), "stack", string(stack))
			return err
		}}),
		securityHeaders,
		cacheControl,
		// Level 1 (BestSpeed), as nginx's default: a fraction of level
		// 5's CPU, and an offer list page (61 kB) still compresses 10.4×
		// (12.3× at 5).
		middleware.GzipWithConfig(middleware.GzipConfig{Level: 1, MinLength: 1024, Skipper: func(c echo.Context) bool {
			// An event stream is flushed event by event: never held
			// back to be compressed. Node agents' calls are small JSON
			// and long polls, and a request holds its gzip writer
			// (~0.8 MB of tables) for as long as it runs: the demo's
			// agents alone kept 50 MB of writers live.
			return c.Path() == "/metrics" || strings.HasPrefix(c.Request().URL.Path, "/static/htmx") || rawKind(c) != 0 ||
				strings.HasPrefix(c.Request().URL.Path, "/agent/") ||
				strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream")
		}}),
		locale,
		heartbeatLimit(opts.Heartbeats),
		// Before anything runs for a request (the session's query, the
		// CSRF check that reads forms, the handlers).
		guardInput(names),
		appsOrigin(h, names),
		sessions(h.Sessions),
		authenticate(h),
		rateLimit(opts.RateLimit),
		csrf(opts.SecureCookies),
		idempotency(h.DB, h.Rentals.Credentials),
	)
	return e
}

// Serve runs e on ln until ctx ends, then stops accepting connections and
// waits up to grace for requests in flight.
func Serve(ctx context.Context, e *echo.Echo, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           e,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	slog.Info("http: shutting down", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
