package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"suanli/apiclient"
	"suanli/dockertest"
	"suanli/rentercli"
)

// The renter's command line end to end, on real processes and real
// containers: `suanli serve` (SQLite) and one `suanli agent --simulate
// rtx-4090 --launcher docker` node with two GPUs; the provider sets up
// through the API as in TestRenterJourneyOnRealContainers, and the
// renter does everything with the CLI, called in-process through
// rentercli.Run with its own HOME and XDG_CONFIG_HOME: login (the token
// from standard input), offers --json (decoded, strictly, into the
// generated client's types: the JSON is the API's), rent with the
// catalogue's debian-sshd image and a new volume (waiting, with the
// progress on standard error, until it runs), `ssh -- cat
// /etc/os-release` through the container's real sshd with the system
// ssh client, stop, start (ssh again: a new launch has new host keys),
// release with the volume. And the errors a script acts on: all GPUs
// taken (exit 5) and an empty wallet (exit 4), with their messages.
func TestRenterCLIJourney(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real containers for a minute or two")
	}
	dockerHost := dockertest.Require(t)
	if img := dockertest.Image(t); img != dockertest.DefaultSSHDImage {
		t.Fatalf("the catalogue's debian-sshd image is %s, the daemon has %s", dockertest.DefaultSSHDImage, img)
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the system ssh client is required under CI=true (Debian package openssh-client)")
		}
		t.Skip("no ssh client on PATH")
	}
	docker := dockertest.Client(t)
	bin := buildSuanli(t)
	dir, root := t.TempDir(), t.TempDir()
	ns := testNamespace(t)
	removeNamespace(t, docker, ns)
	base, _ := freePortBases(t)
	srv := &suanliServer{t: t, bin: bin, dir: dir, addr: freeAddr(t)}

	pw := filepath.Join(dir, "provider-pw")
	if err := os.WriteFile(pw, []byte("provider-pass-2026\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.admin("create-user", "--email", "ops@cli.example", "--password-file", pw, "--provider", "CLI GPU Co", "--simulated")
	provider := strings.TrimSpace(srv.admin("token", "--email", "ops@cli.example", "--name", "cli-journey"))
	renterToken := srv.renter("renter@cli.example")
	srv.admin("create-user", "--email", "broke@cli.example", "--password-file", pw)
	brokeToken := strings.TrimSpace(srv.admin("token", "--email", "broke@cli.example", "--name", "cli-journey"))
	startPlainServe(srv)

	j := &journey{t: t, srv: srv}
	var dc struct {
		ID int64 `json:"id"`
	}
	j.must(201, "POST", "/api/v1/provider/datacenters", provider, map[string]any{"name": "命令行机房", "city": "chengdu", "district": "高新区"}, &dc)
	var node struct {
		ID    int64  `json:"id"`
		Token string `json:"token"`
	}
	j.must(201, "POST", "/api/v1/provider/nodes", provider, map[string]any{"datacenter_id": dc.ID, "name": "cli-1"}, &node)
	j.startAgent("agent-cli", node.Token, dockerHost, root, ns, base)
	j.waitNodeHealthy(provider, node.ID, 2)
	var offer struct {
		ID int `json:"id"`
	}
	j.must(201, "POST", "/api/v1/provider/offers", provider, map[string]any{"node_id": node.ID, "gpu": "rtx-4090", "gpus": 2,
		"price_per_gpu_hour_fen": 300, "disk_gb": 100, "storage_price_per_gb_month_fen": 1000, "images": []string{"debian-sshd"}}, &offer)

	server := "http://" + srv.addr
	renter := newCLIUser(t, "renter")

	// login: the token from standard input (not a terminal: one line),
	// checked against the server, saved 0600 in a 0700 directory.
	out, errOut, code := renter.run(renterToken+"\n", "login", "--server", server)
	if code != 0 || !strings.Contains(out, "Logged in to "+server+" as renter@cli.example") {
		t.Fatalf("login: exit %d\n%s%s", code, out, errOut)
	}
	cfgDir := filepath.Join(renter.env["XDG_CONFIG_HOME"], "suanli")
	for path, want := range map[string]os.FileMode{cfgDir: 0o700, filepath.Join(cfgDir, "config.json"): 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %o", path, st.Mode(), err, want)
		}
	}
	// A wrong token is refused and not saved.
	if _, errOut, code := renter.run("not-a-token\n", "login", "--server", server); code != rentercli.ExitUnauthorised || !strings.Contains(errOut, "not authorised") {
		t.Errorf("login with a wrong token: exit %d, %q", code, errOut)
	}

	// offers --json is the API's OfferList; wait until the agent's free
	// GPUs are known (the offer shows both).
	var offers apiclient.OfferList
	dockertest.Eventually(t, time.Minute, "the offer shows 2 free GPUs", func() (bool, string) {
		out, errOut, code := renter.run("", "offers", "--gpu", "rtx-4090", "--json")
		if code != 0 {
			return false, errOut
		}
		offers = apiclient.OfferList{}
		decodeStrict(t, out, &offers)
		for _, o := range offers.Offers {
			if o.Id == offer.ID {
				return o.AvailableGpus == 2, fmt.Sprintf("%d free", o.AvailableGpus)
			}
		}
		return false, "the offer is not listed: " + out
	})
	out, _, code = renter.run("", "offers", "--city", "chengdu")
	if code != 0 || !regexp.MustCompile(`(?m)^`+strconv.Itoa(offer.ID)+` +(GeForce )?RTX 4090 +2 +24 GB +.*¥3\.00 +— +2 `).MatchString(out) {
		t.Errorf("offers table: exit %d\n%s", code, out)
	}

	// The instance types the offer serves.
	var types apiclient.InstanceTypeList
	decodeStrict(t, renter.must("types", "--json"), &types)
	var typeNames []string
	for _, it := range types.InstanceTypes {
		typeNames = append(typeNames, it.Name)
	}
	if strings.Join(typeNames, " ") != "rtx-4090.1x rtx-4090.2x" {
		t.Errorf("types: %v, want rtx-4090.1x and .2x", typeNames)
	}

	// rent: waits, with progress on standard error, then prints the ssh
	// command. With a name, labels, an environment and an on-start script
	// that prints a variable of it (the container's log shows it).
	marker := "env-" + testNamespace(t)
	onstart := filepath.Join(renter.env["HOME"], "onstart.sh")
	if err := os.WriteFile(onstart, []byte("#!/bin/sh\necho \"onstart saw $CLI_MARKER\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = renter.run("", "rent", strconv.Itoa(offer.ID), "--gpus", "1", "--image", "debian-sshd", "--volume-gb", "20",
		"--name", "trainer", "--label", "team=cv", "--label", "run=7", "--env", "CLI_MARKER="+marker, "--onstart", onstart)
	if code != 0 {
		t.Fatalf("rent: exit %d\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`Rental (\d+) is running: 1 × rtx-4090, ¥3\.00 an hour\.`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("rent's output:\n%s\nstderr:\n%s", out, errOut)
	}
	id := m[1]
	port := base + atoi(t, id)%10000
	if want := fmt.Sprintf("Log in: ssh -p %d root@127.0.0.1  (or: suanli ssh %s)", port, id); !strings.Contains(out, want) {
		t.Errorf("rent's output lacks %q:\n%s", want, out)
	}
	if !strings.Contains(errOut, "Rental "+id+" created") || !strings.Contains(errOut, "rental "+id+": ") {
		t.Errorf("rent's progress on standard error:\n%s", errOut)
	}

	// No capacity: one of the two GPUs is taken, two more cannot be had,
	// by offer (offer_taken) or by instance type (no_capacity).
	_, errOut, code = renter.run("", "rent", strconv.Itoa(offer.ID), "--gpus", "2", "--image", "debian-sshd", "--no-wait")
	if code != rentercli.ExitNoCapacity || !strings.Contains(errOut, "suanli: no capacity: ") {
		t.Errorf("renting more GPUs than are free: exit %d, %q; want 5 and the no-capacity message", code, errOut)
	}
	_, errOut, code = renter.run("", "rent", "rtx-4090.2x", "--image", "debian-sshd", "--no-wait")
	if code != rentercli.ExitNoCapacity || !strings.Contains(errOut, "suanli: no capacity: ") {
		t.Errorf("renting an instance type with no offer free: exit %d, %q; want 5 and the no-capacity message", code, errOut)
	}
	// By instance type where one is free: the cheapest offer serving it
	// (here the only one), then released at once.
	var byType apiclient.Rental
	decodeStrict(t, renter.must("rent", "rtx-4090.1x", "--city", "chengdu", "--max-price", "3", "--image", "debian-sshd", "--no-wait", "--json"), &byType)
	if byType.OfferId != offer.ID || byType.Gpus != 1 {
		t.Errorf("rent rtx-4090.1x: offer %d, %d GPUs; want offer %d, 1", byType.OfferId, byType.Gpus, offer.ID)
	}
	renter.must("release", strconv.Itoa(byType.Id), "--delete-volume")
	// No balance: another renter with an empty wallet (logged in by the
	// environment alone).
	broke := newCLIUser(t, "broke")
	broke.env["SUANLI_SERVER"], broke.env["SUANLI_TOKEN"] = server, brokeToken
	_, errOut, code = broke.run("", "rent", strconv.Itoa(offer.ID), "--gpus", "1", "--image", "debian-sshd", "--no-wait")
	if code != rentercli.ExitInsufficientFunds || !strings.Contains(errOut, "suanli: insufficient funds: ") {
		t.Errorf("renting with an empty wallet: exit %d, %q; want 4 and the insufficient-funds message", code, errOut)
	}
	_, errOut, code = broke.run("", "rent", strconv.Itoa(offer.ID), "--gpus", "1", "--image", "debian-sshd", "--no-wait", "--lang", "zh-CN")
	if code != rentercli.ExitInsufficientFunds || !strings.Contains(errOut, "suanli: 余额不足：") {
		t.Errorf("the same in Chinese: exit %d, %q", code, errOut)
	}

	// ssh through the container's real sshd with the system client.
	out = renter.sshEventually(id, "cat", "/etc/os-release")
	// The test image is Debian bookworm minbase (scripts/build-test-images.sh).
	if !strings.Contains(out, `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"`) {
		t.Errorf("cat /etc/os-release over suanli ssh:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(cfgDir, "known_hosts")); err != nil {
		t.Errorf("the CLI's known_hosts: %v", err)
	}
	if _, _, code := renter.run("", "ssh", id, "--", "exit 3"); code != 3 {
		t.Errorf("the remote command's exit status 3 came back as %d", code)
	}
	content := "written over suanli ssh at " + time.Now().Format(time.RFC3339Nano)
	if out, errOut, code := renter.run("", "ssh", id, "--", "echo '"+content+"' > /workspace/f"); code != 0 {
		t.Fatalf("writing /workspace/f: exit %d\n%s%s", code, out, errOut)
	}

	// logs: what the container printed (sshd logs to it; a line written
	// to PID 1's standard output is the workload's own output), then
	// followed: a line printed after the command started comes through.
	if _, errOut, code := renter.run("", "ssh", id, "--", "echo cli-log-marker-1 > /proc/1/fd/1"); code != 0 {
		t.Fatalf("printing to the container's output: exit %d %s", code, errOut)
	}
	dockertest.Eventually(t, 30*time.Second, "suanli logs shows the line and the on-start script's", func() (bool, string) {
		out, errOut, code := renter.run("", "logs", "trainer", "--tail", "50")
		return code == 0 && strings.Contains(out, "cli-log-marker-1\n") && strings.Contains(out, "onstart: onstart saw "+marker+"\n"), fmt.Sprint(code, out, errOut)
	})
	follow := renter.start("logs", id, "-f", "--tail", "1")
	if _, errOut, code := renter.run("", "ssh", id, "--", "echo cli-log-marker-2 > /proc/1/fd/1"); code != 0 {
		t.Fatalf("printing to the container's output: exit %d %s", code, errOut)
	}
	dockertest.Eventually(t, 30*time.Second, "suanli logs -f shows the new line", func() (bool, string) {
		out := follow.stdout()
		return strings.Contains(out, "cli-log-marker-2\n"), out
	})
	if code := follow.stop(); code != 0 {
		t.Errorf("logs -f ended by Ctrl-C: exit %d, want 0", code)
	}

	// The lists, as JSON in the API's shapes and as tables.
	var rentals apiclient.RentalList
	decodeStrict(t, renter.must("rentals", "--json"), &rentals)
	// The live one first, then the one rented by type and released.
	if len(rentals.Rentals) != 2 || strconv.Itoa(rentals.Rentals[0].Id) != id || rentals.Rentals[1].State != apiclient.RentalStateReleased {
		t.Fatalf("rentals --json: %d rentals", len(rentals.Rentals))
	}
	if r := rentals.Rentals[0]; r.State != apiclient.RentalStateRunning || r.Name != "trainer" || r.Labels["team"] != "cv" || r.Labels["run"] != "7" || !r.EnvSet || !r.OnstartSet ||
		r.Ssh == nil || r.Ssh.Port != port {
		t.Errorf("rentals --json: rental %d is %s, name %q, labels %v, env_set %v, onstart_set %v, ssh %+v", r.Id, r.State, r.Name, r.Labels, r.EnvSet, r.OnstartSet, r.Ssh)
	}
	for label, want := range map[string]int{"team=cv": 1, "run=8": 0} {
		rentals = apiclient.RentalList{}
		decodeStrict(t, renter.must("rentals", "--label", label, "--json"), &rentals)
		if len(rentals.Rentals) != want {
			t.Errorf("rentals --label %s: %d rentals, want %d", label, len(rentals.Rentals), want)
		}
	}
	if out := renter.must("rentals"); !regexp.MustCompile(`(?m)^` + id + ` +trainer +running +1 × rtx-4090 +` + regexp.QuoteMeta(dockertest.DefaultSSHDImage) + ` +127\.0\.0\.1:` + strconv.Itoa(port) + ` +¥3\.00 `).MatchString(out) {
		t.Errorf("rentals table:\n%s", out)
	}
	var volumes apiclient.VolumeList
	decodeStrict(t, renter.must("volumes", "--json"), &volumes)
	if len(volumes.Volumes) != 1 || volumes.Volumes[0].SizeGb != 20 || volumes.Volumes[0].RentalId == nil || strconv.Itoa(*volumes.Volumes[0].RentalId) != id {
		t.Errorf("volumes --json: %+v", volumes.Volumes)
	}
	var images apiclient.ImageList
	decodeStrict(t, renter.must("images", "--json"), &images)
	if !slices.ContainsFunc(images.Images, func(im apiclient.Image) bool { return im.Slug == "debian-sshd" }) {
		t.Errorf("images --json lacks debian-sshd: %+v", images.Images)
	}
	if !strings.Contains(renter.must("images"), "debian-sshd") {
		t.Errorf("images lacks debian-sshd")
	}
	var wallet apiclient.Wallet
	decodeStrict(t, renter.must("wallet", "--json"), &wallet)
	if wallet.BalanceFen <= 0 || wallet.Runway.RunningRentals != 1 {
		t.Errorf("wallet --json: %+v", wallet)
	}
	if out := renter.must("wallet", "--lang", "zh-CN"); !strings.Contains(out, "余额") || !strings.Contains(out, "¥") {
		t.Errorf("wallet in Chinese:\n%s", out)
	}
	var orders apiclient.StandingOrderList
	decodeStrict(t, renter.must("orders", "--json"), &orders)
	// The journey placed no standing order.
	if len(orders.StandingOrders) != 0 || orders.Total != 0 {
		t.Errorf("orders --json: %+v", orders)
	}

	// stop, start (the file is there; ssh trusts the new launch's host
	// key), release with the volume.
	if out := renter.must("stop", id); !strings.Contains(out, "Rental "+id+" is stopped.") {
		t.Errorf("stop:\n%s", out)
	}
	if _, errOut, code := renter.run("", "ssh", id, "--", "true"); code != rentercli.ExitConflict || !strings.Contains(errOut, "no SSH access now") {
		t.Errorf("ssh to a stopped rental: exit %d, %q", code, errOut)
	}
	if out := renter.must("start", id); !strings.Contains(out, "Rental "+id+" is running") {
		t.Errorf("start:\n%s", out)
	}
	if out := renter.sshEventually(id, "cat", "/workspace/f"); out != content+"\n" {
		t.Errorf("after the start /workspace/f is %q, want %q", out, content)
	}
	var released apiclient.Rental
	decodeStrict(t, renter.must("release", id, "--delete-volume", "--json"), &released)
	if released.Status != apiclient.RentalStatusReleased {
		t.Errorf("release --json: status %s", released.Status)
	}
	if _, _, code := renter.run("", "stop", "999999"); code != rentercli.ExitNotFound {
		t.Errorf("stopping a rental that does not exist: exit %d, want 6", code)
	}
	srv.stop()
}

// cliUser is one person at their terminal: their own HOME (with an
// ed25519 key pair in ~/.ssh) and configuration directory.
type cliUser struct {
	t   *testing.T
	env map[string]string
}

// newCLIUser makes a home with ~/.ssh/id_ed25519(.pub), as ssh-keygen
// leaves them, and an English locale. The home and the configuration
// directory have a space and a % in their names: ssh splits an option's
// value at white space and expands % in file names, and suanli ssh must
// give it these paths so that it reads them as they are.
func newCLIUser(t *testing.T, name string) *cliUser {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home 100%h")
	sshDir := filepath.Join(home, ".ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, name+"@cli-journey")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sshDir, "id_ed25519"), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))) + " " + name + "@cli-journey\n"
	if err := os.WriteFile(filepath.Join(sshDir, "id_ed25519.pub"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return &cliUser{t: t, env: map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "xdg %d"), "LANG": "en_US.UTF-8", "PATH": os.Getenv("PATH"),
	}}
}

// run runs one CLI command in-process with stdin as its standard input.
func (u *cliUser) run(stdin string, args ...string) (stdout, stderr string, code int) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var o, e bytes.Buffer
	code = rentercli.Run(ctx, args, strings.NewReader(stdin), &o, &e, u.env)
	u.t.Logf("suanli %s → exit %d\n%s%s", strings.Join(args, " "), code, clip(o.String()), clip(e.String()))
	return o.String(), e.String(), code
}

// running is a command running in the background (suanli logs -f).
type running struct {
	mu     sync.Mutex
	out    bytes.Buffer
	cancel context.CancelFunc
	done   chan int
}

// Write collects the command's standard output.
func (r *running) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

func (r *running) stdout() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// stop cancels the command as Ctrl-C does and returns its exit code.
func (r *running) stop() int {
	r.cancel()
	return <-r.done
}

// start runs a command in the background until stop.
func (u *cliUser) start(args ...string) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan int, 1)}
	go func() { r.done <- rentercli.Run(ctx, args, strings.NewReader(""), r, io.Discard, u.env) }()
	u.t.Cleanup(func() { cancel() })
	return r
}

