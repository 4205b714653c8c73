package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"suanli/agent"
	"suanli/gpu"
)

// fakeServer is a minimal stand-in for our server's agent protocol: one
// single-use registration token, one credential, a task queue and the
// results received. It records the bearer token of every request.
type fakeServer struct {
	regToken, credential string
	tasks                chan agent.Task

	mu           sync.Mutex
	registered   bool
	hbAuth       []string // Authorization of each heartbeat
	pollAuth     []string // Authorization of each poll
	results      map[int64][]agent.Result
	attempts     map[int64]int
	fail503Once  map[int64]bool
	heartbeatsOK int
	lastHB       agent.Heartbeat
	// progress is what each task reported, with when it arrived;
	// progressTries counts every progress request, and noProgress makes
	// the server answer them 404, as one from before the endpoint would.
	progress      map[int64][]progressPost
	progressTries int
	noProgress    bool
}

// progressPost is one progress report the fake server took.
type progressPost struct {
	agent.Progress
	At time.Time
}

func newFakeServer(tb testing.TB) (*fakeServer, *httptest.Server) {
	tb.Helper()
	f := &fakeServer{
		regToken:    "reg-token",
		credential:  "node-credential",
		tasks:       make(chan agent.Task, 16),
		results:     map[int64][]agent.Result{},
		attempts:    map[int64]int{},
		fail503Once: map[int64]bool{},
		progress:    map[int64][]progressPost{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agent/v1/tasks/{id}/progress", f.taskProgress)
	mux.HandleFunc("POST "+agent.PathHeartbeat, f.heartbeat)
	mux.HandleFunc("GET "+agent.PathTasks, f.poll)
	mux.HandleFunc("POST /agent/v1/tasks/{id}/result", f.result)
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeServer) heartbeat(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	var hb agent.Heartbeat
	if err := json.NewDecoder(r.Body).Decode(&hb); err != nil || hb.Launcher == "" {
		http.Error(w, "bad heartbeat", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hbAuth = append(f.hbAuth, auth)
	f.lastHB = hb
	switch {
	case auth == "Bearer "+f.regToken && !f.registered:
		f.registered = true
		f.heartbeatsOK++
		writeJSON(w, agent.HeartbeatReply{NodeID: 1, Credential: f.credential})
	case auth == "Bearer "+f.credential:
		f.heartbeatsOK++
		writeJSON(w, agent.HeartbeatReply{NodeID: 1})
	default:
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}
}

func (f *fakeServer) poll(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	f.mu.Lock()
	f.pollAuth = append(f.pollAuth, auth)
	f.mu.Unlock()
	if auth != "Bearer "+f.credential {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if _, err := strconv.Atoi(r.URL.Query().Get("wait")); err != nil {
		http.Error(w, "wait must be seconds", http.StatusBadRequest)
		return
	}
	// Hold the poll briefly, whatever wait says, to keep tests quick.
	var out agent.Tasks
	select {
	case t := <-f.tasks:
		out.Tasks = append(out.Tasks, t)
	case <-time.After(100 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	writeJSON(w, out)
}

func (f *fakeServer) result(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+f.credential {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	var res agent.Result
	if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
		http.Error(w, "bad result", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[id]++
	if f.fail503Once[id] && f.attempts[id] == 1 {
		http.Error(w, "database busy", http.StatusServiceUnavailable)
		return
	}
	f.results[id] = append(f.results[id], res)
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeServer) taskProgress(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	var p agent.Progress
	if err == nil {
		err = json.NewDecoder(r.Body).Decode(&p)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.progressTries++
	switch {
	case f.noProgress:
		http.NotFound(w, r)
	case r.Header.Get("Authorization") != "Bearer "+f.credential:
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	case err != nil:
		http.Error(w, "bad progress", http.StatusBadRequest)
	default:
		f.progress[id] = append(f.progress[id], progressPost{Progress: p, At: time.Now()})
		w.WriteHeader(http.StatusNoContent)
	}
}

// progressFor returns the progress reports taken for task id, and how
// many progress requests came in all.
func (f *fakeServer) progressFor(id int64) ([]progressPost, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.progress[id]), f.progressTries
}

// heartbeatSeen returns the last heartbeat taken.
func (f *fakeServer) heartbeatSeen() agent.Heartbeat {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastHB
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// resultsFor returns the results received for task id.
func (f *fakeServer) resultsFor(id int64) []agent.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.results[id])
}

func (f *fakeServer) counts() (heartbeats, polls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.hbAuth), len(f.pollAuth)
}

// fakeGPUs is a host with healthy GPUs except those listed in sick.
type fakeGPUs struct {
	uuids []string
	sick  map[string]string // uuid → reason
}

func (g fakeGPUs) verdict(uuid string) gpu.Verdict {
	if reason, ok := g.sick[uuid]; ok {
		return gpu.Verdict{Reasons: []string{reason}, Checks: []gpu.Check{{Name: "xid", Detail: reason}}}
	}
	return gpu.Verdict{Healthy: true, Checks: []gpu.Check{{Name: "xid", OK: true}}}
}

func (g fakeGPUs) Read() gpu.Host {
	h := gpu.Host{Simulated: true, At: time.Now()}
	for i, u := range g.uuids {
		h.GPUs = append(h.GPUs, gpu.Info{Index: i, UUID: u, Health: g.verdict(u)})
	}
	return h
}

func (g fakeGPUs) Verify(uuids []string) map[string]gpu.Verdict {
	out := map[string]gpu.Verdict{}
	for _, u := range uuids {
		if slices.Contains(g.uuids, u) {
			out[u] = g.verdict(u)
		}
	}
	return out
}

// testConfig is a config with short intervals against srv.
func testConfig(tb testing.TB, srv *httptest.Server) agent.Config {
	return agent.Config{
		Server:         srv.URL,
		Token:          "reg-token",
		HTTPClient:     srv.Client(),
		HeartbeatEvery: 20 * time.Millisecond,
		PollWait:       time.Second,
		GPUs:           fakeGPUs{uuids: []string{"GPU-a", "GPU-b", "GPU-c"}, sick: map[string]string{"GPU-c": "XID 79: GPU has fallen off the bus"}},
		Launcher:       &agent.SimulatedLauncher{Host: "sim.example"},
		Version:        "test",
		Logger:         slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// mustRun starts an agent and returns a function that cancels it and
// checks that Run returned nil promptly; it also runs at cleanup.
func mustRun(tb testing.TB, cfg agent.Config) (stop func()) {
	tb.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					tb.Errorf("Run returned %v after cancel, want nil", err)
				}
			case <-time.After(time.Minute):
				tb.Errorf("Run did not return within a minute of cancel")
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

// eventually fails the test unless cond becomes true within 30 s (a
// bound for a stuck agent, not a speed: on a loaded machine it may take
// seconds).
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mustResult waits for the result of task id and returns it.
func mustResult(tb testing.TB, f *fakeServer, id int64) agent.Result {
	tb.Helper()
	eventually(tb, "result of task "+strconv.FormatInt(id, 10), func() bool { return len(f.resultsFor(id)) > 0 })
	return f.resultsFor(id)[0]
}

func TestRegistrationTokenIsExchangedForACredential(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	cfg.StateFile = filepath.Join(t.TempDir(), "state", "agent.json")
	stop := mustRun(t, cfg)

	eventually(t, "heartbeats and a poll with the credential", func() bool {
		hb, polls := f.counts()
		return hb >= 3 && polls >= 1
	})
	stop()

	f.mu.Lock()
	hbAuth, pollAuth := slices.Clone(f.hbAuth), slices.Clone(f.pollAuth)
	f.mu.Unlock()
	if hbAuth[0] != "Bearer reg-token" {
		t.Errorf("first heartbeat sent %q, want the registration token", hbAuth[0])
	}
	for i, a := range hbAuth[1:] {
		if a != "Bearer node-credential" {
			t.Errorf("heartbeat %d sent %q, want the credential", i+1, a)
		}
	}
	for i, a := range pollAuth {
		if a != "Bearer node-credential" {
			t.Errorf("poll %d sent %q: polling must wait for the credential", i, a)
		}
	}

	t.Run("the credential is stored with mode 0600", func(t *testing.T) {
		st, err := os.Stat(cfg.StateFile)
		if err != nil {
			t.Fatal(err)
		}
		if mode := st.Mode().Perm(); mode != 0o600 {
			t.Errorf("state file mode %o, want 600", mode)
		}
		b, _ := os.ReadFile(cfg.StateFile)
		if !strings.Contains(string(b), "node-credential") {
			t.Errorf("state file does not hold the credential: %s", b)
		}
	})

	t.Run("a restarted agent uses the stored credential, not the spent token", func(t *testing.T) {
		f.mu.Lock()
		before := len(f.hbAuth)
		f.mu.Unlock()
		mustRun(t, cfg)
		eventually(t, "a poll from the restarted agent", func() bool {
			_, polls := f.counts()
			return polls > len(pollAuth)
		})
		f.mu.Lock()
		defer f.mu.Unlock()
		if got := f.hbAuth[before]; got != "Bearer node-credential" {
			t.Errorf("restarted agent's first heartbeat sent %q, want the stored credential", got)
		}
	})
}

func TestRejectedStoredCredentialFallsBackToTheToken(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	cfg.StateFile = filepath.Join(t.TempDir(), "agent.json")
	stale := `{"server":"` + srv.URL + `","credential":"revoked"}`
	if err := os.WriteFile(cfg.StateFile, []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, cfg)

	eventually(t, "registration with the configured token", func() bool {
		b, _ := os.ReadFile(cfg.StateFile)
		return strings.Contains(string(b), "node-credential")
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.hbAuth) < 2 || f.hbAuth[0] != "Bearer revoked" || f.hbAuth[1] != "Bearer reg-token" {
		t.Errorf("heartbeats sent %q, want the stored credential, then the configured token", f.hbAuth)
	}
}

func TestAWrongTokenIsRetriedNotFatal(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	cfg.Token = "typo"
	mustRun(t, cfg)

	eventually(t, "a second heartbeat after the 401", func() bool {
		hb, _ := f.counts()
		return hb >= 2
	})
	if _, polls := f.counts(); polls != 0 {
		t.Errorf("an unregistered agent polled %d times", polls)
	}
}

func TestVerifyTaskReportsVerdicts(t *testing.T) {
	f, srv := newFakeServer(t)
	mustRun(t, testConfig(t, srv))

	t.Run("healthy GPUs pass", func(t *testing.T) {
		f.tasks <- agent.Task{ID: 1, Kind: agent.TaskVerify, RentalID: 10, GPUUUIDs: []string{"GPU-a", "GPU-b"}}
		res := mustResult(t, f, 1)
		if !res.OK || res.Error != "" {
			t.Errorf("result = %+v, want OK", res)
		}
		if len(res.Verdicts) != 2 || !res.Verdicts["GPU-a"].Healthy || !res.Verdicts["GPU-b"].Healthy {
			t.Errorf("verdicts = %+v, want GPU-a and GPU-b healthy", res.Verdicts)
		}
	})
	t.Run("one sick GPU fails the task with its reason", func(t *testing.T) {
		f.tasks <- agent.Task{ID: 2, Kind: agent.TaskVerify, RentalID: 11, GPUUUIDs: []string{"GPU-a", "GPU-c"}}
		res := mustResult(t, f, 2)
		if res.OK || !strings.Contains(res.Error, "GPU-c: XID 79") {
			t.Errorf("result = %+v, want a failure naming GPU-c's XID 79", res)
		}
		if res.Verdicts["GPU-c"].Healthy || !res.Verdicts["GPU-a"].Healthy {
			t.Errorf("verdicts = %+v", res.Verdicts)
		}
	})
	t.Run("a GPU the host does not have fails the task", func(t *testing.T) {
		f.tasks <- agent.Task{ID: 3, Kind: agent.TaskVerify, RentalID: 12, GPUUUIDs: []string{"GPU-zzz"}}
		res := mustResult(t, f, 3)
		if res.OK || !strings.Contains(res.Error, "GPU-zzz: not found") {
			t.Errorf("result = %+v, want GPU-zzz not found", res)
		}
	})
	t.Run("an unknown kind fails", func(t *testing.T) {
		f.tasks <- agent.Task{ID: 4, Kind: "reboot"}
		if res := mustResult(t, f, 4); res.OK || !strings.Contains(res.Error, "unknown task kind") {
			t.Errorf("result = %+v", res)
		}
	})
}

func TestLaunchAndStopWithSimulatedLauncher(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	sim := &agent.SimulatedLauncher{Host: "sim.example"}
	cfg.Launcher = sim
	mustRun(t, cfg)

	f.tasks <- agent.Task{ID: 1, Kind: agent.TaskLaunch, RentalID: 42, WorkspaceID: "w1", GPUUUIDs: []string{"GPU-a"}, SSHPublicKey: "ssh-ed25519 AAAA"}
	res := mustResult(t, f, 1)
	want := agent.Access{Host: "sim.example", Port: 22042, User: "root", Command: "ssh -p 22042 root@sim.example", Simulated: true}
	if !res.OK || res.Access == nil || *res.Access != want {
		t.Fatalf("result = %+v (access %+v), want access %+v", res, res.Access, want)
	}
	if got := sim.Running(); !slices.Equal(got, []int64{42}) {
		t.Errorf("running = %v, want [42]", got)
	}

	f.tasks <- agent.Task{ID: 2, Kind: agent.TaskStop, RentalID: 42, WorkspaceID: "w1"}
	if res := mustResult(t, f, 2); !res.OK {
		t.Errorf("stop result = %+v", res)
	}
	if got := sim.Running(); len(got) != 0 {
		t.Errorf("running after stop = %v", got)
	}
	f.tasks <- agent.Task{ID: 3, Kind: agent.TaskStop, RentalID: 42, WorkspaceID: "w1"}
	if res := mustResult(t, f, 3); !res.OK {
		t.Errorf("a second stop failed: %+v", res)
	}
}

func TestResultIsRetriedAfter503(t *testing.T) {
	f, srv := newFakeServer(t)
	f.fail503Once[7] = true
	stop := mustRun(t, testConfig(t, srv))

	f.tasks <- agent.Task{ID: 7, Kind: agent.TaskVerify, GPUUUIDs: []string{"GPU-a"}}
	if res := mustResult(t, f, 7); !res.OK {
		t.Errorf("result = %+v", res)
	}
	// Count once the agent has stopped: Run returns only after every task
	// goroutine has, so a stray duplicate would have arrived by then.
	stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.attempts[7] != 2 || len(f.results[7]) != 1 {
		t.Errorf("%d attempts and %d results stored, want 2 attempts and 1 result", f.attempts[7], len(f.results[7]))
	}
}

// darkLoops is an agent's Silent that also counts, per loop, the rounds in
// which the heartbeat and poll loops found the agent silent. Each loop asks
// Silent at the top of every round, after the request of its round before
// was answered, so a loop counted once sends nothing more until Silent
// turns false, and every request it sent before has reached the server.
type darkLoops struct {
	silent atomic.Bool
	mu     sync.Mutex
	rounds map[string]int // "heartbeatLoop", "pollLoop" → rounds found silent
}

// Silent implements agent.Config.Silent; it tells the loops apart by the
// caller's stack.
func (d *darkLoops) Silent() bool {
	if !d.silent.Load() {
		return false
	}
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		for _, loop := range []string{"heartbeatLoop", "pollLoop"} {
			if strings.HasSuffix(f.Function, ")."+loop) {
				d.mu.Lock()
				d.rounds[loop]++
				d.mu.Unlock()
				return true
			}
		}
		if !more {
			return true
		}
	}
}

// darkRounds returns how many rounds each loop found the agent silent.
func (d *darkLoops) darkRounds() (heartbeat, poll int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rounds["heartbeatLoop"], d.rounds["pollLoop"]
}

func TestSilentStopsHeartbeatsAndPolls(t *testing.T) {
	f, srv := newFakeServer(t)
	dark := &darkLoops{rounds: map[string]int{}}
	cfg := testConfig(t, srv)
	cfg.Silent = dark.Silent
	mustRun(t, cfg)

	eventually(t, "heartbeats and polls", func() bool {
		hb, polls := f.counts()
		return hb >= 3 && polls >= 1
	})
	dark.silent.Store(true)
	// Once both loops have found the agent silent, a heartbeat or poll
	// already on the wire has landed: count then.
	eventually(t, "both loops to go dark", func() bool {
		hb, poll := dark.darkRounds()
		return hb >= 1 && poll >= 1
	})
	hb0, polls0 := f.counts()
	hbDark, pollDark := dark.darkRounds()
	// 25 more rounds of each loop, each a chance to send (the heartbeat
	// loop's are one heartbeat interval apart).
	eventually(t, "25 silent rounds of each loop", func() bool {
		hb, poll := dark.darkRounds()
		return hb >= hbDark+25 && poll >= pollDark+25
	})
	if hb, polls := f.counts(); hb != hb0 || polls != polls0 {
		t.Errorf("while silent: heartbeats %d → %d, polls %d → %d; want none", hb0, hb, polls0, polls)
	}

	dark.silent.Store(false)
	eventually(t, "heartbeats again after the fault clears", func() bool {
		hb, _ := f.counts()
		return hb > hb0
	})
}

func TestNewRejectsAnIncompleteConfig(t *testing.T) {
	_, srv := newFakeServer(t)
	for name, mutate := range map[string]func(*agent.Config){
		"no server":     func(c *agent.Config) { c.Server = "" },
		"not a URL":     func(c *agent.Config) { c.Server = "suanli.example" },
		"no token":      func(c *agent.Config) { c.Token = "" },
		"no GPU reader": func(c *agent.Config) { c.GPUs = nil },
		"no launcher":   func(c *agent.Config) { c.Launcher = nil },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, srv)
			mutate(&cfg)
			if _, err := agent.New(cfg); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

// gatedLauncher holds every launch until release is closed, and counts
// the launches it was asked for.
type gatedLauncher struct {
	agent.SimulatedLauncher
	release  chan struct{}
	launches atomic.Int32
}

func (g *gatedLauncher) Launch(ctx context.Context, spec agent.LaunchSpec) (*agent.Access, error) {
	g.launches.Add(1)
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.SimulatedLauncher.Launch(ctx, spec)
}

func TestTasksRunConcurrentlyAndOnce(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	gated := &gatedLauncher{release: make(chan struct{})}
	cfg.Launcher = gated
	mustRun(t, cfg)

	launch := agent.Task{ID: 1, Kind: agent.TaskLaunch, RentalID: 1, WorkspaceID: "w1", GPUUUIDs: []string{"GPU-a"}}
	f.tasks <- launch
	eventually(t, "the launch to start", func() bool { return gated.launches.Load() == 1 })

	t.Run("a verify for another rental is not held up by a slow launch", func(t *testing.T) {
		f.tasks <- agent.Task{ID: 2, Kind: agent.TaskVerify, RentalID: 2, GPUUUIDs: []string{"GPU-b"}}
		if res := mustResult(t, f, 2); !res.OK {
			t.Errorf("verify result = %+v", res)
		}
	})
	t.Run("a task handed out twice runs once", func(t *testing.T) {
		f.tasks <- launch
		// The repeat is delivered with the next poll; a verify queued after
		// it proves that poll was answered.
		f.tasks <- agent.Task{ID: 3, Kind: agent.TaskVerify, GPUUUIDs: []string{"GPU-a"}}
		mustResult(t, f, 3)
		close(gated.release)
		if res := mustResult(t, f, 1); !res.OK || res.Access == nil {
			t.Errorf("launch result = %+v", res)
		}
		f.tasks <- launch // after its result too
		f.tasks <- agent.Task{ID: 4, Kind: agent.TaskVerify, GPUUUIDs: []string{"GPU-a"}}
		mustResult(t, f, 4)
		if n := gated.launches.Load(); n != 1 {
			t.Errorf("launched %d times, want 1", n)
		}
		if n := len(f.resultsFor(1)); n != 1 {
			t.Errorf("%d results for the launch, want 1", n)
		}
	})
}
