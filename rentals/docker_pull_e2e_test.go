package rentals_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/models"
	"suanli/rentals"
)

// unpullableImage is a custom image reference on a registry that does
// not answer: a port on loopback that nothing listens on, so the
// daemon's pull is refused at once (no registry is reachable here
// anyway). The name is new for each call, so no other run's tag can be
// on the daemon.
func unpullableImage(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return fmt.Sprintf("127.0.0.1:%d/suanli-e2e/%s:v1", port, randomName("train"))
}

// pullFailsFirst is the first node's launcher in the failed-pull test:
// the real docker launcher, whose pull of an image the daemon lacks
// really fails. When the image is cachedNext, the test then gives the
// daemon that image (a tag of the test image) before the failure
// reaches the agent: it stands for the next node having the image on its
// own disk, which one daemon shared by both nodes cannot otherwise show
// (images are daemon-wide).
type pullFailsFirst struct {
	*docker.Launcher
	cli interface {
		ImageTag(context.Context, string, string) error
	}
	cachedNext string
	mu         sync.Mutex
	failures   []string
}

// Launch implements agent.Launcher.
func (l *pullFailsFirst) Launch(ctx context.Context, spec agent.LaunchSpec) (*agent.Access, error) {
	acc, err := l.Launcher.Launch(ctx, spec)
	if err != nil {
		l.mu.Lock()
		l.failures = append(l.failures, err.Error())
		l.mu.Unlock()
		if spec.Image == l.cachedNext {
			if terr := l.cli.ImageTag(ctx, dockertest.DefaultSSHDImage, spec.Image); terr != nil {
				return nil, fmt.Errorf("%w (and tagging the image for the next node: %v)", err, terr)
			}
		}
	}
	return acc, err
}

// A pull that fails fails that node's attempt with the daemon's reason,
// and provisioning tries the next node, with real containers: an image
// no node can pull fails the rental after both nodes tried it, naming
// the reason, and nothing is charged; an image the next node has runs
// there. On both databases.
//
// One daemon serves both nodes here, so "the next node has the image"
// is made by tagging the test image under that reference once the first
// node's pull has failed (pullFailsFirst); the pulls themselves, and
// their failures, are the daemon's own.
func TestDockerFailedPullMovesTheRentalToTheNextNode(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		d := newDockerRig(t, db, models.StorageLocal)
		if err := d.db.W.Model(&models.Offer{}).Where("id = ?", d.offer.ID).Update("custom_images", true).Error; err != nil {
			t.Fatal(err)
		}
		nowhere, cachedNext := unpullableImage(t), unpullableImage(t)
		first := &pullFailsFirst{Launcher: d.launchers[d.first], cli: d.cli, cachedNext: cachedNext}
		d.launcherFor[d.first] = first
		t.Cleanup(func() {
			_, _ = d.cli.ImageRemove(context.Background(), cachedNext, image.RemoveOptions{})
		})
		for _, ref := range []string{nowhere, cachedNext} {
			if _, err := d.cli.ImageInspect(d.ctx, ref); !cerrdefs.IsNotFound(err) {
				t.Fatalf("the daemon has %s before the test: %v", ref, err)
			}
		}
		d.startAgents()
		key, signer := dockertest.RenterKey(t, "renter@e2e")
		custom := func(ref string) func(*rentals.RentInput) {
			return func(in *rentals.RentInput) { in.Image = ref; in.VolumeGB = 5; in.SSHPublicKey = key }
		}
		// nodeFailed are the rental's node_failed events, checked to name
		// each node's pull and the daemon's reason.
		nodeFailed := func(rentalID int64, nodes ...int64) {
			t.Helper()
			es, err := d.db.RentalEvents(d.ctx, rentalID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range es {
				if e.Kind == "node_failed" {
					got = append(got, e.Detail)
				}
			}
			if len(got) != len(nodes) {
				t.Fatalf("rental %d: node_failed events %q, want one for each of nodes %v; timeline:%s", rentalID, got, nodes, d.timeline(rentalID))
			}
			for i, n := range nodes {
				if want := fmt.Sprintf("launch failed on node %d: ", n); !strings.HasPrefix(got[i], want) || !strings.Contains(got[i], "pull 127.0.0.1:") ||
					!strings.Contains(got[i], "connection refused") {
					t.Errorf("rental %d: node_failed %q, want %q with the pull and the daemon's reason", rentalID, got[i], want)
				}
			}
		}

		// No node can pull it: each tries, the rental fails, nothing is charged.
		balance := d.balance()
		failed := d.mustRent(d.offer.ID, 1, custom(nowhere))
		d.logOnFailure(failed.ID)
		d.eventually("the rental with an image no node can pull fails", func() bool { return d.rental(failed.ID).Status == models.RentalFailed })
		nodeFailed(failed.ID, d.first, d.second)
		if f := d.rental(failed.ID); !strings.Contains(f.Failure, "pull 127.0.0.1:") || !strings.Contains(f.Failure, "nothing was charged") {
			t.Errorf("failure %q, want the pull's reason and that nothing was charged", f.Failure)
		}
		if got := d.walletSum(failed.ID); got != 0 || d.balance() != balance {
			t.Errorf("the failed rental charged %d fen (balance %d → %d)", -got, balance, d.balance())
		}
		if v := d.volume(*failed.VolumeID); v.Status != models.VolumeDeleted || v.BilledFen != 0 {
			t.Errorf("the failed rental's volume is %+v, want deleted, never billed", v)
		}
		for _, node := range []int64{d.first, d.second} {
			if _, err := d.cli.ContainerInspect(d.ctx, d.container(node, failed.ID)); !cerrdefs.IsNotFound(err) {
				t.Errorf("node %d left a container for the failed rental: %v", node, err)
			}
		}

		// The next node has the image: the rental runs there.
		rt := d.mustRent(d.offer.ID, 1, custom(cachedNext))
		d.logOnFailure(rt.ID)
		run := d.waitStatus(rt.ID, models.RentalRunning)
		if run.NodeID == nil || *run.NodeID != d.second {
			t.Fatalf("the rental runs on node %v, want the second node %d", run.NodeID, d.second)
		}
		nodeFailed(rt.ID, d.first)
		if got := sshRun(t, rentals.Access(&run), signer, "cat /etc/debian_version"); !strings.HasPrefix(got, "12") {
			t.Errorf("logged in on the second node: %q, want the Debian 12 image", got)
		}
		if _, err := d.cli.ContainerInspect(d.ctx, d.container(d.first, rt.ID)); !cerrdefs.IsNotFound(err) {
			t.Errorf("the first node left a container after its failed pull: %v", err)
		}
		first.mu.Lock()
		if len(first.failures) != 2 {
			t.Errorf("the first node's launcher failed %d times (%q), want its two pulls and no other launch", len(first.failures), first.failures)
		}
		first.mu.Unlock()
		d.checkLedger()
	})
}
