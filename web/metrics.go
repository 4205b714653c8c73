package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics holds the process's Prometheus registry and HTTP instruments.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(extra ...prometheus.Collector) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "suanli_http_requests_total", Help: "HTTP requests by route name, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "suanli_http_request_duration_seconds", Help: "HTTP request latency by route name.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
	}
	m.reg.MustRegister(m.requests, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(extra...)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// MetricsHandler serves /metrics for a process without the web routes
// (`suanli work --metrics-addr`): Go runtime and process metrics plus
// the given collectors.
func MetricsHandler(extra ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(extra...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// middleware records each request under its route name (bounded label
// values: an unknown path counts as "unmatched", never as its raw URL).
func (m *metrics) middleware(names map[string]string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				// Let the error handler write the response so the status is known.
				c.Error(err)
			}
			route, ok := names[c.Request().Method+" "+c.Path()]
			if !ok {
				route = "unmatched"
			}
			method := c.Request().Method
			m.requests.WithLabelValues(route, method, strconv.Itoa(c.Response().Status)).Inc()
			m.latency.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
			return nil
		}
	}
}
