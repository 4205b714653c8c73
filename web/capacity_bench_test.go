package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/offers"
	"suanli/web"
)

// BenchmarkCapacity measures what one request costs, for docs/capacity.md:
// process CPU per request (getrusage, user+system, so it includes the
// SQLite engine, which runs inside the process), PostgreSQL server CPU per
// request (utime+stime from /proc of the PostgreSQL backends connected
// to the benchmark's database, which is on this machine), and the SQL statements each
// request issues through gorm, the rows they return or change, and their
// client-side time (a gorm logger that sees every statement with its row
// count). River's job insert inside the rent transaction goes through
// River's own driver, not gorm, and BEGIN/COMMIT are not statements to
// gorm's logger: both are left out of queries/op.
//
// Each database is measured over the demo market (~40 offers) and then
// with `seed --scale 100000` added (the reference catalogue):
//
//	api-offers   GET /api/v1/offers with typical filters (per_page=50)
//	offers-page  GET /offers, the same searches as a full HTML page
//	index-build  loading the in-memory offer index from the database
//	rent         POST /api/v1/rentals (1 GPU, bearer token) with the job
//	             queue insert-only, so only the web request is measured
//	rental-get   GET /api/v1/rentals/{id}, what a renter polls
//
// Run: go test ./web -run '^$' -bench BenchmarkCapacity -benchtime 2s -timeout 0
// (add TEST_DATABASE_URL for PostgreSQL). A time-based -benchtime keeps
// index-build to a few loads while the requests run thousands of times.
func BenchmarkCapacity(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchCapacity(b, dbtest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) { benchCapacity(b, dbtest.Postgres(b)) })
}

// capacityScale is the reference catalogue size of docs/capacity.md.
const capacityScale = 100_000

