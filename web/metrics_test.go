package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/metrics"
	"suanli/models"
	"suanli/offers"
	"suanli/routenames"
	"suanli/web"
	"suanli/workers"
)

// scrape is one reading of /metrics: sample name → label set → value.
type scrape map[string]map[string]float64

// parseExposition reads Prometheus' text format. A sample's labels are
// kept as written (`a="x",b="y"`, sorted by name).
func parseExposition(t *testing.T, text string) scrape {
	t.Helper()
	out := scrape{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels := line, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			name, labels = line[:i], line[i+1:j]
			line = name + line[j+1:]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Fatalf("bad exposition line %q", sc.Text())
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			t.Fatalf("bad value in %q", sc.Text())
		}
		if out[fields[0]] == nil {
			out[fields[0]] = map[string]float64{}
		}
		out[fields[0]][labels] = v
	}
	return out
}

// value returns the sample with exactly these labels (name, value pairs),
// failing the test when it is missing.
func (s scrape) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	var parts []string
	for i := 0; i+1 < len(labels); i += 2 {
		parts = append(parts, labels[i]+`="`+labels[i+1]+`"`)
	}
	sort.Strings(parts) // the exposition sorts labels by name
	key := strings.Join(parts, ",")
	v, ok := s[name][key]
	if !ok {
		t.Errorf("no sample %s{%s}; have %v", name, key, s[name])
	}
	return v
}

// metricsFixture is a market with rentals, top-ups, a failing GPU, agents
// heard from at different times and jobs worked, behind the real router
// with the market and job collectors on /metrics.
type metricsFixture struct {
	db      *models.DB
	srv     *httptest.Server
	wallet  *billing.Wallet
	admin   *models.User
	org     int64
	topup   int64 // a pending bank transfer
	model   string
	city    string
	gpuFree float64 // free GPUs of model in city after the fixture
}

