package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
)

// Scale-out on PostgreSQL with real processes: two `serve --workers=false`
// and two `work` replicas of the built binary on one fresh database, and
// soNodes separate `suanli agent --simulate dgxh100` processes split
// between the two web replicas. A session, its CSRF token and the login
// throttle cross replicas; then soRentals one-GPU rentals are driven
// through both web replicas at once while the worker holding River's
// leadership is killed with SIGKILL halfway through. Every rental runs
// (jobs the dead worker held are rescued), is provisioned exactly once,
// is billed by the meter exactly what its running time costs, and is
// stopped; no GPU is ever in two rentals at once and the ledger balances.
// Last, it measures offer search and rent requests against one web
// replica and against both (figures in the log and docs/scaleout.md).
// PostgreSQL only (TEST_DATABASE_URL; skipped without, failed under CI).
func TestScaleOutTwoWebTwoWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six processes and 25 agents for about two minutes")
	}
	dbURL := dbtest.PostgresURL(t)
	bin := buildSuanli(t)
	ctx := context.Background()
	c := &cluster{t: t, bin: bin, dir: t.TempDir(), dbURL: dbURL}
	c.cli("migrate")
	db, err := models.Open(ctx, "postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })

	// People: a verified provider (API token) and a funded renter with a
	// few API tokens (rate limits, where there are any, are per token).
	pw := filepath.Join(c.dir, "pw")
	if err := os.WriteFile(pw, []byte(soPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.cli("admin", "create-user", "--email", "ops@scaleout.example", "--password-file", pw, "--provider", "Scale-out GPU Co", "--simulated")
	provider := strings.TrimSpace(c.cli("admin", "token", "--email", "ops@scaleout.example", "--name", "scaleout"))
	c.cli("admin", "create-user", "--email", soRenter, "--password-file", pw)
	var renter []string
	for i := range 4 {
		renter = append(renter, strings.TrimSpace(c.cli("admin", "token", "--email", soRenter, "--name", fmt.Sprint("scaleout-", i))))
	}
	c.cli("admin", "credit", "--email", soRenter, "--fen", fmt.Sprint(soCreditFen), "--reason", "scale-out test")

	// Worker 1 starts first and takes River's leadership (periodic jobs,
	// the rescuer); it is the one killed later.
	work1 := c.start("work-1", "work")
	leader := c.waitLeader(db, "")
	work2 := c.start("work-2", "work")
	webs := []*proc{c.start("web-1", "serve", "--workers=false"), c.start("web-2", "serve", "--workers=false")}
	_ = work2
	for _, w := range webs {
		c.waitReady(w)
	}
	t.Logf("leader %s", leader)

	t.Run("sessions, CSRF and the login throttle work across replicas", func(t *testing.T) {
		crossReplicaLogin(t, webs[0].url, webs[1].url)
	})

	// Capacity: one datacentre, soNodes nodes through web 1, each with its
	// own agent process talking to web 1 or web 2.
	call := func(base, method, path, token string, body, into any) int {
		t.Helper()
		st, b := soCall(t, base, method, path, token, body)
		if into != nil && st < 300 {
			if err := json.Unmarshal(b, into); err != nil {
				t.Fatalf("%s %s: %v %s", method, path, err, b)
			}
		}
		if st >= 300 && into != nil {
			t.Fatalf("%s %s: %d %s", method, path, st, b)
		}
		return st
	}
	var dc struct{ ID int64 }
	call(webs[0].url, "POST", "/api/v1/provider/datacenters", provider, map[string]any{"name": "扩容测试机房", "city": "chengdu", "district": "天府新区"}, &dc)
	nodes := make([]int64, soNodes)
	for i := range soNodes {
		var n struct {
			ID    int64
			Token string
		}
		call(webs[0].url, "POST", "/api/v1/provider/nodes", provider, map[string]any{"datacenter_id": dc.ID, "name": fmt.Sprintf("so-%02d", i)}, &n)
		nodes[i] = n.ID
		c.agent(i, webs[i%2].url, n.Token)
	}
	start := time.Now()
	model := c.waitNodesHealthy(db, nodes)
	t.Logf("%d agents registered, nodes healthy with 8 GPUs each in %.1fs (model %s)", soNodes, time.Since(start).Seconds(), model)
	offers := make([]int64, soNodes)
	for i, n := range nodes {
		var o struct {
			ID     int64
			Listed bool
		}
		call(webs[i%2].url, "POST", "/api/v1/provider/offers", provider, map[string]any{"node_id": n, "gpu": model, "gpus": 8, "price_per_gpu_hour_fen": 1500 + 10*i}, &o)
		if !o.Listed {
			t.Fatalf("offer %d on node %d not listed", o.ID, n)
		}
		offers[i] = o.ID
	}

	// The drive: soRentals one-GPU rentals through both web replicas at
	// once; the leader worker is killed once half are requested.
	key := sshKey(t)
	half := make(chan struct{})
	var once sync.Once
	var answered atomic.Int64
	start = time.Now()
	ids, d := driveRents(t, soRentals, soConcurrency, func(i int) string { return webs[i%2].url }, renter, offers, key, func() {
		if answered.Add(1) == soRentals/2 {
			once.Do(func() { close(half) })
		}
	})
	<-half
	killedAt := time.Since(start)
	c.kill(work1)
	<-d
	requested := time.Since(start)
	t.Logf("%d rent requests answered in %.1fs (%.0f/s, %d answered 409 and were retried, %d 429); worker 1 killed after %.1fs",
		len(*ids), requested.Seconds(), float64(soRentals)/requested.Seconds(), conflicts.Load(), limited.Load(), killedAt.Seconds())
	if len(*ids) != soRentals {
		t.Fatalf("%d rentals created, want %d", len(*ids), soRentals)
	}
	rentals := *ids
	c.waitAll(db, rentals, models.RentalRunning, 5*time.Minute)
	allRunning := time.Since(start)
	t.Logf("all %d rentals running %.1fs after the first request: %.1f rentals/s provisioned, through a worker SIGKILL (rescue after 40s)",
		soRentals, allRunning.Seconds(), float64(soRentals)/allRunning.Seconds())
	t.Logf("%s", provisionLatency(t, db, rentals))
	if l := c.waitLeader(db, leader); l != "" {
		t.Logf("leadership moved to %s", l)
	}
	checkNoSharedGPU(t, db)
	var held int64
	if err := db.R.Raw(`SELECT COUNT(DISTINCT rg.gpu_id) FROM rental_gpus rg WHERE rg.released_at IS NULL AND rg.rental_id IN ?`, rentals).Scan(&held).Error; err != nil {
		t.Fatal(err)
	}
	if held != soRentals {
		t.Errorf("%d running one-GPU rentals hold %d distinct GPUs", soRentals, held)
	}

	// Let the surviving worker's meter bill every rental at least twice.
	c.waitMeterPasses(db, rentals, 2)

	start = time.Now()
	stopAll(t, rentals, soConcurrency, func(i int) string { return webs[(i+1)%2].url }, renter)
	c.waitAll(db, rentals, models.RentalStopped, 2*time.Minute)
	t.Logf("all %d rentals stopped %.1fs after the first stop request", soRentals, time.Since(start).Seconds())
	c.waitJobsSettled(db, 3*time.Minute)

	checkRentals(t, db, rentals, true)
	var rescued int64
	_ = db.R.Raw(`SELECT COUNT(*) FROM river_job WHERE errors::text LIKE '%rescued%' OR errors::text LIKE '%Rescuer%'`).Scan(&rescued).Error
	t.Logf("%d jobs the killed worker held were rescued and run again", rescued)

	// Two web replicas against one: throughput of offer search and of rent
	// requests (no assertion on speed: this machine has two cores).
	one := func(int) string { return webs[0].url }
	both := func(i int) string { return webs[i%2].url }
	search := "/api/v1/offers?gpu=" + url.QueryEscape(model) + "&sort=price"
	loadGET(t, one, search, 8, 200) // warm both replicas' caches
	loadGET(t, both, search, 8, 200)
	// Rounds alternate, so that load from elsewhere on the machine falls
	// on both alike.
	for round := range soRounds {
		r1 := loadGET(t, one, search, 8, soSearches)
		r2 := loadGET(t, both, search, 8, soSearches)
		t.Logf("offer search, round %d: one web %.0f req/s, two webs %.0f req/s (8 clients, %d requests each)", round+1, r1, r2, soSearches)
	}
	var measured []int64
	for round := range soRounds {
		for _, tc := range []struct {
			name string
			url  func(int) string
		}{{"one web", one}, {"two webs", both}} {
			conflicts.Store(0)
			st := time.Now()
			ids, d := driveRents(t, soMeasuredRents, 8, tc.url, renter, offers, key, nil)
			<-d
			el := time.Since(st)
			c.waitAll(db, *ids, models.RentalRunning, 2*time.Minute)
			t.Logf("rent requests, round %d, %s: %.0f req/s (%d rentals, 8 clients, %d retried on 409); %s", round+1, tc.name,
				float64(len(*ids))/el.Seconds(), len(*ids), conflicts.Load(), provisionLatency(t, db, *ids))
			stopAll(t, *ids, 8, both, renter)
			c.waitAll(db, *ids, models.RentalStopped, 2*time.Minute)
			measured = append(measured, *ids...)
		}
	}
	c.waitJobsSettled(db, 2*time.Minute)
	checkRentals(t, db, measured, false)
	checkNoSharedGPU(t, db)
	checkLedger(t, db, append(rentals, measured...))

	for _, p := range append(webs, work2) {
		c.stop(p)
	}
}

// The test's scale; about two minutes on two cores.
const (
	soNodes         = 25 // × 8 GPUs = 200
	soRentals       = 200
	soConcurrency   = 16
	soSearches      = 2000
	soMeasuredRents = 100
	soRounds        = 2
	soCreditFen     = 10_000_000
	soMeterEvery    = 3 * time.Second
	soRenter        = "renter@scaleout.example"
	soPassword      = "scale-out-pass-2026"
)

// conflicts counts rent requests answered 409 (another request took the
// GPUs first) and limited those answered 429; both are retried.
var conflicts, limited atomic.Int64

// cluster is the processes of one scale-out test on one database.
type cluster struct {
	t              *testing.T
	bin, dir       string
	dbURL          string
	mu             sync.Mutex
	procs          []*proc
	cleanupEnabled bool
}

// proc is one running process of the binary.
type proc struct {
	name, url, log string
	cmd            *exec.Cmd
	exited         chan struct{}
}

// env is the environment of every process: the test's database, the
// shortest job rescue, a short meter period, nothing of the caller's.
func (c *cluster) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "SUANLI_") && !strings.HasPrefix(kv, "SMTP_URL=") && !strings.HasPrefix(kv, "STRIPE_") {
			env = append(env, kv)
		}
	}
	// The per-token API rate limits are off: the test measures throughput.
	return append(env, "DATABASE_URL="+c.dbURL, "SUANLI_JOB_RESCUE_AFTER=40s", "SUANLI_METER_EVERY="+soMeterEvery.String(), "SUANLI_INDEX_REFRESH=1s",
		"SUANLI_API_READ_RATE=0", "SUANLI_API_WRITE_RATE=0")
}