func benchCapacity(b *testing.B, db *models.DB) {
	ctx := context.Background()
	qm := meterStatements(db)
	if err := demo.SeedDemo(ctx, db); err != nil {
		b.Fatal(err)
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	e := web.New(testHandler(db, ix), web.Options{})
	// The demo market has one page of results per search: page 1 only.
	b.Run("demo/api-offers", func(b *testing.B) { benchGets(b, e, qm, searchPaths("/api/v1/offers", "&per_page=50", 1)) })
	b.Run("demo/offers-page", func(b *testing.B) { benchGets(b, e, qm, searchPaths("/offers", "", 1)) })

	start := time.Now()
	if err := demo.SeedScale(ctx, db, capacityScale); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: seeded %d synthetic offers in %s", db.Dialect, capacityScale, time.Since(start).Round(time.Millisecond))
	b.Run("100k/index-build", func(b *testing.B) { benchIndexBuild(b, db, qm) })
	if _, err := ix.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("100k/index-patch", func(b *testing.B) { benchIndexPatch(b, db, qm, ix) })
	b.Run("100k/api-offers", func(b *testing.B) { benchGets(b, e, qm, searchPaths("/api/v1/offers", "&per_page=50", 3)) })
	b.Run("100k/offers-page", func(b *testing.B) { benchGets(b, e, qm, searchPaths("/offers", "", 3)) })

	// Renting needs healthy nodes; no agents run here, so the synthetic
	// nodes and their GPUs are marked healthy directly.
	if err := db.W.Exec("UPDATE nodes SET health = ? WHERE synthetic", models.NodeHealthy).Error; err != nil {
		b.Fatal(err)
	}
	if err := db.W.Exec("UPDATE gpus SET health = 'healthy' WHERE node_id IN (SELECT id FROM nodes WHERE synthetic)").Error; err != nil {
		b.Fatal(err)
	}
	token, orgID := benchRenter(b, db, "capacity-renter@example.com")
	if err := db.Tx(ctx, func(tx *gorm.DB) error {
		return billing.CreditPromo(tx, orgID, 100_000_000, "promo_credit", "capacity benchmark", nil, nil, db.Now().UTC())
	}); err != nil {
		b.Fatal(err)
	}
	var offers []int64
	if err := db.R.Model(&models.Offer{}).Where("synthetic AND status = ? AND available_gpus > 0", models.OfferListed).
		Order("id").Pluck("id", &offers).Error; err != nil || len(offers) == 0 {
		b.Fatalf("synthetic offers with free GPUs: %d %v", len(offers), err)
	}
	var rentals []int64
	key := benchSSHKey(b)
	b.Run("100k/rent", func(b *testing.B) { rentals = benchRent(b, e, qm, token, key, offers, rentals) })
	b.Run("100k/rental-get", func(b *testing.B) {
		if len(rentals) == 0 {
			b.Skip("no rentals")
		}
		paths := make([]string, len(rentals))
		for i, id := range rentals {
			paths[i] = fmt.Sprintf("/api/v1/rentals/%d", id)
		}
		benchGetsAuth(b, e, qm, paths, token)
	})
}

// searchPaths are typical searches: the benchmark page, the GPU
// models × cities × sort keys × pages of scripts/offers-mix.lua, and a few
// filters renters use (available, min_gpus, max_price, region, latency),
// over pages 1 to pages.
func searchPaths(base, extra string, pages int) []string {
	gpus := []string{"rtx-4090", "h100-sxm", "a100-80g-sxm", "l40s", "h20", "rtx-3090"}
	cities := []string{"chengdu", "beijing", "shanghai", "shenzhen"}
	sorts := []string{"price", "price_per_tflop", "latency", "vram"}
	var out []string
	out = append(out, base+"?gpu=h100-sxm&city=chengdu&sort=price"+extra)
	for i := range 48 {
		g, c, s := gpus[i%len(gpus)], cities[(i/len(gpus))%len(cities)], sorts[i%len(sorts)]
		page := 1 // a narrow filter may have one page only
		if i%6 == 0 {
			page = (i/6)%pages + 1
		}
		q := fmt.Sprintf("?gpu=%s&from=%s&sort=%s&page=%d", g, c, s, page)
		switch i % 6 {
		case 1:
			q += "&available=1"
		case 2:
			q += "&min_gpus=4"
		case 3:
			q += "&max_price=30"
		case 4:
			q += "&max_latency_ms=40"
		case 5:
			q += "&interconnect=nvlink"
		}
		out = append(out, base+q+extra)
	}
	out = append(out, base+"?sort=price"+extra, base+"?region=cn-southwest&sort=latency&from=chengdu"+extra)
	return out
}

func benchGets(b *testing.B, e *echo.Echo, qm *statementMeter, paths []string) {
	benchGetsAuth(b, e, qm, paths, "")
}

func benchGetsAuth(b *testing.B, e *echo.Echo, qm *statementMeter, paths []string, token string) {
	runtime.GC()
	b.ReportAllocs()
	i := 0
	m := qm.start(b)
	for b.Loop() {
		req := httptest.NewRequest("GET", paths[i%len(paths)], nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		i++
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", req.URL, rec.Code, rec.Body.String()[:min(rec.Body.Len(), 300)])
		}
	}
	m.report(b)
}

// benchRent rents one GPU of the next synthetic offer per iteration and
// returns the rentals made (appended to done).
func benchRent(b *testing.B, e *echo.Echo, qm *statementMeter, token, key string, offers, done []int64) []int64 {
	runtime.GC()
	b.ReportAllocs()
	next := len(done) // offers already rented once by an earlier round
	m := qm.start(b)
	for b.Loop() {
		if next >= len(offers) {
			b.Fatalf("ran out of offers with a free GPU after %d rentals", next)
		}
		body, _ := json.Marshal(map[string]any{"offer_id": offers[next], "gpus": 1, "sla": "standard", "ssh_public_key": key})
		next++
		req := httptest.NewRequest("POST", "/api/v1/rentals", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("rent offer %d: %d %s", offers[next-1], rec.Code, rec.Body.String())
		}
		var r struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.ID == 0 {
			b.Fatalf("rent: %v %s", err, rec.Body.String())
		}
		done = append(done, r.ID)
	}
	m.report(b)
	return done
}

// benchIndexBuild loads a fresh offer index per iteration (what a web
// replica does at start and after offers change) and reports its heap
// per offer.
func benchIndexBuild(b *testing.B, db *models.DB, qm *statementMeter) {
	ctx := context.Background()
	var ms0, ms1 runtime.MemStats
	var keep *offers.Index
	n := 0
	m := qm.start(b)
	for b.Loop() {
		keep = nil
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		ix := offers.NewIndex(db)
		if _, err := ix.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		keep, n = ix, ix.Len()
	}
	m.report(b)
	if n == 0 {
		b.Fatal("the index is empty")
	}
	b.ReportMetric(float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/float64(n), "heap-B/offer")
	b.ReportMetric(float64(n), "offers")
	runtime.KeepAlive(keep)
}

// benchIndexPatch changes one offer's free GPUs per iteration, logged as a
// rent logs it (models.OffersChanged), and lets a replica's index catch up:
// patch-cpu-ns/op and patch-queries/op are the Refresh's alone (this
// process's CPU: the in-memory patch, the driver, SQLite), not the write's.
func benchIndexPatch(b *testing.B, db *models.DB, qm *statementMeter, ix *offers.Index) {
	ctx := context.Background()
	var ids []int64
	if err := db.R.Model(&models.Offer{}).Where("synthetic AND status = ?", models.OfferListed).Order("id").Limit(1000).Pluck("id", &ids).Error; err != nil || len(ids) == 0 {
		b.Fatalf("synthetic offers: %d %v", len(ids), err)
	}
	loads := ix.Loads.Load()
	var cpu time.Duration
	var stmts int64
	i := 0
	for b.Loop() {
		id := ids[i%len(ids)]
		i++
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			if err := tx.Exec(`UPDATE offers SET available_gpus = CASE WHEN available_gpus > 0 THEN available_gpus - 1 ELSE max_gpus END
				WHERE id = ?`, id).Error; err != nil {
				return err
			}
			return models.OffersChanged(tx, models.OfferScope{Offers: []int64{id}})
		}); err != nil {
			b.Fatal(err)
		}
		s0, c0 := qm.stmts.Load(), processCPU(b)
		if changed, err := ix.Refresh(ctx); err != nil || !changed {
			b.Fatalf("refresh: changed %v, %v", changed, err)
		}
		cpu += processCPU(b) - c0
		stmts += qm.stmts.Load() - s0
	}
	if ix.Loads.Load() != loads {
		b.Fatal("the index reloaded whole instead of patching")
	}
	// Put the figures back: the rent benchmark rents what they say is free.
	if err := db.W.Exec(`UPDATE offers SET available_gpus = (SELECT COUNT(*) FROM gpus g
		WHERE g.node_id = offers.node_id AND g.gpu_model = offers.gpu_model AND g.state = 'free') WHERE id IN ?`, ids).Error; err != nil {
		b.Fatal(err)
	}
	if err := db.Tx(ctx, func(tx *gorm.DB) error { return models.OffersChanged(tx, models.OfferScope{Offers: ids}) }); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "patch-cpu-ns/op")
	b.ReportMetric(float64(stmts)/float64(b.N), "patch-queries/op")
}

