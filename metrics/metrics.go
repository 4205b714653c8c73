// Package metrics exports the market's state to Prometheus.
package metrics

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"suanli/models"
	"suanli/models/platform"
)

// Collector is a Prometheus collector of the market's state, read from the
// database when scraped: rentals by status, GPUs by model, city and state,
// top-ups and ledger volume, agent heartbeat age and the job queue. The
// answers are cached for CacheFor, so several Prometheus servers scraping
// several web replicas cost the database a few aggregate queries per
// replica every CacheFor at most.
//
// Every web replica exports the same database-wide values: aggregate them
// with max (or avg), never sum (deploy/grafana-dashboard.json does).
type Collector struct {
	DB *models.DB
	// CacheFor is how long one reading of the database is served (default 10 s).
	CacheFor time.Duration
	// LedgerSettle is how long a ledger transaction may stay open: volume is
	// counted up to the newest transaction created this long ago (default
	// 2 min; every job times out after 30 s). Zero in tests counts all.
	LedgerSettle time.Duration

	mu       sync.Mutex
	readAt   time.Time
	snap     []prometheus.Metric
	ledgerTo int64            // ledger transactions up to this id are in ledgerFen
	ledgerFn map[string]int64 // fen moved by transaction kind, since the start of the ledger
	failures float64          // failed readings
}

// New returns the collector for db with the default cache and lag.
func New(db *models.DB) *Collector {
	return &Collector{DB: db, CacheFor: 10 * time.Second, LedgerSettle: 2 * time.Minute}
}

// heartbeatBuckets are the heartbeat-age histogram's upper bounds in
// seconds: agents beat every fleet.HeartbeatEvery, so the first buckets hold the
// healthy nodes and the last ones the silent.
var heartbeatBuckets = []float64{5, 10, 15, 30, 60, 120, 300, 900, 3600, 86400}

var (
	descRentals = prometheus.NewDesc("suanli_rentals",
		"Rentals by status.", []string{"status"}, nil)
	descGPUs = prometheus.NewDesc("suanli_gpus",
		"GPUs of nodes not removed, by catalogue model, datacentre city and state (free; busy: in a rental or held by the provider; unhealthy).",
		[]string{"model", "city", "state"}, nil)
	descTopups = prometheus.NewDesc("suanli_topups",
		"Wallet top-ups ever started, by method (stripe, bank_transfer) and status (pending, paid, failed, flagged).",
		[]string{"method", "status"}, nil)
	descTopupFen = prometheus.NewDesc("suanli_topup_fen",
		"Amount of the wallet top-ups ever started, in fen, by method and status.", []string{"method", "status"}, nil)
	descLedger = prometheus.NewDesc("suanli_ledger_fen_total",
		"Fen moved by ledger transactions (the sum of their positive entries) by transaction kind, since the ledger began; counted up to transactions that settled a couple of minutes ago.",
		[]string{"kind"}, nil)
	descNodes = prometheus.NewDesc("suanli_nodes",
		"Nodes not removed, by health (unknown: never heard from; healthy; silent; no_nvml).", []string{"health"}, nil)
	descHeartbeatAge = prometheus.NewDesc("suanli_agent_heartbeat_age_seconds",
		"Age of each node agent's last heartbeat at scrape time, over the nodes that have ever sent one.", nil, nil)
	descHeartbeatMax = prometheus.NewDesc("suanli_agent_heartbeat_age_max_seconds",
		"The oldest last heartbeat among nodes that are not silent yet (0 when none): the next node to be declared silent.", nil, nil)
	descJobs = prometheus.NewDesc("suanli_jobs_queued",
		"River jobs by kind and state (available, scheduled, retryable, running, discarded).", []string{"kind", "state"}, nil)
	descScrapeErr = prometheus.NewDesc("suanli_market_metrics_errors_total",
		"Failed readings of the market metrics from the database.", nil, nil)
)

// Describe sends the descriptors of every metric Collect can send.
func (m *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRentals, descGPUs, descTopups, descTopupFen, descLedger,
		descNodes, descHeartbeatAge, descHeartbeatMax, descJobs, descScrapeErr} {
		ch <- d
	}
}

