package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"suanli/models"
	"suanli/models/ledger"
)

// The reliability rule: the server killed (SIGKILL) while a rental
// is provisioning and restarted: the rental ends running or failed with
// nothing charged; never stuck, never double-provisioned. Each case runs
// the real binary (`serve --demo`, SQLite, in-process simulated agents),
// rents one GPU through the API, kills the process at a different point
// of provisioning, restarts it on the same data directory and waits until
// the rental and its provisioning job have settled — including a job the
// dead process left running, which River rescues after
// SUANLI_JOB_RESCUE_AFTER (40 s, the least allowed) and runs again. The
// kill points that depend on the agent's timing (a task handed to the
// agent, its result not yet in) are hit most of the time, not always; the
// log says where each kill landed. About a minute per case; the cases run
// in parallel (-parallel 5 runs them all at once).
func TestServerKilledWhileProvisioning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and crashes the real binary; takes a few minutes")
	}
	bin := buildSuanli(t)
	for _, tc := range []struct {
		name string
		// The kill comes once the API shows the rental in status seen, or
		// once the agent has taken its task of kind sent (when set), then
		// after the pause.
		seen, sent string
		after      time.Duration
	}{
		{"killed as the rent request is answered", "", "", 0},
		{"killed the moment it is seen provisioning", string(models.RentalProvisioning), "", 0},
		{"killed while the agent runs the NVML checks", "", "verify", 0},
		{"killed while the agent launches", "", "launch", 0},
		{"killed 100ms after the rent request", "", "", 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			crashDuringProvisioning(t, bin, tc.seen, tc.sent, tc.after)
		})
	}
}

// creditFen is what the renter's wallet holds before renting.
const creditFen = 1_000_000

