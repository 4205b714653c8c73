package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"suanli/web"
)

// serveWorkerMetrics serves /metrics (Go, process and the given job
// metrics) and /healthz for `suanli work` on addr, until stop is called.
// The market gauges (rentals, GPUs, ledger) are left to the web
// processes: they read the same database, and one source per value keeps
// dashboards simple.
func serveWorkerMetrics(addr string, collectors ...prometheus.Collector) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", web.MetricsHandler(collectors...))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			slog.Error("metrics server", "err", err)
		}
	}()
	slog.Info("metrics listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close(); <-done }, nil
}