func newMetricsFixture(t *testing.T, db *models.DB) *metricsFixture {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	h := testHandler(db, ix)
	jobs := workers.NewJobMetrics()
	// No cache and no settling lag: every scrape reads the database anew.
	mm := &metrics.Collector{DB: db, CacheFor: time.Nanosecond}
	e := web.New(h, web.Options{Collectors: []prometheus.Collector{mm, jobs}})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	f := &metricsFixture{db: db, srv: srv, wallet: h.Wallet}

	renter := mustUser(t, db, "renter@metrics.example", "Rita Renter", false)
	f.admin = mustUser(t, db, "ops@suanli.example", "Otto Ops", true)
	orgs, err := db.OrgsOfUser(ctx, renter.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("personal org: %v", err)
	}
	f.org = orgs[0].Org.ID
	var offer models.Offer
	if err := db.R.Where("status = ?", models.OfferListed).Order("id").First(&offer).Error; err != nil {
		t.Fatal(err)
	}
	mustRunningRental(t, db, f.org, renter.ID, offer)
	mustRental(t, db, f.org, renter.ID, offer)
	// Two bank transfers: one confirmed (¥100 into the ledger), one pending.
	paid, _, err := h.Wallet.StartTopup(ctx, renter, f.org, 10000, models.MethodBank, "en")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wallet.ConfirmBankTransfer(ctx, f.admin, paid.ID, 10000); err != nil {
		t.Fatal(err)
	}
	pending, _, err := h.Wallet.StartTopup(ctx, renter, f.org, 5000, models.MethodBank, "en")
	if err != nil {
		t.Fatal(err)
	}
	f.topup = pending.ID

	// One GPU of the offer's node fails.
	var g models.GPU
	if err := db.R.Where("node_id = ? AND state = ?", offer.NodeID, models.GPUFree).Order("idx").First(&g).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.SetGPUState(ctx, g.UUID, models.GPUUnhealthy); err != nil {
		t.Fatal(err)
	}
	f.model = g.GPUModel
	if err := db.R.Raw(`SELECT d.city FROM nodes n JOIN datacenters d ON d.id = n.datacenter_id WHERE n.id = ?`, offer.NodeID).Scan(&f.city).Error; err != nil {
		t.Fatal(err)
	}
	var free int64
	db.R.Raw(`SELECT COUNT(*) FROM gpus g JOIN nodes n ON n.id = g.node_id JOIN datacenters d ON d.id = n.datacenter_id
		WHERE g.gpu_model = ? AND d.city = ? AND g.state = 'free' AND n.status <> 'removed'`, f.model, f.city).Scan(&free)
	f.gpuFree = float64(free)

	// Agents: one heard from 20 s ago, one silent for 10 minutes.
	var nodes []models.Node
	if err := db.R.Order("id").Limit(2).Find(&nodes).Error; err != nil || len(nodes) < 2 {
		t.Fatalf("two nodes: %v", err)
	}
	now := db.Now().UTC()
	db.W.Model(&models.Node{}).Where("id = ?", nodes[0].ID).Updates(map[string]any{"last_heartbeat_at": now.Add(-20 * time.Second), "health": models.NodeHealthy})
	db.W.Model(&models.Node{}).Where("id = ?", nodes[1].ID).Updates(map[string]any{"last_heartbeat_at": now.Add(-10 * time.Minute), "health": models.NodeSilent})

	// A job waiting in the queue, and jobs worked through the middleware.
	q, err := workers.New(db, workers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Inserter.Insert(ctx, workers.MeterArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	attempted := now
	job := func(attempt int) *rivertype.JobRow {
		return &rivertype.JobRow{Kind: "meter_rentals", Attempt: attempt, MaxAttempts: 3, ScheduledAt: now.Add(-time.Second), AttemptedAt: &attempted}
	}
	boom := errors.New("boom")
	_ = jobs.Work(ctx, job(1), func(context.Context) error { return nil })
	_ = jobs.Work(ctx, job(1), func(context.Context) error { return boom })
	_ = jobs.Work(ctx, job(3), func(context.Context) error { return boom })
	_ = jobs.Work(ctx, job(1), func(context.Context) error { return river.JobSnooze(time.Minute) })

	// Some traffic.
	for _, p := range []string{"/offers", "/offers", "/no-such-page"} {
		res, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	return f
}

func (f *metricsFixture) scrape(t *testing.T) (scrape, string) {
	t.Helper()
	res, err := http.Get(f.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, b)
	}
	return parseExposition(t, string(b)), string(b)
}

// /metrics answers with the HTTP, job and market series, and their values
// are the market's: rentals, GPUs, top-ups, ledger volume, agents, jobs.
func TestMetricsReportTheMarket(t *testing.T) { dbtest.Each(t, testMetricsReportTheMarket) }

func testMetricsReportTheMarket(t *testing.T, db *models.DB) {
	f := newMetricsFixture(t, db)
	s, _ := f.scrape(t)

	// HTTP, by route name — an unknown path is "unmatched", never its URL.
	if v := s.value(t, "suanli_http_requests_total", "route", routenames.OffersList, "method", "GET", "status", "200"); v != 2 {
		t.Errorf("offers.list requests %v, want 2", v)
	}
	if v := s.value(t, "suanli_http_requests_total", "route", "unmatched", "method", "GET", "status", "404"); v != 1 {
		t.Errorf("unmatched requests %v, want 1", v)
	}
	for labels := range s["suanli_http_requests_total"] {
		if strings.Contains(labels, "/") {
			t.Errorf("a raw path in a label: %s", labels)
		}
	}

	// Rentals by status, every status present.
	for status, want := range map[string]float64{"running": 1, "pending": 1, "stopped": 0, "failed": 0} {
		if v := s.value(t, "suanli_rentals", "status", status); v != want {
			t.Errorf("rentals %s = %v, want %v", status, v, want)
		}
	}

	// GPUs by model, city and state.
	if v := s.value(t, "suanli_gpus", "model", f.model, "city", f.city, "state", "unhealthy"); v != 1 {
		t.Errorf("unhealthy %s in %s = %v, want 1", f.model, f.city, v)
	}
	if v := s.value(t, "suanli_gpus", "model", f.model, "city", f.city, "state", "free"); v != f.gpuFree {
		t.Errorf("free %s in %s = %v, want %v", f.model, f.city, v, f.gpuFree)
	}

	// Top-ups and the ledger.
	for _, c := range []struct {
		status string
		n, fen float64
	}{{"paid", 1, 10000}, {"pending", 1, 5000}} {
		if v := s.value(t, "suanli_topups", "method", "bank_transfer", "status", c.status); v != c.n {
			t.Errorf("%s bank transfers %v, want %v", c.status, v, c.n)
		}
		if v := s.value(t, "suanli_topup_fen", "method", "bank_transfer", "status", c.status); v != c.fen {
			t.Errorf("%s bank transfer fen %v, want %v", c.status, v, c.fen)
		}
	}
	if v := s.value(t, "suanli_ledger_fen_total", "kind", "topup"); v != 10000 {
		t.Errorf("ledger topup volume %v, want 10000", v)
	}

	// Agents: the histogram holds every node heard from; the oldest that
	// is not yet silent is the one 20 s ago.
	var heard int64
	f.db.R.Model(&models.Node{}).Where("last_heartbeat_at IS NOT NULL AND status <> ?", models.NodeRemoved).Count(&heard)
	if v := s.value(t, "suanli_agent_heartbeat_age_seconds_count"); v != float64(heard) {
		t.Errorf("heartbeat ages counted %v, want %d", v, heard)
	}
	if v := s.value(t, "suanli_agent_heartbeat_age_seconds_bucket", "le", "300"); v != float64(heard-1) {
		t.Errorf("heartbeats within 5 minutes %v, want %d (all but the silent node)", v, heard-1)
	}
	if v := s.value(t, "suanli_agent_heartbeat_age_max_seconds"); v < 20 || v >= 600 {
		t.Errorf("oldest heartbeat of a node not silent %v s, want about 20", v)
	}
	if v := s.value(t, "suanli_nodes", "health", "silent"); v != 1 {
		t.Errorf("silent nodes %v, want 1", v)
	}

	// Jobs: worked, by outcome, and waiting.
	for outcome, want := range map[string]float64{"completed": 1, "failed": 1, "discarded": 1, "snoozed": 1} {
		if v := s.value(t, "suanli_jobs_total", "kind", "meter_rentals", "outcome", outcome); v != want {
			t.Errorf("meter_rentals %s %v, want %v", outcome, v, want)
		}
	}
	if v := s.value(t, "suanli_job_duration_seconds_count", "kind", "meter_rentals", "outcome", "completed"); v != 1 {
		t.Errorf("timed completed jobs %v, want 1", v)
	}
	if v := s.value(t, "suanli_jobs_queued", "kind", "meter_rentals", "state", "available"); v != 1 {
		t.Errorf("queued meter jobs %v, want 1", v)
	}

	// The ledger volume is a counter that grows with new transactions
	// (counted from where the last reading stopped, not again from zero).
	if err := f.wallet.ConfirmBankTransfer(context.Background(), f.admin, f.topup, 5000); err != nil {
		t.Fatal(err)
	}
	s, _ = f.scrape(t)
	if v := s.value(t, "suanli_ledger_fen_total", "kind", "topup"); v != 15000 {
		t.Errorf("ledger topup volume after a second transfer %v, want 15000", v)
	}
	if v := s.value(t, "suanli_topups", "method", "bank_transfer", "status", "paid"); v != 2 {
		t.Errorf("paid bank transfers %v, want 2", v)
	}
}

// The market collector caches its reading: a scrape within CacheFor does
// not see a change made meanwhile; the next reading does.
func TestMarketMetricsCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.SQLite(t)
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	m := &metrics.Collector{DB: db, CacheFor: time.Hour}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	running := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "suanli_rentals" {
				continue
			}
			for _, s := range mf.GetMetric() {
				if s.GetLabel()[0].GetValue() == "running" {
					return s.GetGauge().GetValue()
				}
			}
		}
		t.Fatal("no suanli_rentals{status=running}")
		return 0
	}
	if v := running(); v != 0 {
		t.Fatalf("running rentals %v, want 0", v)
	}
	u := mustUser(t, db, "cache@metrics.example", "Cai Che", false)
	orgs, _ := db.OrgsOfUser(ctx, u.ID)
	var offer models.Offer
	db.R.Where("status = ?", models.OfferListed).Order("id").First(&offer)
	mustRunningRental(t, db, orgs[0].Org.ID, u.ID, offer)
	if v := running(); v != 0 {
		t.Errorf("within the cache period the reading is reused: %v, want 0", v)
	}
	m.CacheFor = time.Nanosecond
	if v := running(); v != 1 {
		t.Errorf("after the cache period: %v, want 1", v)
	}
}