// statementMeter counts the SQL statements gorm runs, with their rows and
// client-side time, through a logger installed on the database handles.
type statementMeter struct {
	logger.Interface
	db                 *models.DB
	stmts, rows, nanos atomic.Int64
}

func (m *statementMeter) LogMode(logger.LogLevel) logger.Interface { return m }

func (m *statementMeter) Trace(_ context.Context, begin time.Time, fc func() (string, int64), _ error) {
	_, rows := fc()
	m.stmts.Add(1)
	m.rows.Add(max(rows, 0))
	m.nanos.Add(int64(time.Since(begin)))
}

// meterStatements installs the meter on db's handles; sessions made from
// them afterwards (every request's) copy it.
func meterStatements(db *models.DB) *statementMeter {
	m := &statementMeter{Interface: logger.Discard, db: db}
	db.W.Config.Logger = m
	db.R.Config.Logger = m
	return m
}

// costWindow is one measurement: the counters and CPU at its start.
type costWindow struct {
	qm                 *statementMeter
	db                 *models.DB
	stmts, rows, nanos int64
	cpu                time.Duration
	pg                 map[int]time.Duration
}

func (m *statementMeter) start(b *testing.B) *costWindow {
	w := &costWindow{qm: m, db: m.db, stmts: m.stmts.Load(), rows: m.rows.Load(), nanos: m.nanos.Load(), cpu: processCPU(b)}
	w.pg = backendCPU(m.db)
	return w
}

func (w *costWindow) report(b *testing.B) {
	n := float64(b.N)
	cpu := processCPU(b) - w.cpu
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
	b.ReportMetric(float64(w.qm.stmts.Load()-w.stmts)/n, "queries/op")
	b.ReportMetric(float64(w.qm.rows.Load()-w.rows)/n, "rows/op")
	if q := w.qm.stmts.Load() - w.stmts; q > 0 {
		b.ReportMetric(float64(w.qm.nanos.Load()-w.nanos)/float64(q), "ns/query")
	}
	if end := backendCPU(w.db); end != nil {
		var d time.Duration
		for pid, t := range end {
			d += t - w.pg[pid] // a backend started in the window counts whole
		}
		b.ReportMetric(float64(d.Nanoseconds())/n, "pg-cpu-ns/op")
	}
}

// processCPU is this process's user+system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU is the user+system CPU of each PostgreSQL backend serving
// this benchmark's database (pg_stat_activity's pids, read in /proc: the
// test server runs on this machine), so other databases on the same
// server do not count; nil on SQLite or a remote server. Clock ticks are
// 10 ms: read it over many requests.
func backendCPU(db *models.DB) map[int]time.Duration {
	if db.Dialect != "postgres" {
		return nil
	}
	rows, err := db.ReadSQL.Query("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return nil
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil // not on this machine
		}
		// utime and stime are fields 14 and 15; count after the command,
		// which is in parentheses and may hold spaces.
		f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		if len(f) < 13 {
			return nil
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return nil
		}
		out[pid] = time.Duration(u+st) * (time.Second / userHZ)
	}
	if rows.Err() != nil {
		return nil
	}
	return out
}

// userHZ is the kernel's USER_HZ, the unit of /proc's CPU times: 100 on
// Linux everywhere this runs.
const userHZ = 100
