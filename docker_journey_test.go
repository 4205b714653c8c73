package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"golang.org/x/crypto/ssh"

	"suanli/dockertest"
)

// The renter's whole path on real processes and real containers: `suanli
// serve` (SQLite, a fresh data directory) and two `suanli agent --simulate
// rtx-4090 --launcher docker` processes, the two nodes of one
// shared-storage datacentre, both with the same --volume-root. Everything
// the renter and the provider do goes through the HTTP API: rent with the
// catalogue's debian-sshd image and a new volume; log in over SSH with the
// renter's key at the access details the API gives and write
// /workspace/f; the first agent stops (SIGSTOP: the node goes silent, its
// container left running as on a host cut off the network) and the
// rental moves to the second node, where the file is; stop (the
// container is gone, the volume is listed and the GPUs no longer bill);
// start (the same file); release with the volume (its directory is gone
// under the volume root and nothing bills after, wallet included).
//
// The server's silence window is its default 30 s (there is no setting
// for it), so the move takes about 35 s of the test's minute or two.
//
// The node's failure within the rental's first 10 minutes makes the whole
// rental free (the SLA), so what is billed is storage: a volume of
// volumeGB at ¥10 a GB-month, about 0.8 fen a second, which the meter
// (every second here) shows within seconds.
func TestRenterJourneyOnRealContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real containers for a minute or two")
	}
	dockerHost := dockertest.Require(t)
	if img := dockertest.Image(t); img != dockertest.DefaultSSHDImage {
		// A skip would pass silently under CI: the catalogue's debian-sshd
		// is suanli-test/sshd:bookworm, the image the daemon must have.
		t.Fatalf("the catalogue's debian-sshd image is %s, the daemon has %s", dockertest.DefaultSSHDImage, img)
	}
	cli := dockertest.Client(t)
	began := time.Now()
	phase := began
	lap := func(what string) {
		t.Logf("%-44s %6.1fs", what, time.Since(phase).Seconds())
		phase = time.Now()
	}

	bin := buildSuanli(t)
	lap("build")
	dir, root := t.TempDir(), t.TempDir()
	ns := testNamespace(t)
	removeNamespace(t, cli, ns)
	base1, base2 := freePortBases(t)
	srv := &suanliServer{t: t, bin: bin, dir: dir, addr: freeAddr(t), extraEnv: []string{"SUANLI_METER_EVERY=1s"}}

	// A verified provider and a funded renter, made by the operator.
	pw := filepath.Join(dir, "provider-pw")
	if err := os.WriteFile(pw, []byte("provider-pass-2026\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.admin("create-user", "--email", "ops@shared-storage.example", "--password-file", pw, "--provider", "Shared Storage GPU Co", "--simulated")
	provider := strings.TrimSpace(srv.admin("token", "--email", "ops@shared-storage.example", "--name", "journey"))
	renter := srv.renter("renter@shared-storage.example")
	startPlainServe(srv)
	lap("serve ready")

	j := &journey{t: t, srv: srv}
	var dc struct {
		ID      int64  `json:"id"`
		Storage string `json:"storage"`
	}
	j.must(201, "POST", "/api/v1/provider/datacenters", provider,
		map[string]any{"name": "共享存储机房", "city": "chengdu", "district": "天府新区", "storage": "shared"}, &dc)
	if dc.Storage != "shared" {
		t.Fatalf("the datacentre's storage is %q, want shared", dc.Storage)
	}
	nodes := make([]int64, 2)
	agents := make([]*exec.Cmd, 2)
	for i, base := range []int{base1, base2} {
		var n struct {
			ID    int64  `json:"id"`
			Token string `json:"token"`
		}
		j.must(201, "POST", "/api/v1/provider/nodes", provider, map[string]any{"datacenter_id": dc.ID, "name": fmt.Sprintf("shared-%d", i+1)}, &n)
		nodes[i] = n.ID
		agents[i] = j.startAgent(fmt.Sprintf("agent-%d", i+1), n.Token, dockerHost, root, fmt.Sprintf("%s-%d", ns, i+1), base)
	}
	for _, id := range nodes {
		j.waitNodeHealthy(provider, id, 2)
	}
	lap("both agents healthy")
	offers := make([]int64, 2)
	for i, id := range nodes {
		var o struct {
			ID int64 `json:"id"`
		}
		j.must(201, "POST", "/api/v1/provider/offers", provider, map[string]any{"node_id": id, "gpu": "rtx-4090", "gpus": 2,
			"price_per_gpu_hour_fen": 300, "disk_gb": volumeGB, "storage_price_per_gb_month_fen": 1000, "images": []string{"debian-sshd"}}, &o)
		offers[i] = o.ID
	}

	// Rent one GPU with the image and a new volume.
	key, signer := dockertest.RenterKey(t, "renter@journey")
	rented := time.Now()
	id := j.rent(renter, map[string]any{"offer_id": offers[0], "gpus": 1, "sla": "standard", "ssh_public_key": key,
		"image": "debian-sshd", "volume_gb": volumeGB})
	r := j.waitRental(renter, id, "running on the first node", 2*time.Minute, func(r journeyRental) bool { return r.Status == "running" })
	lap("rent → running")
	if r.Node == nil || r.Node.ID != nodes[0] || r.Image != dockertest.DefaultSSHDImage || r.Volume == nil || r.Volume.SizeGB != volumeGB || r.Volume.Storage != "shared" {
		t.Fatalf("the running rental: node %+v, image %q, volume %+v; want node %d, debian-sshd's %s and a %d GB shared volume", r.Node, r.Image, r.Volume, nodes[0], dockertest.DefaultSSHDImage, volumeGB)
	}
	acc := r.ssh(t)
	if acc.Host != "127.0.0.1" || acc.User != "root" || acc.Port != base1+int(id%10000) || acc.Command != fmt.Sprintf("ssh -p %d root@127.0.0.1", acc.Port) {
		t.Fatalf("access.ssh %+v, want root@127.0.0.1 on port %d and its ssh command", acc, base1+int(id%10000))
	}
	content := "written on node 1 at " + time.Now().Format(time.RFC3339Nano)
	sshMust(t, acc, signer, "echo '"+content+"' > /workspace/f")
	t.Logf("rent → first SSH login and write        %6.1fs", time.Since(rented).Seconds())
	if got := sshMust(t, acc, signer, "id -un; cat /etc/debian_version"); !strings.HasPrefix(got, "root\n12") {
		t.Errorf("logged in as %q, want root on Debian 12", got)
	}
	wsDir := onlyEntry(t, root)
	if b, err := os.ReadFile(filepath.Join(wsDir, "f")); err != nil || string(b) != content+"\n" {
		t.Fatalf("the file under the volume root: %q %v", b, err)
	}

	// The first node goes silent: the rental moves to the second, and the
	// file with it.
	if err := agents[0].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	phase = time.Now()
	r = j.waitRental(renter, id, "running on the second node", 3*time.Minute, func(r journeyRental) bool {
		return r.Status == "running" && r.Node != nil && r.Node.ID == nodes[1]
	})
	lap("silence → running on the second node")
	moved := r.ssh(t)
	if moved.Port != base2+int(id%10000) || moved.Host != "127.0.0.1" {
		t.Fatalf("after the move access.ssh is %+v, want port %d", moved, base2+int(id%10000))
	}
	if got := sshMust(t, moved, signer, "cat /workspace/f"); got != content+"\n" {
		t.Fatalf("on the second node /workspace/f is %q, want %q", got, content)
	}
	volumeID := r.Volume.ID
	if !r.Free {
		t.Errorf("a rental whose node went silent within its first 10 minutes is not free")
	}
	if r.Volume.NodeID == nil || *r.Volume.NodeID != nodes[1] {
		t.Errorf("after the move the volume is on node %v, want %d", r.Volume.NodeID, nodes[1])
	}
	second := fmt.Sprintf("suanli-%s-2-r%d", ns, id)
	if _, err := cli.ContainerInspect(context.Background(), second); err != nil {
		t.Fatalf("the second node's container %s: %v", second, err)
	}

	// Stop: the container is gone, the volume kept, GPU time no longer billed.
	j.must(200, "POST", fmt.Sprintf("/api/v1/rentals/%d/stop", id), renter, nil, nil)
	r = j.waitRental(renter, id, "stopped", time.Minute, func(r journeyRental) bool { return r.Status == "stopped" })
	lap("stop → stopped")
	if _, err := cli.ContainerInspect(context.Background(), second); !cerrdefs.IsNotFound(err) {
		t.Errorf("after the stop the container %s: %v, want not found", second, err)
	}
	if v := j.volume(renter, volumeID); v == nil || v.Status != "active" || v.Storage != "shared" {
		t.Errorf("GET /api/v1/volumes after the stop: volume %d is %+v, want active and shared", volumeID, v)
	}
	// The storage meter goes on (a fen every second or so), GPU time does not.
	gpuBilled, storageBilled := r.BilledFen, j.volume(renter, volumeID).BilledFen
	deadline := time.Now().Add(time.Minute)
	for j.volume(renter, volumeID).BilledFen <= storageBilled {
		if time.Now().After(deadline) {
			t.Fatalf("the stopped rental's volume was not billed in a minute (still %d fen)", storageBilled)
		}
	}
	j.waitMeterPasses(1)
	if got := j.rental(renter, id).BilledFen; got != gpuBilled {
		t.Errorf("stopped, the rental billed on: %d → %d fen", gpuBilled, got)
	}

	// Start again: the same file.
	started := time.Now()
	j.must(200, "POST", fmt.Sprintf("/api/v1/rentals/%d/start", id), renter, nil, nil)
	r = j.waitRental(renter, id, "running again", 2*time.Minute, func(r journeyRental) bool { return r.Status == "running" })
	if got := sshMust(t, r.ssh(t), signer, "cat /workspace/f"); got != content+"\n" {
		t.Fatalf("after the start /workspace/f is %q, want %q", got, content)
	}
	t.Logf("start → running and the file read        %6.1fs", time.Since(started).Seconds())
	phase = time.Now()

	// Release with the volume: its directory goes, and nothing bills after.
	j.must(200, "POST", fmt.Sprintf("/api/v1/rentals/%d/release", id), renter, map[string]any{"delete_volume": true}, nil)
	dockertest.Eventually(t, time.Minute, "the volume's directory "+wsDir+" goes after the release", func() (bool, string) {
		_, err := os.Stat(wsDir)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	r = j.waitRental(renter, id, "released", time.Minute, func(r journeyRental) bool { return r.Status == "released" && r.ReleasedAt != nil })
	lap("release → volume directory gone")
	// The deleted volume leaves the list; the rental still names it.
	deadline = time.Now().Add(time.Minute)
	for v := j.volume(renter, volumeID); v != nil; v = j.volume(renter, volumeID) {
		if time.Now().After(deadline) {
			t.Fatalf("volume %d is still listed (%s) a minute after its files were deleted", volumeID, v.Status)
		}
	}
	r = j.rental(renter, id)
	if r.Volume == nil || r.Volume.ID != volumeID || r.Volume.Status != "deleted" || r.Volume.BilledFen <= storageBilled {
		t.Fatalf("the released rental's volume: %+v, want volume %d deleted, billed more than %d fen", r.Volume, volumeID, storageBilled)
	}
	if containers := namespaceContainers(t, cli, fmt.Sprintf("%s-2", ns)); len(containers) != 0 {
		t.Errorf("the second node still has containers after the release: %v", containers)
	}
	balance := j.balance(renter)
	spent := r.BilledFen + r.Volume.BilledFen
	if balance != creditFen-spent {
		t.Errorf("wallet %d fen after GPU and storage billed %d, want %d", balance, spent, creditFen-spent)
	}
	j.waitMeterPasses(2)
	if got := j.balance(renter); got != balance {
		t.Errorf("the wallet moved after the release: %d → %d fen", balance, got)
	}
	if after := j.rental(renter, id); after.BilledFen != r.BilledFen || after.Volume == nil || after.Volume.BilledFen != r.Volume.BilledFen {
		t.Errorf("billed on after the release: rental %d → %d fen, volume %d → %+v", r.BilledFen, after.BilledFen, r.Volume.BilledFen, after.Volume)
	}
	lap("nothing billed after the release")
	t.Logf("whole journey %.1fs; rental %d billed %d fen of GPU time, volume %d fen", time.Since(began).Seconds(), id, r.BilledFen, spent-r.BilledFen)
	srv.stop()
}

// volumeGB is the journey's volume size (see TestRenterJourneyOnRealContainers).
const volumeGB = 2000

// journey is a renter's and a provider's session with the API of one
// server (paced as suanliServer.api paces).
type journey struct {
	t   *testing.T
	srv *suanliServer
	// meterSeen is how many meter passes the last waitMeterPasses saw.
	meterSeen int64
}

// journeyRental is the part of GET /api/v1/rentals/{id} the journey reads.
type journeyRental struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
	Image  string `json:"image"`
	Node   *struct {
		ID int64 `json:"id"`
	} `json:"node"`
	Volume *struct {
		ID        int64  `json:"id"`
		SizeGB    int    `json:"size_gb"`
		Storage   string `json:"storage"`
		NodeID    *int64 `json:"node_id"`
		Status    string `json:"status"`
		BilledFen int64  `json:"billed_fen"`
	} `json:"volume"`
	Access *struct {
		SSH journeySSH `json:"ssh"`
	} `json:"access"`
	BilledFen  int64      `json:"billed_fen"`
	Free       bool       `json:"free"`
	ReleasedAt *time.Time `json:"released_at"`
	Failure    string     `json:"failure"`
	Events     []struct {
		Kind   string `json:"kind"`
		Detail string `json:"detail"`
	} `json:"events"`
}

// journeySSH is access.ssh.
type journeySSH struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	User    string `json:"user"`
	Command string `json:"command"`
}

// ssh returns the rental's access.ssh, failing the test when there is none.
func (r journeyRental) ssh(t *testing.T) journeySSH {
	t.Helper()
	if r.Access == nil || r.Access.SSH.Port == 0 {
		t.Fatalf("rental %d (%s) has no access.ssh", r.ID, r.Status)
	}
	return r.Access.SSH
}

// journeyVolume is a volume of GET /api/v1/volumes.
type journeyVolume struct {
	ID        int64  `json:"id"`
	Status    string `json:"status"`
	Storage   string `json:"storage"`
	BilledFen int64  `json:"billed_fen"`
}

// call makes one API request and decodes a JSON answer into into.
func (j *journey) call(method, path, token string, body, into any) (int, string) {
	j.t.Helper()
	st, b, err := j.srv.api(method, path, token, body)
	if err != nil {
		j.t.Fatalf("%s %s: %v", method, path, err)
	}
	if into != nil && st < 300 {
		if err := json.Unmarshal(b, into); err != nil {
			j.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return st, string(b)
}

// must is call that fails the test unless the status is want.
func (j *journey) must(want int, method, path, token string, body, into any) {
	j.t.Helper()
	if st, b := j.call(method, path, token, body, into); st != want {
		j.t.Fatalf("%s %s: %d, want %d: %s", method, path, st, want, b)
	}
}

// startAgent runs `suanli agent` for a node with the docker launcher on
// the test daemon, simulated RTX 4090s (real containers without GPUs),
// its SSH ports from base on 127.0.0.1, its containers named in ns.
func (j *journey) startAgent(name, token, dockerHost, root, ns string, base int) *exec.Cmd {
	t := j.t
	t.Helper()
	logPath := filepath.Join(j.srv.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(j.srv.bin, "agent", "--server", "http://"+j.srv.addr, "--token", token,
		"--state-file", filepath.Join(j.srv.dir, name+".json"), "--simulate", "rtx-4090", "--gpus", "2",
		"--launcher", "docker", "--docker-host", dockerHost, "--volume-root", root, "--docker-namespace", ns,
		"--port-base", strconv.Itoa(base), "--public-host", "127.0.0.1", "--bench-python", "/nonexistent/python3")
	cmd.Env = j.srv.env()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a stopped (SIGSTOP) process dies too
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			t.Logf("%s log, last 40 lines:\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	return cmd
}

// waitNodeHealthy waits until the provider API shows the node healthy
// with gpus healthy GPUs.
func (j *journey) waitNodeHealthy(provider string, id int64, gpus int) {
	j.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n struct {
			Health string `json:"health"`
			GPUs   []struct {
				Health string `json:"health"`
			} `json:"gpus"`
		}
		st, b := j.call("GET", fmt.Sprintf("/api/v1/provider/nodes/%d", id), provider, nil, &n)
		healthy := 0
		for _, g := range n.GPUs {
			if g.Health == "healthy" {
				healthy++
			}
		}
		if st == 200 && n.Health == "healthy" && healthy == gpus {
			return
		}
		if time.Now().After(deadline) {
			j.t.Fatalf("node %d not healthy with %d GPUs in two minutes: %d %s", id, gpus, st, b)
		}
	}
}

// rent asks for a rental until the offer can take it (a 409 while the
// offer's free GPUs are not yet known) and returns its id.
func (j *journey) rent(token string, body map[string]any) int64 {
	j.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var r journeyRental
		st, b := j.call("POST", "/api/v1/rentals", token, body, &r)
		if st == http.StatusCreated {
			return r.ID
		}
		if st != http.StatusConflict || time.Now().After(deadline) {
			j.t.Fatalf("rent: %d %s", st, b)
		}
	}
}

// rental is GET /api/v1/rentals/{id}.
func (j *journey) rental(token string, id int64) journeyRental {
	j.t.Helper()
	var r journeyRental
	j.must(200, "GET", fmt.Sprintf("/api/v1/rentals/%d", id), token, nil, &r)
	return r
}

// waitRental polls the rental until cond holds; a failed rental, or one
// that takes longer than limit, fails the test with its events.
func (j *journey) waitRental(token string, id int64, what string, limit time.Duration, cond func(journeyRental) bool) journeyRental {
	j.t.Helper()
	deadline := time.Now().Add(limit)
	last := ""
	for {
		r := j.rental(token, id)
		if r.Status != last {
			j.t.Logf("rental %d: %s", id, r.Status)
			last = r.Status
		}
		if cond(r) {
			return r
		}
		if r.Status == "failed" || time.Now().After(deadline) {
			var evs []string
			for _, e := range r.Events {
				evs = append(evs, e.Kind+": "+e.Detail)
			}
			j.t.Fatalf("rental %d never %s (now %s, failure %q); events:\n%s", id, what, r.Status, r.Failure, strings.Join(evs, "\n"))
		}
	}
}

// volume is the volume of GET /api/v1/volumes with that id (nil if not listed).
func (j *journey) volume(token string, id int64) *journeyVolume {
	j.t.Helper()
	var list struct {
		Volumes []journeyVolume `json:"volumes"`
	}
	j.must(200, "GET", "/api/v1/volumes", token, nil, &list)
	for i := range list.Volumes {
		if list.Volumes[i].ID == id {
			return &list.Volumes[i]
		}
	}
	return nil
}

// balance is the wallet's balance in fen (GET /api/v1/wallet).
func (j *journey) balance(token string) int64 {
	j.t.Helper()
	var w struct {
		BalanceFen int64 `json:"balance_fen"`
	}
	j.must(200, "GET", "/api/v1/wallet", token, nil, &w)
	return w.BalanceFen
}

// waitMeterPasses waits until the workers have finished n more meter
// passes than when it last returned (read from the queue's table: the API
// does not show them), so that "nothing was billed" is checked after the
// meter had its chances, not after a guessed pause.
func (j *journey) waitMeterPasses(n int64) {
	j.t.Helper()
	db := j.srv.data()
	count := func() int64 {
		var c int64
		if err := db.ReadSQL.QueryRow(`SELECT COUNT(*) FROM river_job WHERE kind = 'meter_rentals' AND state = 'completed'`).Scan(&c); err != nil {
			j.t.Fatal(err)
		}
		return c
	}
	from := max(j.meterSeen, count())
	dockertest.Eventually(j.t, time.Minute, fmt.Sprintf("%d meter passes (SUANLI_METER_EVERY=1s)", n), func() (bool, string) {
		c := count()
		j.meterSeen = max(j.meterSeen, c)
		return c >= from+n, fmt.Sprintf("%d of %d", c-from, n)
	})
}

// sshMust logs in at the access details with the renter's key, as the
// renter's ssh client would, and runs cmd. sshd may still be starting
// just after a launch, so the first login is retried for a few seconds.
func sshMust(t *testing.T, a journeySSH, signer ssh.Signer, cmd string) string {
	t.Helper()
	cfg := &ssh.ClientConfig{User: a.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		// A container's host key is new each launch: nothing to pin.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second}
	addr := net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	c, err := ssh.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("ssh %s@%s: %v", a.User, addr, err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("ssh %s %q: %v: %s", addr, cmd, err, out)
	}
	return string(out)
}

// onlyEntry is the one directory under dir (the only volume on a fresh
// volume root), as a path.
func onlyEntry(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil || len(es) != 1 || !es[0].IsDir() {
		t.Fatalf("want one workspace directory under the volume root %s, got %v (%v)", dir, es, err)
	}
	return filepath.Join(dir, es[0].Name())
}

// testNamespace is a --docker-namespace no other test run shares.
func testNamespace(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "journey" + hex.EncodeToString(b)
}

// namespaceContainers names the containers (any state) of agents whose
// --docker-namespace is ns or begins with ns.
func namespaceContainers(t *testing.T, cli *client.Client, ns string) []string {
	t.Helper()
	cs, err := cli.ContainerList(context.Background(), dockercontainer.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", "suanli-"+ns))})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		for _, n := range c.Names {
			if strings.HasPrefix(strings.TrimPrefix(n, "/"), "suanli-"+ns) {
				names = append(names, strings.TrimPrefix(n, "/"))
			}
		}
	}
	return names
}

// removeNamespace removes, when the test ends, every container of ns
// (the silent node's is still running then).
func removeNamespace(t *testing.T, cli *client.Client, ns string) {
	t.Helper()
	t.Cleanup(func() {
		for _, n := range namespaceContainers(t, cli, ns) {
			if err := cli.ContainerRemove(context.Background(), n, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("removing %s: %v", n, err)
			}
		}
	})
}

// freePortBases are two --port-base values 10000 apart whose first ports
// (rental ids 1 to 20 of a fresh database) are free now: the first from
// 10000–18999, the second 10000 above: apart from the browser journey's
// (30000–32767), the rentals package's docker test's (33000–49999) and
// the kernel's ephemeral ports (32768 up, where agent/docker's tests take
// theirs).
func freePortBases(t *testing.T) (int, int) {
	t.Helper()
	free := func(base int) bool {
		for id := 1; id <= 20; id++ {
			ln, err := net.Listen("tcp", ":"+strconv.Itoa(base+id))
			if err != nil {
				return false
			}
			ln.Close()
		}
		return true
	}
	for range 50 {
		n, err := rand.Int(rand.Reader, big.NewInt(9000))
		if err != nil {
			t.Fatal(err)
		}
		base := 10000 + int(n.Int64())
		if free(base) && free(base+10000) {
			return base, base + 10000
		}
	}
	t.Fatal("no two free SSH port bases found in 50 tries")
	return 0, 0
}