// Every query of the Grafana dashboard names only metrics that /metrics
// exposes, and the file is a Grafana dashboard model.
func TestGrafanaDashboardMatchesMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Panels        []json.RawMessage
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if dash.UID == "" || dash.Title == "" || dash.SchemaVersion == 0 || len(dash.Panels) == 0 {
		t.Fatalf("not a dashboard model: uid %q title %q schemaVersion %d, %d panels", dash.UID, dash.Title, dash.SchemaVersion, len(dash.Panels))
	}
	type panel struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		GridPos *struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []panel `json:"panels"`
	}
	var panels []panel
	if err := json.Unmarshal(raw, &struct {
		Panels *[]panel `json:"panels"`
	}{&panels}); err != nil {
		t.Fatal(err)
	}

	f := newMetricsFixture(t, dbtest.SQLite(t))
	s, _ := f.scrape(t)
	metricName := regexp.MustCompile(`\b(suanli_[a-z0-9_]+|go_[a-z0-9_]+|process_[a-z0-9_]+)\b`)
	ids := map[int]bool{}
	exprs := 0
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
				t.Errorf("panel %q has no gridPos", p.Title)
			}
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				exprs++
				names := metricName.FindAllString(tg.Expr, -1)
				if len(names) == 0 {
					t.Errorf("panel %q: %q names no metric", p.Title, tg.Expr)
				}
				for _, n := range names {
					if _, ok := s[n]; !ok {
						t.Errorf("panel %q: %s is not exposed on /metrics", p.Title, n)
					}
				}
			}
			walk(p.Panels)
		}
	}
	walk(panels)
	if exprs < 20 {
		t.Errorf("only %d queries", exprs)
	}
}