func crashDuringProvisioning(t *testing.T, bin, seen, sent string, after time.Duration) {
	dir := t.TempDir()
	srv := &suanliServer{t: t, bin: bin, dir: dir, addr: freeAddr(t)}
	srv.start()
	token := srv.renter("renter@example.com")

	busyBefore := busyGPUs(t, dir)
	srv.data()
	rental := srv.rentOneGPU(token)
	if seen != "" {
		srv.waitStatus(rental.ID, seen)
	}
	if sent != "" {
		srv.waitTaskSent(rental.ID, sent)
	}
	if after > 0 {
		time.Sleep(after)
	}
	srv.kill()
	atKill := snapshot(t, dir, rental.ID)
	t.Logf("rental %d: %q in the rent answer; at the kill: %s", rental.ID, rental.Status, atKill)

	srv.start()
	restarted := time.Now()
	final := srv.waitSettled(token, rental.ID, restarted.Add(3*time.Minute))
	t.Logf("rental %d %s %.1fs after the restart", rental.ID, final, time.Since(restarted).Seconds())
	// A job the dead process left running is rescued and run again; wait
	// for it, so that a rerun that provisions twice is seen.
	srv.waitJobsFinal(restarted.Add(3 * time.Minute))
	t.Logf("provisioning jobs final %.1fs after the restart", time.Since(restarted).Seconds())
	srv.stop()

	db := openData(t, dir)
	ctx := context.Background()
	r, err := db.RentalByID(ctx, rental.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Status) != final {
		t.Errorf("status %q after shutdown, the API said %q", r.Status, final)
	}
	held := heldGPUs(t, db, r.ID)
	launched := countTasks(t, db, r.ID, "launch", true)
	stops := countTasks(t, db, r.ID, "stop", false)
	var charged int64
	if err := db.R.Model(&ledger.LedgerTxn{}).Where("rental_id = ?", r.ID).Count(&charged).Error; err != nil {
		t.Fatal(err)
	}
	switch r.Status {
	case models.RentalRunning:
		if launched != 1 {
			t.Errorf("running with %d successful launches, want exactly 1", launched)
		}
		if n := countEvents(t, db, r.ID, "running"); n != 1 {
			t.Errorf("%d 'running' events, want 1", n)
		}
		if len(held) != r.GPUs {
			t.Errorf("running rental holds %d GPUs, rented %d", len(held), r.GPUs)
		}
		// Aborts go to nodes the rental left; a stop sent to the node it
		// runs on would end the renter's workload under a running rental.
		var stopsHere int64
		if err := db.R.Model(&models.AgentTask{}).Where("rental_id = ? AND kind = ? AND node_id = ?", r.ID, "stop", r.NodeID).Count(&stopsHere).Error; err != nil {
			t.Fatal(err)
		}
		if stopsHere != 0 {
			t.Errorf("running rental's own node was sent %d stop tasks", stopsHere)
		}
	case models.RentalFailed:
		if charged != 0 || r.BilledFen != 0 {
			t.Errorf("failed rental charged: %d ledger transactions, billed %d fen", charged, r.BilledFen)
		}
		if len(held) != 0 {
			t.Errorf("failed rental still holds GPUs %v", held)
		}
		if launched > stops {
			t.Errorf("failed rental launched %d times and stopped %d: a workload is left running", launched, stops)
		}
	default:
		t.Errorf("rental %s", r.Status)
	}
	// No GPU in two live rentals, none held by a settled one, and the busy
	// GPUs are exactly those busy before plus those the rental holds.
	var shared, stale int64
	if err := db.R.Raw(`SELECT COUNT(*) FROM (SELECT rg.gpu_id FROM rental_gpus rg JOIN rentals r ON r.id = rg.rental_id
		WHERE rg.released_at IS NULL AND r.status IN ? GROUP BY rg.gpu_id HAVING COUNT(*) > 1) x`, models.LiveRentalStatuses).Scan(&shared).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.R.Raw(`SELECT COUNT(*) FROM rental_gpus rg JOIN rentals r ON r.id = rg.rental_id
		WHERE rg.released_at IS NULL AND r.status NOT IN ?`, models.LiveRentalStatuses).Scan(&stale).Error; err != nil {
		t.Fatal(err)
	}
	if shared != 0 || stale != 0 {
		t.Errorf("%d GPUs in two live rentals, %d held by settled rentals", shared, stale)
	}
	want := slices.Sorted(slices.Values(append(slices.Clone(busyBefore), held...)))
	if got := busyGPUs(t, dir); !slices.Equal(got, want) {
		t.Errorf("busy GPUs %v, want those busy before the rent plus the rental's %v", got, held)
	}
	// Money: the ledger balances, and the wallet paid exactly what the
	// rental was billed (nothing, unless it ran through a meter pass).
	problems, err := ledger.LedgerCheck(ctx, db)
	if err != nil || len(problems) > 0 {
		t.Errorf("ledger: %v %v", problems, err)
	}
	orgs, err := db.OrgsOfUser(ctx, r.UserID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("renter's organisations: %v", err)
	}
	if bal, _ := ledger.WalletBalance(ctx, db, orgs[0].Org.ID); bal != creditFen-r.BilledFen {
		t.Errorf("wallet %d fen after a rental billed %d, want %d", bal, r.BilledFen, creditFen-r.BilledFen)
	}
}

// buildSuanli builds the binary once for the test.
func buildSuanli(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "suanli")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// suanliServer is `suanli serve --demo` on a data directory, restartable.
type suanliServer struct {
	t              *testing.T
	bin, dir, addr string
	cmd            *exec.Cmd
	exited         chan error
	starts         int
	// lastRead and lastWrite are when api last sent a request of each
	// class, to pace them (see apiReadGap).
	lastRead, lastWrite time.Time
	// reads is the test's own handle on the data directory's database,
	// opened once (see data).
	reads *models.DB
	// extraEnv is added to every process's environment (see env).
	extraEnv []string
}

