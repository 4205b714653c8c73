package rentals_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"golang.org/x/crypto/ssh"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/models"
	"suanli/rentals"
)

// renterKey is a renter's SSH key pair: the public line to rent with and
// the signer to log in with.
func renterKey(t *testing.T) (string, ssh.Signer) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " renter@e2e", signer
}

// sshRun logs in to the rental's access details with the renter's key, as
// the renter's ssh client would, and runs cmd.
func sshRun(t *testing.T, a *agent.Access, signer ssh.Signer, cmd string) string {
	t.Helper()
	c, err := ssh.Dial("tcp", net.JoinHostPort(a.Host, strconv.Itoa(a.Port)), &ssh.ClientConfig{User: a.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("ssh %s@%s:%d: %v", a.User, a.Host, a.Port, err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("ssh %q: %v: %s", cmd, err, out)
	}
	return string(out)
}

// TestARentalRunsInARealContainerAndItsFilesFollowItOnSharedStorage is the
// renter's whole path on a shared-storage datacentre with two nodes whose
// agents run real containers (Docker, real sshd; simulated GPUs, so no
// device request): rent with an image, SSH in with the renter's key, write
// a file in /workspace; the first node goes silent and the rental moves
// to the second, where the file is; stop (container gone, volume kept,
// storage billed, GPU time not); start (the file again); release with the
// volume (its directory gone on the node, nothing billed after).
func TestARentalRunsInARealContainerAndItsFilesFollowItOnSharedStorage(t *testing.T) {
	t.Parallel()
	host := dockertest.Require(t)
	image := dockertest.Image(t)
	cli, err := docker.NewClient(host)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, dbtest.SQLite(t), rigOptions{SilentAfter: 10 * time.Second})
	o := r.rtxOffer()
	if image != "suanli-test/sshd:bookworm" {
		// A skip here would pass silently under CI: the catalogue's
		// debian-sshd image must be the one the daemon has.
		t.Fatalf("the catalogue's debian-sshd image is suanli-test/sshd:bookworm, the daemon has %s", image)
	}
	if err := r.db.W.Model(&models.Datacenter{}).Where("id = ?", o.DatacenterID).Update("storage", models.StorageShared).Error; err != nil {
		t.Fatal(err)
	}
	sib := r.addSibling(o, 2)
	root := t.TempDir()
	// Other runs of this test (and other packages' docker tests) share the
	// daemon: a namespace of its own for the container names, and port
	// bases free now.
	ns := dockerNamespace(t)
	base := freeBases(t)
	launcher := func(base int) *docker.Launcher {
		return &docker.Launcher{Client: cli, Host: "127.0.0.1", BindIP: "127.0.0.1", PortBase: base, VolumeRoot: root, Simulated: true, Namespace: ns}
	}
	name := launcher(0).ContainerName
	r.launcherFor = map[int64]agent.Launcher{o.NodeID: launcher(base), sib: launcher(base + 10000)}
	first := r.startAgent(o.NodeID)
	r.startAgent(sib)
	r.waitReady(o.NodeID, sib)

	key, signer := renterKey(t)
	rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.Image = "debian-sshd"; in.VolumeGB = 5; in.SSHPublicKey = key })
	t.Cleanup(func() {
		_ = cli.ContainerRemove(r.ctx, name(rt.ID), container.RemoveOptions{Force: true})
	})
	run := r.waitStatus(rt.ID, models.RentalRunning)
	acc := rentals.Access(&run)
	if acc == nil || !acc.Simulated || acc.Host != "127.0.0.1" {
		t.Fatalf("access %+v, want a simulated container on 127.0.0.1", acc)
	}
	sshRun(t, acc, signer, "echo kept-across-nodes > /workspace/notes.txt")
	if got := sshRun(t, acc, signer, "id -un; cat /etc/debian_version"); !strings.HasPrefix(got, "root\n12") {
		t.Errorf("logged in: %q, want root on the Debian 12 image", got)
	}
	v := r.volume(*rt.VolumeID)
	if b, err := os.ReadFile(filepath.Join(root, v.WorkspaceKey, "notes.txt")); err != nil || string(b) != "kept-across-nodes\n" {
		t.Fatalf("the file on the shared volume root: %q %v", b, err)
	}

	// The first node goes silent: the rental moves to the second, files and all.
	first.Pause()
	// The clock moves past the silence limit; the second node counts as
	// heard from at the new time (its agent heartbeats on, but on this
	// busy 2-core machine not always within the limit), so only the first
	// is silent.
	r.clock.Advance(12 * time.Second)
	r.markNodeAlive(sib)
	if _, err := r.rentals.Watch(r.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			var ns []models.Node
			r.db.R.Where("id IN ?", []int64{o.NodeID, sib}).Find(&ns)
			for _, n := range ns {
				t.Logf("node %d: %s, last heartbeat %v", n.ID, n.Health, n.LastHeartbeatAt)
			}
			t.Logf("timeline: %s", r.timeline(rt.ID))
			var ts []models.AgentTask
			r.db.R.Where("rental_id = ?", rt.ID).Order("id").Find(&ts)
			for _, at := range ts {
				t.Logf("task %d node %d %s %s: %s", at.ID, at.NodeID, at.Kind, at.Status, at.Result)
			}
		}
	})
	r.eventually("the rental runs on the second node", func() bool {
		cur := r.rental(rt.ID)
		return cur.Status == models.RentalRunning && cur.NodeID != nil && *cur.NodeID == sib
	})
	moved := rentals.Access(new(r.rental(rt.ID)))
	if moved.Port == acc.Port {
		t.Fatalf("moved access %+v has the old port", moved)
	}
	if got := sshRun(t, moved, signer, "cat /workspace/notes.txt"); got != "kept-across-nodes\n" {
		t.Errorf("after the move /workspace/notes.txt is %q", got)
	}
	if v2 := r.volume(*rt.VolumeID); v2.ID != v.ID || v2.NodeID == nil || *v2.NodeID != sib {
		t.Errorf("after the move the volume is %+v, want the same one, last on node %d", v2, sib)
	}

	// Stop: the container is gone, the volume kept and billed as storage.
	stopped := r.stop(rt.ID)
	if _, err := cli.ContainerInspect(r.ctx, name(rt.ID)); !cerrdefs.IsNotFound(err) {
		t.Errorf("after the stop the container: %v, want not found", err)
	}
	gpuFen := stopped.BilledFen
	r.clock.Advance(48 * time.Hour) // 5 GB at ¥0.30 a GB-month: 10 fen in two days
	r.meter()
	if v = r.volume(v.ID); v.BilledFen < 9 || r.rental(rt.ID).BilledFen != gpuFen {
		t.Errorf("two days stopped: storage billed %d fen, GPU billed %d → %d; want about 10 fen of storage only", v.BilledFen, gpuFen, r.rental(rt.ID).BilledFen)
	}

	// Start again: the same files.
	if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{}); err != nil {
		t.Fatal(err)
	}
	again := r.waitStatus(rt.ID, models.RentalRunning)
	if got := sshRun(t, rentals.Access(&again), signer, "cat /workspace/notes.txt"); got != "kept-across-nodes\n" {
		t.Errorf("after the start /workspace/notes.txt is %q", got)
	}

	// Release with the volume: its directory is gone on the node.
	if _, err := r.rentals.Release(r.ctx, rt.ID, true); err != nil {
		t.Fatal(err)
	}
	r.eventually("the volume's files are deleted on the node", func() bool {
		_, err := os.Stat(filepath.Join(root, v.WorkspaceKey))
		return os.IsNotExist(err)
	})
	r.waitStatus(rt.ID, models.RentalStopped)
	billed := r.volume(v.ID).BilledFen
	r.clock.Advance(48 * time.Hour)
	r.meter()
	if got := r.volume(v.ID).BilledFen; got != billed {
		t.Errorf("storage billed after the release: %d → %d", billed, got)
	}
	r.checkLedger()
}

// dockerNamespace is a docker launcher Namespace no other test run uses.
func dockerNamespace(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "rentals" + hex.EncodeToString(b)
}

// freeBases is a PortBase whose first ports (rental ids 1 to 20), and
// those 10000 above, are free now: from 33000–39999 (and 43000–49999),
// apart from the root package's journeys (10000–32767).
func freeBases(t *testing.T) int {
	t.Helper()
	free := func(base int) bool {
		for id := 1; id <= 20; id++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+id))
			if err != nil {
				return false
			}
			ln.Close()
		}
		return true
	}
	for range 50 {
		n, err := rand.Int(rand.Reader, big.NewInt(7000))
		if err != nil {
			t.Fatal(err)
		}
		if base := 33000 + int(n.Int64()); free(base) && free(base+10000) {
			return base
		}
	}
	t.Fatal("no free SSH port bases in 50 tries")
	return 0
}