// cli runs a short command (migrate, admin …) and returns its output.
func (c *cluster) cli(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("suanli %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// start starts a long-running subcommand; serve gets a free port and its
// URL.
func (c *cluster) start(name string, args ...string) *proc {
	c.t.Helper()
	p := &proc{name: name, log: filepath.Join(c.dir, name+".log"), exited: make(chan struct{})}
	if args[0] == "serve" {
		addr := freeAddr(c.t)
		p.url = "http://" + addr
		args = append(args, "--addr", addr, "--base-url", p.url)
	}
	c.run(p, c.bin, args...)
	return p
}

// The web replicas run with one core each (GOMAXPROCS=1), as one replica
// per core would: the throughput of one against two then shows whether
// anything shared (a lock, the database) keeps the second from adding
// its core. Workers and agents keep the default.

// agent starts node i's agent against server.
func (c *cluster) agent(i int, server, token string) *proc {
	c.t.Helper()
	p := &proc{name: fmt.Sprintf("agent-%02d", i), log: filepath.Join(c.dir, fmt.Sprintf("agent-%02d.log", i)), exited: make(chan struct{})}
	c.run(p, c.bin, "agent", "--server", server, "--token", token, "--simulate", "dgxh100",
		"--state-file", filepath.Join(c.dir, fmt.Sprintf("agent-%02d.json", i)), "--bench-python", "/nonexistent/python3", "--log-level", "warn")
	return p
}

func (c *cluster) run(p *proc, bin string, args ...string) {
	c.t.Helper()
	logf, err := os.Create(p.log)
	if err != nil {
		c.t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = c.env()
	if args[0] == "serve" {
		p.cmd.Env = append(p.cmd.Env, "GOMAXPROCS=1")
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.exited) }()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, p)
	if !c.cleanupEnabled {
		c.cleanupEnabled = true
		c.t.Cleanup(c.cleanup)
	}
}

// cleanup kills what is still running (agents first) and, on failure,
// shows the tail of every server and worker log.
func (c *cluster) cleanup() {
	c.mu.Lock()
	procs := slices.Clone(c.procs)
	c.mu.Unlock()
	slices.Reverse(procs)
	for _, p := range procs {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if !c.t.Failed() {
		return
	}
	for _, p := range procs {
		if strings.HasPrefix(p.name, "agent-") && p.name != "agent-00" {
			continue
		}
		b, _ := os.ReadFile(p.log)
		var keep []string
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			if !strings.Contains(l, "msg=http ") {
				keep = append(keep, l)
			}
		}
		c.t.Logf("%s log (without access lines), last 40 lines:\n%s", p.name, strings.Join(keep[max(0, len(keep)-40):], "\n"))
	}
}

// kill ends a process with SIGKILL: no shutdown code runs.
func (c *cluster) kill(p *proc) {
	c.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	<-p.exited
}

// stop ends a process with SIGTERM and checks it shuts down cleanly.
func (c *cluster) stop(p *proc) {
	c.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	select {
	case <-p.exited:
		if !p.cmd.ProcessState.Success() {
			c.t.Errorf("%s after SIGTERM: %v", p.name, p.cmd.ProcessState)
		}
	case <-time.After(60 * time.Second):
		c.t.Errorf("%s did not stop within 60s of SIGTERM", p.name)
	}
}

func (c *cluster) waitReady(p *proc) {
	c.t.Helper()
	c.until(60*time.Second, p.name+" ready", func() bool {
		select {
		case <-p.exited:
			c.t.Fatalf("%s exited while starting", p.name)
		default:
		}
		res, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

// until polls cond every 200 ms until it holds, failing after limit.
func (c *cluster) until(limit time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitLeader waits until a River client other than not holds the
// leadership and returns its id.
func (c *cluster) waitLeader(db *models.DB, not string) string {
	c.t.Helper()
	var id string
	c.until(90*time.Second, "a River leader", func() bool {
		id = ""
		if err := db.R.Raw(`SELECT leader_id FROM river_leader WHERE expires_at > now()`).Scan(&id).Error; err != nil {
			c.t.Fatal(err)
		}
		return id != "" && id != not
	})
	return id
}

// waitNodesHealthy waits until every node is healthy with 8 healthy GPUs
// and returns the catalogue model NVML reported.
func (c *cluster) waitNodesHealthy(db *models.DB, nodes []int64) string {
	c.t.Helper()
	var model string
	c.until(2*time.Minute, "every node healthy with 8 GPUs", func() bool {
		var n int64
		if err := db.R.Raw(`SELECT COUNT(*) FROM nodes n WHERE n.id IN ? AND n.health = 'healthy' AND n.gpu_model <> ''
			AND (SELECT COUNT(*) FROM gpus g WHERE g.node_id = n.id AND g.health = 'healthy' AND g.state = 'free') = 8`, nodes).Scan(&n).Error; err != nil {
			c.t.Fatal(err)
		}
		return n == int64(len(nodes))
	})
	if err := db.R.Raw(`SELECT gpu_model FROM nodes WHERE id = ?`, nodes[0]).Scan(&model).Error; err != nil {
		c.t.Fatal(err)
	}
	return model
}

// waitAll waits until every rental has the status; a failed one fails
// the test at once.
func (c *cluster) waitAll(db *models.DB, ids []int64, status models.RentalStatus, limit time.Duration) {
	c.t.Helper()
	c.until(limit, fmt.Sprintf("%d rentals %s", len(ids), status), func() bool {
		var rows []struct {
			Status string
			N      int
		}
		if err := db.R.Raw(`SELECT status, COUNT(*) AS n FROM rentals WHERE id IN ? GROUP BY status`, ids).Scan(&rows).Error; err != nil {
			c.t.Fatal(err)
		}
		for _, r := range rows {
			if models.RentalStatus(r.Status) == models.RentalFailed {
				var why []string
				db.R.Raw(`SELECT failure FROM rentals WHERE id IN ? AND status = 'failed' LIMIT 3`, ids).Scan(&why)
				c.t.Fatalf("%d rentals failed: %q", r.N, why)
			}
			if models.RentalStatus(r.Status) == status && r.N == len(ids) {
				return true
			}
		}
		return false
	})
}

// waitMeterPasses waits until the meter has billed every rental at least
// passes times since now (its billed-until second moved that often).
func (c *cluster) waitMeterPasses(db *models.DB, ids []int64, passes int) {
	c.t.Helper()
	var before time.Time
	if err := db.R.Raw(`SELECT MAX(billed_until) FROM rentals WHERE id IN ?`, ids).Scan(&before).Error; err != nil {
		c.t.Fatal(err)
	}
	seen := map[time.Time]bool{}
	c.until(2*time.Minute, fmt.Sprintf("%d meter passes", passes), func() bool {
		var least time.Time
		if err := db.R.Raw(`SELECT MIN(billed_until) FROM rentals WHERE id IN ?`, ids).Scan(&least).Error; err != nil {
			c.t.Fatal(err)
		}
		if least.After(before) {
			seen[least] = true
		}
		return len(seen) >= passes
	})
}

// waitJobsSettled waits until no job is left to run or running (periodic
// jobs aside: they come back) and checks none was discarded.
func (c *cluster) waitJobsSettled(db *models.DB, limit time.Duration) {
	c.t.Helper()
	c.until(limit, "provisioning jobs finished", func() bool {
		var states []struct {
			Kind, State string
			N           int
		}
		if err := db.R.Raw(`SELECT kind, state, COUNT(*) AS n FROM river_job GROUP BY kind, state`).Scan(&states).Error; err != nil {
			c.t.Fatal(err)
		}
		open := false
		for _, st := range states {
			switch st.State {
			case "completed", "cancelled":
			case "discarded":
				var errs []string
				db.R.Raw(`SELECT CAST(errors AS TEXT) FROM river_job WHERE state = 'discarded' AND kind = ?`, st.Kind).Scan(&errs)
				c.t.Fatalf("%d %s jobs discarded: %s", st.N, st.Kind, strings.Join(errs, "; "))
			default:
				open = open || st.Kind == "provision_rental"
			}
		}
		return !open
	})
}

// soClient keeps connections to both replicas open under load.
var soClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 64}}

// soCall makes one API call; a 429 is waited out and repeated.
func soCall(t testing.TB, base, method, path, token string, body any) (int, []byte) {
	for {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := soClient.Do(req)
		if err != nil {
			t.Errorf("%s %s%s: %v", method, base, path, err)
			return 0, nil
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusTooManyRequests {
			limited.Add(1)
			secs, _ := strconv.Atoi(res.Header.Get("Retry-After"))
			time.Sleep(time.Duration(max(secs, 1)) * time.Second)
			continue
		}
		return res.StatusCode, b
	}
}

// driveRents makes n one-GPU rent requests with conc clients, request i
// to base(i), and returns the rentals' ids and a channel closed when all
// are answered. A 409 (the GPUs went to another request) is retried on
// the next offer. answered runs after each rental is created.
func driveRents(t *testing.T, n, conc int, base func(int) string, tokens []string, offers []int64, key string, answered func()) (*[]int64, chan struct{}) {
	var mu sync.Mutex
	ids := &[]int64{}
	done := make(chan struct{})
	next := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				o := i
				for try := 0; ; try++ {
					if try > 10*len(offers) {
						t.Errorf("rent %d: no offer with a free GPU after %d tries", i, try)
						break
					}
					st, b := soCall(t, base(i), "POST", "/api/v1/rentals", tokens[i%len(tokens)],
						map[string]any{"offer_id": offers[o%len(offers)], "gpus": 1, "sla": "standard", "ssh_public_key": key})
					if st == http.StatusConflict {
						conflicts.Add(1)
						o++
						continue
					}
					var r struct{ ID int64 }
					if st != http.StatusCreated || json.Unmarshal(b, &r) != nil || r.ID == 0 {
						t.Errorf("rent %d via %s: %d %s", i, base(i), st, b)
						break
					}
					mu.Lock()
					*ids = append(*ids, r.ID)
					mu.Unlock()
					if answered != nil {
						answered()
					}
					break
				}
			}
		})
	}
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		close(done)
	}()
	return ids, done
}