// Collect sends the cached reading, reading the database again when it is
// older than CacheFor. A failed reading keeps serving the last good one
// and counts the failure.
func (m *Collector) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if m.snap == nil || now.Sub(m.readAt) >= cmp.Or(m.CacheFor, 10*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		snap, err := m.read(ctx)
		cancel()
		if err != nil {
			slog.Error("metrics: read market state", "err", err)
			m.failures++
		} else {
			m.snap, m.readAt = snap, now
		}
	}
	for _, s := range m.snap {
		ch <- s
	}
	ch <- prometheus.MustNewConstMetric(descScrapeErr, prometheus.CounterValue, m.failures)
}

// read queries the database once and builds the metrics.
func (m *Collector) read(ctx context.Context) ([]prometheus.Metric, error) {
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	rentals, err := platform.RentalsByStatus(ctx, m.DB)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range rentals {
		gauge(descRentals, float64(r.N), r.Status)
		seen[r.Status] = true
	}
	// Every status is always present, so a panel shows 0 rather than nothing.
	for _, s := range models.RentalStatuses {
		if !seen[string(s)] {
			gauge(descRentals, 0, string(s))
		}
	}
	gpus, err := platform.GPUsByModelCityState(ctx, m.DB)
	if err != nil {
		return nil, err
	}
	for _, g := range gpus {
		gauge(descGPUs, float64(g.N), g.Model, g.City, g.State)
	}
	topups, err := platform.TopupTotals(ctx, m.DB)
	if err != nil {
		return nil, err
	}
	for _, t := range topups {
		gauge(descTopups, float64(t.N), t.Method, t.Status)
		gauge(descTopupFen, float64(t.Fen), t.Method, t.Status)
	}
	if err := m.readLedger(ctx); err != nil {
		return nil, err
	}
	for kind, fen := range m.ledgerFn {
		out = append(out, prometheus.MustNewConstMetric(descLedger, prometheus.CounterValue, float64(fen), kind))
	}
	hb, err := m.heartbeats(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, hb...)
	jobs, err := platform.JobsByKindState(ctx, m.DB)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		gauge(descJobs, float64(j.N), j.Kind, j.State)
	}
	return out, nil
}

// readLedger adds the volume of the ledger transactions settled since the
// last reading: the first reading adds up the whole ledger, later ones
// only what is new.
func (m *Collector) readLedger(ctx context.Context) error {
	var upTo int64
	var err error
	if m.LedgerSettle > 0 {
		upTo, err = platform.LedgerSettledID(ctx, m.DB, m.DB.Now().Add(-m.LedgerSettle))
	} else {
		upTo, err = platform.LedgerMaxID(ctx, m.DB)
	}
	if err != nil {
		return err
	}
	vol, err := platform.LedgerVolume(ctx, m.DB, m.ledgerTo, upTo)
	if err != nil {
		return err
	}
	if m.ledgerFn == nil {
		m.ledgerFn = map[string]int64{}
	}
	for _, v := range vol {
		m.ledgerFn[v.Kind] += v.Fen
	}
	m.ledgerTo = max(m.ledgerTo, upTo)
	return nil
}

// heartbeats summarises the agents' heartbeat ages. A gauge per node would
// be one series per node (thousands, churning as nodes come and go), so
// the ages go into one histogram — quantiles and "how many nodes over
// 30 s" come from its buckets — with the oldest non-silent age beside
// it and node counts by health.
func (m *Collector) heartbeats(ctx context.Context) ([]prometheus.Metric, error) {
	byHealth := map[models.NodeHealth]int64{models.NodeUnknown: 0, models.NodeHealthy: 0, models.NodeSilent: 0, models.NodeNoNVML: 0}
	counts, err := platform.NodesByHealth(ctx, m.DB)
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		byHealth[models.NodeHealth(c.Status)] = c.N
	}
	ages, err := platform.NodeHeartbeatAges(ctx, m.DB, m.DB.Now(), heartbeatBuckets)
	if err != nil {
		return nil, err
	}
	buckets := make(map[float64]uint64, len(heartbeatBuckets))
	for i, b := range heartbeatBuckets {
		buckets[b] = uint64(ages.AtMost[i])
	}
	out := []prometheus.Metric{
		prometheus.MustNewConstHistogram(descHeartbeatAge, uint64(ages.Count), ages.SumSeconds, buckets),
		prometheus.MustNewConstMetric(descHeartbeatMax, prometheus.GaugeValue, max(ages.OldestActive, 0)),
	}
	for h, n := range byHealth {
		out = append(out, prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(n), string(h)))
	}
	return out, nil
}