// data returns the test's read handle on the server's database, opening
// it the first time: the waits that catch a kill point within
// milliseconds open it before the rent request, not inside the window.
func (s *suanliServer) data() *models.DB {
	if s.reads == nil {
		s.reads = openData(s.t, s.dir)
	}
	return s.reads
}

// The server runs with its default per-token API limits (20 reads and 5
// writes per second, bursts of twice as many). The test's requests keep
// at least these gaps, half the limits, so that it never meets them: a
// 429 can only mean the limiter is wrong.
const (
	apiReadGap  = 100 * time.Millisecond
	apiWriteGap = 400 * time.Millisecond
)

// env is the process environment without any database or suanli setting
// of the caller (the embedded SQLite under --data-dir is what is tested),
// and with the shortest job rescue the configuration allows.
func (s *suanliServer) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "SUANLI_") && !strings.HasPrefix(kv, "SMTP_URL=") && !strings.HasPrefix(kv, "STRIPE_") {
			env = append(env, kv)
		}
	}
	return append(append(env, "SUANLI_JOB_RESCUE_AFTER=40s"), s.extraEnv...)
}

func (s *suanliServer) logPath() string { return filepath.Join(s.dir, "serve.log") }

// start runs serve and waits until it is ready.
func (s *suanliServer) start() {
	t := s.t
	t.Helper()
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s.starts++
	fmt.Fprintf(logf, "===== start %d\n", s.starts)
	s.cmd = exec.Command(s.bin, "serve", "--demo", "--addr", s.addr, "--data-dir", s.dir)
	s.cmd.Env = s.env()
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	s.exited = exited
	go func() { exited <- s.cmd.Wait(); logf.Close() }()
	if s.starts == 1 {
		t.Cleanup(func() {
			if s.cmd != nil && s.cmd.ProcessState == nil {
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
			if t.Failed() {
				s.dumpLog()
			}
		})
	}
	deadline := time.Now().Add(2 * time.Minute) // migrating and seeding the demo, on a busy machine
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			s.cmd = nil
			t.Fatalf("serve exited while starting: %v", err)
		default:
		}
		if res, err := http.Get("http://" + s.addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("serve not ready within 2 minutes")
}

// kill ends the server with SIGKILL: no shutdown code runs.
func (s *suanliServer) kill() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	<-s.exited
	s.cmd = nil
}

// stop shuts the server down in order (SIGTERM) and checks it exits cleanly.
func (s *suanliServer) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Errorf("serve after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.t.Error("serve did not stop within 60s of SIGTERM")
	}
	s.cmd = nil
}

func (s *suanliServer) dumpLog() {
	b, _ := os.ReadFile(s.logPath())
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var keep []string
	for _, l := range lines {
		// Access lines and the agents' greetings drown what matters.
		if !strings.Contains(l, "msg=http ") && !strings.Contains(l, `msg="agent starting"`) {
			keep = append(keep, l)
		}
	}
	s.t.Logf("serve log (without access lines), last 80 lines:\n%s", strings.Join(keep[max(0, len(keep)-80):], "\n"))
}