// lockedBuffer collects log output written from the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	l.b.Reset()
	return out
}

// Every request's log line carries its request id and, where known, the
// user, organisation, rental and node it concerned.
func TestRequestLogCarriesIDs(t *testing.T) {
	a := newSQLiteApp(t)
	ctx := context.Background()
	logs := &lockedBuffer{}
	prev := slog.Default()
	// Debug: an agent's routine requests log at debug (TestAgentTrafficLogsAtDebug).
	slog.SetDefault(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	u := mustUser(t, a.db, "logged@metrics.example", "Lou Logged", false)
	orgs, err := a.db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatal(err)
	}
	org := orgs[0].Org.ID
	var offer models.Offer
	if err := a.db.R.Where("status = ?", models.OfferListed).Order("id").First(&offer).Error; err != nil {
		t.Fatal(err)
	}
	rental := mustRunningRental(t, a.db, org, u.ID, offer)
	ac := loggedIn(a, "lou", u)
	token, _, err := (&accounts.Service{DB: a.db}).CreateAPIToken(ctx, u, "logs")
	if err != nil {
		t.Fatal(err)
	}
	regToken, err := (&fleet.Fleet{DB: a.db}).IssueRegistrationToken(ctx, offer.NodeID)
	if err != nil {
		t.Fatal(err)
	}
	logs.lines(t) // forget the set-up's requests

	// only returns the one request log line of a request.
	only := func(what string) map[string]any {
		t.Helper()
		var got []map[string]any
		for _, l := range logs.lines(t) {
			if l["msg"] == "http" {
				got = append(got, l)
			}
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d request log lines, want 1: %v", what, len(got), got)
		}
		if id, _ := got[0]["request_id"].(string); id == "" {
			t.Errorf("%s: no request_id in %v", what, got[0])
		}
		return got[0]
	}
	is := func(line map[string]any, key string, want int64) {
		t.Helper()
		if v, ok := line[key].(float64); !ok || int64(v) != want {
			t.Errorf("%s = %v in %v, want %d", key, line[key], line, want)
		}
	}
	absent := func(line map[string]any, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := line[k]; ok {
				t.Errorf("%s in %v, want none", k, line)
			}
		}
	}

	ac.do("GET", a.url(routenames.RentalsShow, idParam(rental)), nil)
	l := only("the rental page")
	is(l, "user_id", u.ID)
	is(l, "org_id", org)
	is(l, "rental_id", rental)
	absent(l, "node_id")
	if l["route"] != routenames.RentalsShow {
		t.Errorf("route %v, want rentals.show", l["route"])
	}

	req, _ := http.NewRequest("GET", a.srv.URL+a.url(routenames.APIRentalsShow, idParam(rental)), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	l = only("the rental API")
	is(l, "user_id", u.ID)
	is(l, "org_id", org)
	is(l, "rental_id", rental)

	ac.do("GET", a.url(routenames.OrgsShow, idParam(org)), nil)
	l = only("the organisation page")
	is(l, "user_id", u.ID)
	is(l, "org_id", org)
	absent(l, "rental_id")

	// Anonymous: the request id alone.
	a.get("/offers")
	absent(only("the offer list"), "user_id", "org_id", "rental_id", "node_id")

	// A node agent: its node.
	req, _ = http.NewRequest("POST", a.srv.URL+"/agent/v1/heartbeat", strings.NewReader(`{"agent_version":"test"}`))
	req.Header.Set("Authorization", "Bearer "+regToken)
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	l = only("an agent heartbeat")
	is(l, "node_id", offer.NodeID)
	absent(l, "user_id")
}