// stopAll stops the rentals, request i through base(i).
func stopAll(t *testing.T, ids []int64, conc int, base func(int) string, tokens []string) {
	t.Helper()
	next := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				st, b := soCall(t, base(i), "POST", fmt.Sprintf("/api/v1/rentals/%d/stop", ids[i]), tokens[i%len(tokens)], nil)
				if st != http.StatusOK {
					t.Errorf("stop rental %d: %d %s", ids[i], st, b)
				}
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
}

// loadGET makes n GETs of path with conc clients, request i to base(i),
// and returns requests per second.
func loadGET(t *testing.T, base func(int) string, path string, conc, n int) float64 {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				st, b := soCall(t, base(i), "GET", path, "", nil)
				if st != http.StatusOK {
					t.Errorf("GET %s: %d %s", path, st, b)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// provisionLatency says how long rentals took from the rent request to
// running (median, 95th percentile, most).
func provisionLatency(t *testing.T, db *models.DB, ids []int64) string {
	var ds []float64
	if err := db.R.Raw(`SELECT EXTRACT(EPOCH FROM (e.at - r.created_at))::float8 FROM rentals r JOIN rental_events e ON e.rental_id = r.id AND e.kind = 'running'
		WHERE r.id IN ? ORDER BY 1`, ids).Scan(&ds).Error; err != nil || len(ds) == 0 {
		t.Errorf("provisioning latency: %v", err)
		return ""
	}
	return fmt.Sprintf("rent request → running: median %.2fs, p95 %.2fs, max %.2fs", ds[len(ds)/2], ds[len(ds)*95/100], ds[len(ds)-1])
}

// checkNoSharedGPU checks that no GPU was ever held by two rentals at
// once: no two holds of one GPU overlap in time.
func checkNoSharedGPU(t *testing.T, db *models.DB) {
	t.Helper()
	var overlaps int64
	if err := db.R.Raw(`SELECT COUNT(*) FROM rental_gpus a JOIN rental_gpus b ON a.gpu_id = b.gpu_id AND a.id < b.id
		WHERE a.attached_at < COALESCE(b.released_at, 'infinity') AND b.attached_at < COALESCE(a.released_at, 'infinity')`).Scan(&overlaps).Error; err != nil {
		t.Fatal(err)
	}
	if overlaps != 0 {
		t.Errorf("%d pairs of rentals held one GPU at the same time", overlaps)
	}
}

// checkRentals checks each stopped rental: provisioned exactly once (one
// successful launch, one running event), stopped on its node, its GPUs
// released, and billed exactly Accrue over its billed time from the
// second it ran (each meter interval billed once, the carry exact), with
// the wallet paying exactly that. mustRun: every rental ran.
func checkRentals(t *testing.T, db *models.DB, ids []int64, mustRun bool) {
	t.Helper()
	var rs []models.Rental
	if err := db.R.Where("id IN ?", ids).Order("id").Find(&rs).Error; err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(ids) {
		t.Fatalf("%d of %d rentals found", len(rs), len(ids))
	}
	bad := 0
	fail := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	var billed int64
	for _, r := range rs {
		launched := countTasks(t, db, r.ID, "launch", true)
		running := countEvents(t, db, r.ID, "running")
		if r.Status != models.RentalStopped {
			fail("rental %d %s, want stopped", r.ID, r.Status)
		}
		if n := len(heldGPUs(t, db, r.ID)); n != 0 {
			fail("stopped rental %d still holds %d GPUs", r.ID, n)
		}
		if mustRun && (launched != 1 || running != 1 || r.Attempts != 1) {
			fail("rental %d: %d successful launches, %d running events, %d attempts; want exactly one each", r.ID, launched, running, r.Attempts)
		}
		if launched > 1 || running > 1 {
			fail("rental %d provisioned twice: %d launches, %d running events", r.ID, launched, running)
		}
		if stops := countTasks(t, db, r.ID, "stop", true); launched > 0 && stops == 0 {
			fail("rental %d launched but its node never confirmed a stop", r.ID)
		}
		if r.RunningSince == nil {
			if r.BilledFen != 0 {
				fail("rental %d never ran and was billed %d fen", r.ID, r.BilledFen)
			}
			continue
		}
		if r.BilledUntil == nil || r.BilledUntil.Sub(*r.RunningSince) < pricing.MinimumSeconds*time.Second {
			fail("rental %d billed %v…%v, want at least the %d s minimum", r.ID, r.RunningSince, r.BilledUntil, pricing.MinimumSeconds)
			continue
		}
		rate := pricing.Rate{PricePerGPUHourFen: r.PricePerGPUHourFen, GPUs: r.GPUs, OffpeakPct: r.OffpeakPct, StudentPct: r.StudentPct, SLASurchargePct: r.SLASurchargePct}
		want, carry := pricing.Accrue(rate, *r.RunningSince, *r.BilledUntil, 0)
		if r.DowntimeSecs == 0 && (r.BilledFen != want || r.CarryNum != carry) {
			fail("rental %d billed %d fen carrying %d over %s…%s, want %d carrying %d", r.ID, r.BilledFen, r.CarryNum, r.RunningSince, r.BilledUntil, want, carry)
		}
		var paid int64
		if err := db.R.Raw(`SELECT COALESCE(SUM(e.amount_fen), 0) FROM ledger_entries e JOIN ledger_txns x ON x.id = e.txn_id
			JOIN ledger_accounts a ON a.id = e.account_id WHERE x.rental_id = ? AND a.kind = ?`, r.ID, ledger.AccWallet).Scan(&paid).Error; err != nil {
			t.Fatal(err)
		}
		if -paid != r.BilledFen {
			fail("rental %d: the wallet paid %d fen, the rental was billed %d", r.ID, -paid, r.BilledFen)
		}
		billed += r.BilledFen
	}
	t.Logf("%d rentals checked, %d fen billed in all", len(rs), billed)
}

// checkLedger checks that the ledger balances and the renter's wallet
// paid exactly what its rentals were billed.
func checkLedger(t *testing.T, db *models.DB, ids []int64) {
	t.Helper()
	ctx := context.Background()
	if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
		t.Errorf("ledger: %v %v", problems, err)
	}
	var billed int64
	if err := db.R.Raw(`SELECT COALESCE(SUM(billed_fen), 0) FROM rentals WHERE id IN ?`, ids).Scan(&billed).Error; err != nil {
		t.Fatal(err)
	}
	u, err := db.UserByEmail(ctx, soRenter)
	if err != nil {
		t.Fatal(err)
	}
	orgs, err := db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("renter's organisations: %v", err)
	}
	if bal, _ := ledger.WalletBalance(ctx, db, orgs[0].Org.ID); bal != soCreditFen-billed {
		t.Errorf("wallet %d fen after rentals billed %d, want %d", bal, billed, soCreditFen-billed)
	}
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// crossReplicaLogin: the CSRF token from a page of one replica is
// accepted by the other, a session made by one is known to the other,
// and wrong passwords sent to both replicas add up to one throttle.
func crossReplicaLogin(t *testing.T, web1, web2 string) {
	jar, _ := cookiejar.New(nil) // cookies ignore ports: both replicas share them, as behind one host
	cl := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string) {
		t.Helper()
		res, err := cl.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	post := func(u string, form url.Values) int {
		t.Helper()
		req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	st, page := get(web1 + "/login")
	m := csrfField.FindStringSubmatch(page)
	if st != http.StatusOK || m == nil {
		t.Fatalf("GET /login on web 1: %d, CSRF field found: %v", st, m != nil)
	}
	token := m[1]
	if st := post(web2+"/login", url.Values{"_csrf": {token}, "email": {soRenter}, "password": {soPassword}}); st != http.StatusSeeOther {
		t.Fatalf("POST /login on web 2 with web 1's CSRF token: %d, want 303", st)
	}
	if st, _ := get(web1 + "/account"); st != http.StatusOK {
		t.Errorf("GET /account on web 1 after signing in on web 2: %d, want 200", st)
	}
	if st := post(web1+"/login", url.Values{"_csrf": {"forged-forged-forged-forged-forged-forged-aa"}, "email": {soRenter}, "password": {soPassword}}); st != http.StatusForbidden {
		t.Errorf("POST /login with a wrong CSRF token: %d, want 403", st)
	}
	// Wrong passwords for one account, alternating replicas: the throttle
	// counts them all (it is in the database).
	webs := []string{web1, web2}
	for i := range 5 {
		if st := post(webs[i%2]+"/login", url.Values{"_csrf": {token}, "email": {"ops@scaleout.example"}, "password": {"wrong"}}); st != http.StatusUnprocessableEntity {
			t.Fatalf("wrong password %d on web %d: %d, want 422", i+1, i%2+1, st)
		}
	}
	for i, w := range webs {
		if st := post(w+"/login", url.Values{"_csrf": {token}, "email": {"ops@scaleout.example"}, "password": {soPassword}}); st != http.StatusTooManyRequests {
			t.Errorf("the right password on web %d after 5 wrong ones on both: %d, want 429", i+1, st)
		}
	}
}
