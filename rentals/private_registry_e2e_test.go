package rentals_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	registryhandlers "github.com/distribution/distribution/v3/registry/handlers"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/client"
	"golang.org/x/crypto/bcrypt"

	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/images"
	"suanli/models"
	"suanli/rentals"
)

// privateRegistry serves a real Docker registry (the distribution
// project's, storing in memory) on 127.0.0.1 that lets only user with
// password push and pull (htpasswd), and returns its host:port. Docker
// reaches registries on 127.0.0.0/8 over plain HTTP without configuration.
func privateRegistry(t *testing.T, user, password string) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{"inmemory": configuration.Parameters{},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}}},
		Auth: configuration.Auth{"htpasswd": configuration.Parameters{"realm": "suanli-test", "path": htpasswd}},
	}
	cfg.HTTP.Secret = hex.EncodeToString(randomBytes(16))
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(registryhandlers.NewApp(ctx, cfg))
	t.Cleanup(func() {
		srv.Close()
		cancel()
	})
	return strings.TrimPrefix(srv.URL, "http://")
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// pushAs tags the daemon's image src as ref and pushes it with the
// credential, then removes the tag again, so that a launch of ref must
// pull it from the registry.
func pushAs(t *testing.T, cli *client.Client, src, ref, user, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cli.ImageTag(ctx, src, ref); err != nil {
		t.Fatal(err)
	}
	untag := func() { _, _ = cli.ImageRemove(context.Background(), ref, image.RemoveOptions{}) }
	t.Cleanup(untag)
	auth, err := registry.EncodeAuthConfig(registry.AuthConfig{Username: user, Password: password, ServerAddress: images.RegistryServer(ref)})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cli.ImagePush(ctx, ref, image.PushOptions{RegistryAuth: auth})
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("push %s: reading its progress: %v", ref, err)
		}
		if m.Error != "" {
			t.Fatalf("push %s: %s", ref, m.Error)
		}
	}
	untag()
}

// A custom image in a private registry (a real one, with password
// authentication): rented with the right credentials, the node's agent
// pulls it with them and the renter logs in to the container it runs;
// with a wrong password the pull is refused, and the attempt fails with
// the registry's reason, even though the node has the image by then; and
// without credentials the node's copy is not run either (it is pulled
// again, and refused).
func TestAPrivateImageIsPulledWithTheRentersCredentials(t *testing.T) {
	t.Parallel()
	host := dockertest.Require(t)
	base := dockertest.Image(t)
	cli, err := docker.NewClient(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	password := "pw-" + hex.EncodeToString(randomBytes(8))
	reg := privateRegistry(t, "lab", password)
	ref := reg + "/lab/train:v1"
	pushAs(t, cli, base, ref, "lab", password)

	r := newRig(t, dbtest.SQLite(t), rigOptions{Credentials: testBox(t)})
	o := r.rtxOffer()
	if err := r.db.W.Model(&models.Offer{}).Where("id = ?", o.ID).Update("custom_images", true).Error; err != nil {
		t.Fatal(err)
	}
	l := &docker.Launcher{Client: cli, Host: "127.0.0.1", BindIP: "127.0.0.1", PortBase: freePortBase(t), Simulated: true,
		Namespace: "reg" + hex.EncodeToString(randomBytes(4)), ReadyTimeout: 45 * time.Second}
	r.launcherFor = map[int64]agent.Launcher{o.NodeID: l}
	r.startAgent(o.NodeID)
	r.waitReady(o.NodeID)
	key, signer := dockertest.RenterKey(t, "renter@registry")
	rent := func(pw string) *models.Rental {
		rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) {
			in.Image = ref
			in.SSHPublicKey = key
			in.VolumeGB = 1
			if pw != "" {
				in.RegistryAuth = &images.RegistryAuth{Username: "lab", Password: pw}
			}
		})
		t.Cleanup(func() {
			ctx := context.Background()
			_ = cli.ContainerRemove(ctx, l.ContainerName(rt.ID), container.RemoveOptions{Force: true})
			if v, err := r.rentals.RentalVolume(ctx, rt); err == nil && v != nil {
				_ = cli.VolumeRemove(ctx, docker.VolumeName(v.WorkspaceKey, rt.ID), true)
			}
		})
		return rt
	}

	good := rent(password)
	run := r.waitStatus(good.ID, models.RentalRunning)
	if got := sshRun(t, rentals.Access(&run), signer, "cat /etc/debian_version"); !strings.HasPrefix(got, "12") {
		t.Errorf("logged in to the private image's container: %q, want Debian 12", got)
	}
	c, err := cli.ContainerInspect(r.ctx, l.ContainerName(good.ID))
	if err != nil || c.Config.Image != ref {
		t.Fatalf("the container runs %v (%v), want %s", c.Config, err, ref)
	}
	if _, err := cli.ImageInspect(r.ctx, ref); err != nil {
		t.Fatalf("the node has not got %s from the registry: %v", ref, err)
	}

	bad := rent("not-the-password")
	failed := r.waitStatus(bad.ID, models.RentalFailed)
	e := r.event(bad.ID, "node_failed")
	if !strings.Contains(e.Detail, "pull "+ref) || !strings.Contains(strings.ToLower(e.Detail), "unauthorized") {
		t.Errorf("a wrong password: failure %q, node_failed %q; want the pull's refusal", failed.Failure, e.Detail)
	}
	if strings.Contains(e.Detail, password) || strings.Contains(failed.Failure, "not-the-password") {
		t.Errorf("the failure shows a password: %q", e.Detail)
	}
	if _, err := cli.ContainerInspect(r.ctx, l.ContainerName(bad.ID)); err == nil {
		t.Error("a container runs for the refused pull")
	}
	var kept int64
	if err := r.db.R.Model(&models.RentalRegistryAuth{}).Where("rental_id = ?", bad.ID).Count(&kept).Error; err != nil || kept != 0 {
		t.Errorf("the failed rental still holds %d sealed credentials (%v): it never starts, they must go", kept, err)
	}

	// Without credentials the node's copy (pulled with the lab's) is not
	// run: the agent pulls again and the registry refuses.
	none := rent("")
	r.waitStatus(none.ID, models.RentalFailed)
	if e := r.event(none.ID, "node_failed"); !strings.Contains(e.Detail, "pull "+ref) || !strings.Contains(e.Detail, "no basic auth credentials") {
		t.Errorf("no credentials for a privately pulled image: node_failed %q, want the pull's refusal", e.Detail)
	}
	if _, err := cli.ContainerInspect(r.ctx, l.ContainerName(none.ID)); err == nil {
		t.Error("a container runs another renter's private image for a renter without credentials")
	}
}