// admin runs an admin subcommand on the server's data directory, beside
// the running server, and returns its standard output.
func (s *suanliServer) admin(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(s.bin, append(append([]string{"admin"}, args...), "--data-dir", s.dir)...)
	cmd.Env = s.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("admin %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// renter creates a verified user with a funded personal wallet, as an
// operator would, and returns an API token for it.
func (s *suanliServer) renter(email string) string {
	pw := filepath.Join(s.dir, "pw")
	if err := os.WriteFile(pw, []byte("renter-pass-2026\n"), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.admin("create-user", "--email", email, "--password-file", pw)
	token := strings.TrimSpace(s.admin("token", "--email", email, "--name", "crash-test"))
	s.admin("credit", "--email", email, "--fen", fmt.Sprint(creditFen), "--reason", "crash test")
	return token
}

// apiRental is the part of the API's rental the test reads.
type apiRental struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
	Events []struct {
		Kind string `json:"kind"`
	} `json:"events"`
}

// api makes one API request, first waiting out the gap since the last
// one of its class.
func (s *suanliServer) api(method, path, token string, body any) (int, []byte, error) {
	last, gap := &s.lastRead, apiReadGap
	if method != http.MethodGet && method != http.MethodHead {
		last, gap = &s.lastWrite, apiWriteGap
	}
	if wait := time.Until(last.Add(gap)); wait > 0 {
		time.Sleep(wait)
	}
	*last = time.Now()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+s.addr+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// rentOneGPU rents one GPU of an offer with free GPUs. Until the demo
// agents' first heartbeats mark their nodes healthy, renting answers 409;
// it retries (at api's pace) for up to two minutes.
func (s *suanliServer) rentOneGPU(token string) apiRental {
	t := s.t
	t.Helper()
	_, b, err := s.api("GET", "/api/v1/offers?available=1&sort=price", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Offers []struct {
			ID            int64 `json:"id"`
			AvailableGPUs int   `json:"available_gpus"`
		} `json:"offers"`
	}
	if err := json.Unmarshal(b, &list); err != nil || len(list.Offers) == 0 {
		t.Fatalf("offers with free GPUs: %v %s", err, b)
	}
	key := sshKey(t)
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		o := list.Offers[i%len(list.Offers)]
		code, b, err := s.api("POST", "/api/v1/rentals", token, map[string]any{"offer_id": o.ID, "gpus": 1, "sla": "standard", "ssh_public_key": key})
		if err != nil {
			t.Fatal(err)
		}
		switch code {
		case http.StatusCreated:
			var r apiRental
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			return r
		case http.StatusConflict:
		default:
			t.Fatalf("rent: %d %s", code, b)
		}
	}
	t.Fatal("no offer could be rented within two minutes (demo agents not connected?)")
	return apiRental{}
}

// waitStatus reads the rental's status from the database as fast as it
// answers (not through the API, whose per-token limit such polling would
// meet) until it shows the status (or has passed it: then the kill comes
// later than meant, and the log says so).
func (s *suanliServer) waitStatus(id int64, status string) {
	t := s.t
	t.Helper()
	db := s.data()
	q, err := db.ReadSQL.Prepare(`SELECT status FROM rentals WHERE id = ?`)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var st string
		if err := q.QueryRow(id).Scan(&st); err != nil {
			t.Fatalf("rental %d: %v", id, err)
		}
		if st == status {
			return
		}
		if st != string(models.RentalPending) {
			t.Logf("rental %d went %s before it was seen %s", id, st, status)
			return
		}
	}
	t.Fatalf("rental %d never %s", id, status)
}

// waitTaskSent reads the database as fast as it answers until the
// rental's task of the kind was handed to the agent and has no result yet
// (or has one: then the kill comes later than meant, and the log says so).
func (s *suanliServer) waitTaskSent(id int64, kind string) {
	t := s.t
	t.Helper()
	db := s.data()
	// The window is a few milliseconds: a prepared statement, no gorm.
	q, err := db.ReadSQL.Prepare(`SELECT status FROM agent_tasks WHERE rental_id = ? AND kind = ? ORDER BY id LIMIT 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var st string
		err := q.QueryRow(id, kind).Scan(&st)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			t.Fatal(err)
		case st == models.TaskSent:
			return
		case st == models.TaskDone:
			t.Logf("the %s task of rental %d was done before it was seen sent", kind, id)
			return
		}
	}
	t.Fatalf("rental %d: no %s task sent within 30s", id, kind)
}

// waitSettled polls the rental until it is running or failed, and logs
// each status it passes through.
func (s *suanliServer) waitSettled(token string, id int64, deadline time.Time) string {
	t := s.t
	t.Helper()
	last := ""
	for time.Now().Before(deadline) {
		code, b, err := s.api("GET", fmt.Sprintf("/api/v1/rentals/%d", id), token, nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("rental %d: %d %v %s", id, code, err, b)
		}
		var r apiRental
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Status != last {
			var kinds []string
			for _, e := range r.Events {
				kinds = append(kinds, e.Kind)
			}
			t.Logf("after the restart: %s (events %v)", r.Status, kinds)
			last = r.Status
		}
		switch models.RentalStatus(r.Status) {
		case models.RentalRunning, models.RentalFailed:
			return r.Status
		case models.RentalPending, models.RentalProvisioning:
		default:
			t.Fatalf("rental %d went %s", id, r.Status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("rental %d stuck %s after the restart", id, last)
	return ""
}

// waitJobsFinal waits until no provisioning job is left to run (the test
// has only its own rental's) and checks none was discarded.
func (s *suanliServer) waitJobsFinal(deadline time.Time) {
	t := s.t
	t.Helper()
	db := openData(t, s.dir)
	for {
		var states []struct {
			State string
			N     int
		}
		if err := db.R.Raw(`SELECT state, COUNT(*) AS n FROM river_job WHERE kind = 'provision_rental' GROUP BY state`).Scan(&states).Error; err != nil {
			t.Fatal(err)
		}
		open := false
		for _, st := range states {
			switch st.State {
			case "completed", "cancelled":
			case "discarded":
				t.Errorf("%d provisioning jobs discarded", st.N)
			default:
				open = true
			}
		}
		if !open {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("provisioning jobs never finished: %+v", states)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// openData opens the server's SQLite file (beside a running server, or
// after it stopped); the test only reads through it.
func openData(t *testing.T, dir string) *models.DB {
	t.Helper()
	db, err := models.Open(context.Background(), "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// snapshot describes the rental and its work as the kill left them.
func snapshot(t *testing.T, dir string, id int64) string {
	t.Helper()
	db, err := models.Open(context.Background(), "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.RentalByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []models.AgentTask
	if err := db.R.Where("rental_id = ?", id).Order("id").Find(&tasks).Error; err != nil {
		t.Fatal(err)
	}
	var jobs []string
	if err := db.R.Raw(`SELECT state FROM river_job WHERE kind = 'provision_rental' ORDER BY id`).Scan(&jobs).Error; err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "status %s; provisioning job %v; agent tasks", r.Status, jobs)
	for _, tk := range tasks {
		fmt.Fprintf(&b, " %s:%s", tk.Kind, tk.Status)
	}
	if len(tasks) == 0 {
		b.WriteString(" none")
	}
	return b.String()
}

// busyGPUs lists the ids of every GPU in state busy.
func busyGPUs(t *testing.T, dir string) []int64 {
	t.Helper()
	db, err := models.Open(context.Background(), "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []int64
	if err := db.R.Model(&models.GPU{}).Where("state = ?", models.GPUBusy).Order("id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return ids
}

// heldGPUs lists the GPUs a rental holds now.
func heldGPUs(t *testing.T, db *models.DB, rentalID int64) []int64 {
	t.Helper()
	var ids []int64
	if err := db.R.Model(&models.RentalGPU{}).Where("rental_id = ? AND released_at IS NULL", rentalID).Pluck("gpu_id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return ids
}

// countTasks counts a rental's agent tasks of a kind; with done, only
// those the agent reported as successful.
func countTasks(t *testing.T, db *models.DB, rentalID int64, kind string, done bool) int64 {
	t.Helper()
	q := db.R.Model(&models.AgentTask{}).Where("rental_id = ? AND kind = ?", rentalID, kind)
	if done {
		q = q.Where("status = ? AND ok = ?", models.TaskDone, true)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func countEvents(t *testing.T, db *models.DB, rentalID int64, kind string) int64 {
	t.Helper()
	var n int64
	if err := db.R.Model(&models.RentalEvent{}).Where("rental_id = ? AND kind = ?", rentalID, kind).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// sshKey is a fresh OpenSSH public key line.
func sshKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}