// must runs a command that must succeed and returns its standard output.
func (u *cliUser) must(args ...string) string {
	u.t.Helper()
	out, errOut, code := u.run("", args...)
	if code != 0 {
		u.t.Fatalf("suanli %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// sshEventually runs a remote command with suanli ssh, trying again
// while ssh cannot log in (255: sshd may still be starting just after
// the launch), and returns its output.
func (u *cliUser) sshEventually(id string, remote ...string) string {
	u.t.Helper()
	var out string
	dockertest.Eventually(u.t, 30*time.Second, "suanli ssh "+id+" -- "+strings.Join(remote, " "), func() (bool, string) {
		o, errOut, code := u.run("", append([]string{"ssh", id, "--"}, remote...)...)
		out = o
		if code != 0 && code != 255 {
			u.t.Fatalf("suanli ssh: exit %d\n%s%s", code, o, errOut)
		}
		return code == 0, errOut
	})
	return out
}

// decodeStrict decodes --json output into a generated type, refusing
// any field the type (the OpenAPI document) does not have.
func decodeStrict(t *testing.T, out string, into any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("decoding --json output into %T: %v\n%s", into, err, out)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// clip shortens a command's output for the test log (--json answers run
// to hundreds of lines).
func clip(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…\n"
	}
	return s
}
