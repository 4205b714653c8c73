package rentals_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"golang.org/x/crypto/ssh"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/models"
	"suanli/rentals"
)

// sshTry logs in to the rental's access details with the renter's key, as
// the renter's ssh client would, and runs cmd.
func sshTry(a *agent.Access, signer ssh.Signer, cmd string) (string, error) {
	c, err := ssh.Dial("tcp", net.JoinHostPort(a.Host, strconv.Itoa(a.Port)), &ssh.ClientConfig{User: a.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err != nil {
		return "", fmt.Errorf("ssh %s@%s:%d: %w", a.User, a.Host, a.Port, err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	if err != nil {
		return string(out), fmt.Errorf("ssh %q: %w: %s", cmd, err, out)
	}
	return string(out), nil
}

// sshRun is sshTry that fails the test on an error.
func sshRun(t *testing.T, a *agent.Access, signer ssh.Signer, cmd string) string {
	t.Helper()
	out, err := sshTry(a, signer, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// portSpan is how many rentals' SSH ports freePortBase keeps free: a
// test's rental ids, which start at 1 in each fresh database.
const portSpan = 20

// freePortBase is a docker launcher's PortBase under which the SSH ports
// of rentals 1 to portSpan are free now. Rental ids restart at 1 in each
// database and other test runs share the host, so every node of every
// run needs its own range. The ranges are below Linux's ephemeral ports.
func freePortBase(t *testing.T) int {
	t.Helper()
	for range 200 {
		base := 20000 + mathrand.IntN(12000)
		free := true
		for p := base + 1; p <= base+portSpan && free; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				free = false
				continue
			}
			_ = ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free range of SSH ports")
	return 0
}

// randomName is a random lower-case name for a docker namespace.
func randomName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// dockerRig is a rig whose two nodes (the RTX 4090 offer's node and a
// sibling of its offer) have agents that run real containers on the
// test daemon: Docker, a real sshd, simulated GPUs (no device request).
// One daemon serves both nodes here, where two hosts would each have
// their own, so each node's launcher has its own namespace (container
// names) and its own SSH ports: the second node never touches the first
// one's container. Docker volumes (local storage) are named by their
// volume's random key, so they differ between runs too.
type dockerRig struct {
	*rig
	cli *client.Client
	// offer is the RTX 4090 offer; first its node, second the sibling.
	offer         models.Offer
	first, second int64
	// launchers are the nodes' docker launchers; a test may replace
	// r.launcherFor[node] (wrapping its launcher) before startAgents.
	launchers map[int64]*docker.Launcher
	// root is the shared volume root ("" on local storage).
	root string
	// ns prefixes the names of the rig's containers.
	ns string
}

// newDockerRig makes the rig on db with the datacentre's storage set to
// storage: shared, both nodes' launchers mount one volume root (as
// --volume-root on an NFS mount would); local, each keeps its workspaces
// in docker volumes on its own disk (no --volume-root). Every container
// and docker volume of the rig is removed when the test ends.
func newDockerRig(t *testing.T, db *models.DB, storage models.Storage) *dockerRig {
	t.Helper()
	host := dockertest.Require(t)
	if image := dockertest.Image(t); image != "suanli-test/sshd:bookworm" {
		// A skip here would pass silently under CI: the catalogue's
		// debian-sshd image must be the one the daemon has.
		t.Fatalf("the catalogue's debian-sshd image is suanli-test/sshd:bookworm, the daemon has %s", image)
	}
	cli, err := docker.NewClient(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	r := newRig(t, db, rigOptions{SilentAfter: 10 * time.Second})
	d := &dockerRig{rig: r, cli: cli, offer: r.rtxOffer(), launchers: map[int64]*docker.Launcher{}}
	if err := r.db.W.Model(&models.Datacenter{}).Where("id = ?", d.offer.DatacenterID).Update("storage", storage).Error; err != nil {
		t.Fatal(err)
	}
	d.first, d.second = d.offer.NodeID, r.addSibling(d.offer, 2)
	if storage == models.StorageShared {
		d.root = t.TempDir()
	}
	ns := randomName("e2e")
	d.ns = ns
	r.launcherFor = map[int64]agent.Launcher{}
	for i, node := range []int64{d.first, d.second} {
		l := &docker.Launcher{Client: cli, Host: "127.0.0.1", BindIP: "127.0.0.1", PortBase: freePortBase(t), VolumeRoot: d.root,
			Simulated: true, Namespace: fmt.Sprintf("%s-n%d", ns, i+1), ReadyTimeout: 45 * time.Second}
		d.launchers[node], r.launcherFor[node] = l, l
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", "suanli-"+ns+"-"))})
		if err != nil {
			t.Logf("listing the test's containers: %v", err)
		}
		for _, c := range cs {
			_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		}
		var keys []string
		_ = db.R.Model(&models.Volume{}).Pluck("workspace_key", &keys)
		for _, k := range keys {
			if k != "" {
				_ = cli.VolumeRemove(ctx, docker.VolumeName(k, 0), true)
			}
		}
	})
	return d
}

// startAgents starts both nodes' agents, waits until they report healthy
// GPUs and until the queue's start-up health pass is over (from then on
// only the test moves the clock and runs Watch), and returns the first.
func (d *dockerRig) startAgents() *simNode {
	d.t.Helper()
	first := d.startAgent(d.first)
	d.startAgent(d.second)
	d.waitReady(d.first, d.second)
	d.quiet()
	return first
}

// container is the name of the rental's container on a node.
func (d *dockerRig) container(node, rentalID int64) string {
	return d.launchers[node].ContainerName(rentalID)
}

// volumeFile reads a file in a docker volume (relative to its root)
// through a throwaway container of the test image that mounts it read
// only: what is on the volume, whichever container had it.
func (d *dockerRig) volumeFile(volumeName, path string) (string, error) {
	ctx := d.ctx
	name := "suanli-" + d.ns + "-peek-" + randomName("")
	resp, err := d.cli.ContainerCreate(ctx, &container.Config{Image: dockertest.DefaultSSHDImage, User: "0", Entrypoint: []string{"cat", "/v/" + path}},
		&container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: volumeName, Target: "/v", ReadOnly: true}}}, nil, nil, name)
	if err != nil {
		return "", err
	}
	defer func() {
		_ = d.cli.ContainerRemove(context.WithoutCancel(ctx), resp.ID, container.RemoveOptions{Force: true})
	}()
	if err := d.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return "", err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	okC, errC := d.cli.ContainerWait(wctx, resp.ID, container.WaitConditionNotRunning)
	var code int64
	select {
	case res := <-okC:
		code = res.StatusCode
	case err := <-errC:
		return "", err
	}
	rc, err := d.cli.ContainerLogs(ctx, resp.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var out, errOut strings.Builder
	if _, err := stdcopy.StdCopy(&out, &errOut, rc); err != nil {
		return "", err
	}
	if code != 0 {
		return out.String(), fmt.Errorf("cat %s in volume %s: exit %d: %s", path, volumeName, code, errOut.String())
	}
	return out.String(), nil
}

// silenceFirst makes the first node go silent and runs the health pass
// that moves its rentals: the clock moves past the silence limit, and
// the second node counts as heard from at the new time (its agent
// heartbeats on, but on a busy 2-core machine not always within the
// limit), so only the first is silent. It waits until the rental runs on
// the second node and returns it.
func (d *dockerRig) silenceFirst(first *simNode, rentalID int64) models.Rental {
	d.t.Helper()
	first.Pause()
	d.clock.Advance(12 * time.Second)
	d.markNodeAlive(d.second)
	if _, err := d.rentals.Watch(d.ctx); err != nil {
		d.t.Fatal(err)
	}
	d.eventually("the rental runs on the second node", func() bool {
		cur := d.rental(rentalID)
		return cur.Status == models.RentalRunning && cur.NodeID != nil && *cur.NodeID == d.second
	})
	return d.rental(rentalID)
}

// logOnFailure logs, if the test fails, what the nodes and the rental
// went through.
func (d *dockerRig) logOnFailure(rentalID int64) {
	d.t.Cleanup(func() {
		if !d.t.Failed() {
			return
		}
		var ns []models.Node
		d.db.R.Where("id IN ?", []int64{d.first, d.second}).Find(&ns)
		for _, n := range ns {
			d.t.Logf("node %d: %s, last heartbeat %v", n.ID, n.Health, n.LastHeartbeatAt)
		}
		d.t.Logf("timeline: %s", d.timeline(rentalID))
		var ts []models.AgentTask
		d.db.R.Where("rental_id = ?", rentalID).Order("id").Find(&ts)
		for _, at := range ts {
			d.t.Logf("task %d node %d %s %s: %.300s", at.ID, at.NodeID, at.Kind, at.Status, at.Result)
		}
	})
}

// browser is the renter logged in to the site through POST /login, as
// their browser would be; get fetches a page in a language.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (d *dockerRig) browser() *browser {
	d.t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{t: d.t, base: d.url, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	b.get("/login", "en")
	u, _ := url.Parse(d.url)
	csrf := ""
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "suanli_csrf" {
			csrf = ck.Value
		}
	}
	res, err := b.c.PostForm(d.url+"/login", url.Values{"_csrf": {csrf}, "email": {d.user.Email}, "password": {"renter-pass-2026"}})
	if err != nil {
		d.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		d.t.Fatalf("log in: %d", res.StatusCode)
	}
	return b
}

func (b *browser) get(path, lang string) string {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.base+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept-Language", lang)
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		b.t.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	return string(body)
}

// TestDockerRentalRunsInARealContainerAndItsFilesFollowItOnSharedStorage is the
// renter's whole path on a shared-storage datacentre with two nodes whose
// agents run real containers (Docker, real sshd; simulated GPUs, so no
// device request): rent with an image, SSH in with the renter's key, write
// a file in /workspace; the first node goes silent and the rental moves
// to the second, where the file is; stop (container gone, volume kept,
// storage billed, GPU time not); start (the file again); release with the
// volume (its directory gone on the node, nothing billed after). On both
// databases.
func TestDockerRentalRunsInARealContainerAndItsFilesFollowItOnSharedStorage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		d := newDockerRig(t, db, models.StorageShared)
		first := d.startAgents()
		o, sib, root, cli := d.offer, d.second, d.root, d.cli

		key, signer := dockertest.RenterKey(t, "renter@e2e")
		rt := d.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.Image = "debian-sshd"; in.VolumeGB = 5; in.SSHPublicKey = key })
		d.logOnFailure(rt.ID)
		run := d.waitStatus(rt.ID, models.RentalRunning)
		acc := rentals.Access(&run)
		if acc == nil || !acc.Simulated || acc.Host != "127.0.0.1" {
			t.Fatalf("access %+v, want a simulated container on 127.0.0.1", acc)
		}
		sshRun(t, acc, signer, "echo kept-across-nodes > /workspace/notes.txt")
		if got := sshRun(t, acc, signer, "id -un; cat /etc/debian_version"); !strings.HasPrefix(got, "root\n12") {
			t.Errorf("logged in: %q, want root on the Debian 12 image", got)
		}
		v := d.volume(*rt.VolumeID)
		if b, err := os.ReadFile(filepath.Join(root, v.WorkspaceKey, "notes.txt")); err != nil || string(b) != "kept-across-nodes\n" {
			t.Fatalf("the file on the shared volume root: %q %v", b, err)
		}

		// The first node goes silent: the rental moves to the second, files and all.
		moved := rentals.Access(new(d.silenceFirst(first, rt.ID)))
		if moved.Port == acc.Port {
			t.Fatalf("moved access %+v has the old port", moved)
		}
		if got := sshRun(t, moved, signer, "cat /workspace/notes.txt"); got != "kept-across-nodes\n" {
			t.Errorf("after the move /workspace/notes.txt is %q", got)
		}
		if v2 := d.volume(*rt.VolumeID); v2.ID != v.ID || v2.NodeID == nil || *v2.NodeID != sib {
			t.Errorf("after the move the volume is %+v, want the same one, last on node %d", v2, sib)
		}

		// Stop: the container is gone, the volume kept and billed as storage.
		stopped := d.stop(rt.ID)
		if _, err := cli.ContainerInspect(d.ctx, d.container(sib, rt.ID)); !cerrdefs.IsNotFound(err) {
			t.Errorf("after the stop the container: %v, want not found", err)
		}
		gpuFen := stopped.BilledFen
		d.clock.Advance(48 * time.Hour) // 5 GB at ¥0.30 a GB-month: 10 fen in two days
		d.meter()
		if v = d.volume(v.ID); v.BilledFen < 9 || d.rental(rt.ID).BilledFen != gpuFen {
			t.Errorf("two days stopped: storage billed %d fen, GPU billed %d → %d; want about 10 fen of storage only", v.BilledFen, gpuFen, d.rental(rt.ID).BilledFen)
		}

		// Start again: the same files.
		if _, err := d.rentals.Start(d.ctx, d.user, d.org, rt.ID, rentals.StartInput{}); err != nil {
			t.Fatal(err)
		}
		again := d.waitStatus(rt.ID, models.RentalRunning)
		if got := sshRun(t, rentals.Access(&again), signer, "cat /workspace/notes.txt"); got != "kept-across-nodes\n" {
			t.Errorf("after the start /workspace/notes.txt is %q", got)
		}

		// Release with the volume: its directory is gone on the node.
		if _, err := d.rentals.Release(d.ctx, rt.ID, true); err != nil {
			t.Fatal(err)
		}
		d.eventually("the volume's files are deleted on the node", func() bool {
			_, err := os.Stat(filepath.Join(root, v.WorkspaceKey))
			return os.IsNotExist(err)
		})
		d.waitStatus(rt.ID, models.RentalStopped)
		billed := d.volume(v.ID).BilledFen
		d.clock.Advance(48 * time.Hour)
		d.meter()
		if got := d.volume(v.ID).BilledFen; got != billed {
			t.Errorf("storage billed after the release: %d → %d", billed, got)
		}
		d.checkLedger()
	})
}
