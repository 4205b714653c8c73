package docker_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"golang.org/x/crypto/ssh"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dockertest"
)

// These tests run real containers of the test sshd image on the test
// Docker daemon (dockertest) and log in to them over SSH as a renter
// would. Each uses its own rental ids, ports, workspaces and images, and
// removes them at its end.

// uniqueID is a rental id no other test (here or in a parallel run) uses.
func uniqueID(tb testing.TB) int64 {
	tb.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1<<40))
	if err != nil {
		tb.Fatal(err)
	}
	return 1e12 + n.Int64()
}

// portBaseFor is a PortBase that puts rental id's SSH port on a port
// that is free now.
func portBaseFor(tb testing.TB, id int64) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port - agent.SSHPort(0, id)
}

// dockerLauncher is a simulated-GPU docker launcher on the test daemon
// with its SSH ports on 127.0.0.1.
func dockerLauncher(tb testing.TB, cli *client.Client, base int) *docker.Launcher {
	tb.Helper()
	return &docker.Launcher{Client: cli, Image: dockertest.Image(tb), Host: "127.0.0.1", BindIP: "127.0.0.1",
		PortBase: base, Simulated: true, ReadyTimeout: 45 * time.Second,
		Logger: slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

// cleanupRental removes the rental's container and its workspace's
// volume when the test ends, whatever happened.
func cleanupRental(tb testing.TB, cli *client.Client, rentalID int64, ws string) {
	tb.Helper()
	tb.Cleanup(func() {
		ctx := context.Background()
		_ = cli.ContainerRemove(ctx, docker.ContainerName(rentalID), container.RemoveOptions{Force: true, RemoveVolumes: true})
		_ = cli.VolumeRemove(ctx, docker.VolumeName(ws, rentalID), true)
	})
}

// sshRun logs in as root on 127.0.0.1:port with signer and runs cmd.
func sshRun(port int, signer ssh.Signer, cmd string) (string, error) {
	cfg := &ssh.ClientConfig{
		User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		// A test container's host key is new every time; nothing to pin.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         10 * time.Second,
	}
	c, err := ssh.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return strings.TrimSpace(string(out)), err
}

func mustSSH(tb testing.TB, port int, signer ssh.Signer, cmd string) string {
	tb.Helper()
	out, err := sshRun(port, signer, cmd)
	if err != nil {
		tb.Fatalf("ssh %q: %v; output: %s", cmd, err, out)
	}
	return out
}

func mustLaunch(tb testing.TB, l *docker.Launcher, spec agent.LaunchSpec) *agent.Access {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	acc, err := l.Launch(ctx, spec)
	if err != nil {
		tb.Fatalf("launch of rental %d: %v", spec.RentalID, err)
	}
	return acc
}

// containerGone fails the test unless the rental has no container.
func containerGone(tb testing.TB, cli *client.Client, rentalID int64) {
	tb.Helper()
	_, err := cli.ContainerInspect(context.Background(), docker.ContainerName(rentalID))
	if !cerrdefs.IsNotFound(err) {
		tb.Errorf("container of rental %d: inspect err = %v, want not found", rentalID, err)
	}
}

// derivedImage commits a container of the sshd image, after running cmd
// in it, as a new image with cfg's settings (Env, User); it is removed at
// the test's end.
func derivedImage(tb testing.TB, cli *client.Client, base string, cmd []string, cfg container.Config) string {
	tb.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("suanli-test/derived:%d", uniqueID(tb))
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: base, Entrypoint: cmd[:1], Cmd: cmd[1:]}, nil, nil, nil, "")
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}) }()
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		tb.Fatal(err)
	}
	waitC, errC := cli.ContainerWait(ctx, c.ID, container.WaitConditionNotRunning)
	select {
	case w := <-waitC:
		if w.StatusCode != 0 {
			tb.Fatalf("%v exited %d", cmd, w.StatusCode)
		}
	case err := <-errC:
		tb.Fatal(err)
	}
	if _, err := cli.ContainerCommit(ctx, c.ID, container.CommitOptions{Reference: name, Config: &cfg}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		// Containers of the image go first, whoever's cleanup would remove
		// them: with one left, the removal only untags the image and a
		// dangling copy stays on the daemon after every run.
		ctx := context.Background()
		if cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("ancestor", name))}); err == nil {
			for _, c := range cs {
				_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
			}
		}
		_, _ = cli.ImageRemove(ctx, name, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	return name
}

func TestDockerLaunchStopLaunchDelete(t *testing.T) {
	cli := dockertest.Client(t)
	id := uniqueID(t)
	ws := "t" + strconv.FormatInt(id, 10)
	cleanupRental(t, cli, id, ws)
	l := dockerLauncher(t, cli, portBaseFor(t, id))
	key, signer := dockertest.RenterKey(t, "renter@test")
	spec := agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key,
		VolumeGB: 1, Limits: &agent.Limits{CPUs: 1, MemoryMiB: 512, ShmMiB: 64}}
	ctx := context.Background()

	acc := mustLaunch(t, l, spec)
	port := agent.SSHPort(l.PortBase, id)
	t.Run("the access details name host, port, user and the command", func(t *testing.T) {
		want := agent.Access{Host: "127.0.0.1", Port: port, User: "root", Command: fmt.Sprintf("ssh -p %d root@127.0.0.1", port), Simulated: true, Container: true}
		if *acc != want {
			t.Errorf("access = %+v, want %+v", *acc, want)
		}
	})
	t.Run("the renter logs in with their key and writes to /workspace", func(t *testing.T) {
		out := mustSSH(t, port, signer, "echo hi > /workspace/f && nproc && id -u")
		lines := strings.Fields(out)
		if len(lines) != 2 || lines[1] != "0" {
			t.Errorf("output %q, want nproc and uid 0", out)
		}
		if n, err := strconv.Atoi(lines[0]); err != nil || n < 1 {
			t.Errorf("nproc = %q", lines[0])
		}
	})
	t.Run("another key is refused", func(t *testing.T) {
		_, other := dockertest.RenterKey(t, "renter@test")
		if _, err := sshRun(port, other, "true"); err == nil {
			t.Error("a key that is not the renter's logged in")
		}
	})
	t.Run("the container has the limits and no privileges beyond the list", func(t *testing.T) {
		info, err := cli.ContainerInspect(ctx, docker.ContainerName(id))
		if err != nil {
			t.Fatal(err)
		}
		h := info.HostConfig
		if h.NanoCPUs != 1e9 || h.Memory != 512<<20 || h.ShmSize != 64<<20 {
			t.Errorf("NanoCPUs %d, Memory %d, ShmSize %d; want 1 CPU, 512 MiB, 64 MiB", h.NanoCPUs, h.Memory, h.ShmSize)
		}
		if h.Privileged || !slices.Equal(h.CapDrop, []string{"CAP_ALL"}) && !slices.Equal(h.CapDrop, []string{"ALL"}) {
			t.Errorf("privileged %v, CapDrop %v; want unprivileged, all dropped", h.Privileged, h.CapDrop)
		}
		if !slices.Contains(h.SecurityOpt, "no-new-privileges") {
			t.Errorf("SecurityOpt = %v", h.SecurityOpt)
		}
		if h.RestartPolicy.Name != container.RestartPolicyUnlessStopped {
			t.Errorf("restart policy %q", h.RestartPolicy.Name)
		}
		if len(h.DeviceRequests) != 0 {
			t.Errorf("a simulated agent's container has device requests %+v", h.DeviceRequests)
		}
		if info.Config.Labels[docker.LabelSimulated] != "true" || info.Config.Labels[docker.LabelWorkspace] != ws {
			t.Errorf("labels = %v", info.Config.Labels)
		}
		b := h.PortBindings["22/tcp"]
		if len(b) != 1 || b[0].HostPort != strconv.Itoa(port) {
			t.Errorf("port bindings = %v", h.PortBindings)
		}
		// The kernel enforces the memory limit (cgroup v1 or v2).
		mem := mustSSH(t, port, signer, "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes")
		if mem != strconv.Itoa(512<<20) {
			t.Errorf("memory limit in the container = %q", mem)
		}
	})
	t.Run("the launcher lists the image for heartbeats", func(t *testing.T) {
		images, err := l.LocalImages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(images, func(i agent.LocalImage) bool { return slices.Contains(i.Refs, l.Image) && i.SizeBytes > 0 }) {
			t.Errorf("local images %+v lack %s", images, l.Image)
		}
	})

	if err := l.Stop(ctx, agent.StopSpec{RentalID: id, WorkspaceID: ws}); err != nil {
		t.Fatal(err)
	}
	t.Run("stop removes the container and keeps the volume", func(t *testing.T) {
		containerGone(t, cli, id)
		v, err := cli.VolumeInspect(ctx, docker.VolumeName(ws, id))
		if err != nil {
			t.Fatalf("volume after stop: %v", err)
		}
		if v.Labels[docker.LabelWorkspace] != ws {
			t.Errorf("volume labels = %v", v.Labels)
		}
		if err := l.Stop(ctx, agent.StopSpec{RentalID: id, WorkspaceID: ws}); err != nil {
			t.Errorf("a second stop: %v", err)
		}
	})

	mustLaunch(t, l, spec)
	t.Run("a launch after the stop finds the file again", func(t *testing.T) {
		if out := mustSSH(t, port, signer, "cat /workspace/f"); out != "hi" {
			t.Errorf("/workspace/f = %q, want hi", out)
		}
	})

	if err := l.DeleteVolume(ctx, agent.VolumeSpec{RentalID: id, WorkspaceID: ws}); err != nil {
		t.Fatal(err)
	}
	t.Run("delete_volume removes the container and the volume", func(t *testing.T) {
		containerGone(t, cli, id)
		if _, err := cli.VolumeInspect(ctx, docker.VolumeName(ws, id)); !cerrdefs.IsNotFound(err) {
			t.Errorf("volume after delete: err = %v, want not found", err)
		}
		if err := l.DeleteVolume(ctx, agent.VolumeSpec{RentalID: id, WorkspaceID: ws}); err != nil {
			t.Errorf("a second delete: %v", err)
		}
	})
}

// Two nodes of a shared-storage datacentre mount the same volume root:
// a workspace written on one is there on the other.
func TestDockerSharedVolumeRoot(t *testing.T) {
	cli := dockertest.Client(t)
	id := uniqueID(t)
	ws := "t" + strconv.FormatInt(id, 10)
	cleanupRental(t, cli, id, ws)
	root := t.TempDir()
	a := dockerLauncher(t, cli, portBaseFor(t, id))
	a.VolumeRoot = root
	b := dockerLauncher(t, cli, portBaseFor(t, id))
	b.VolumeRoot = root
	if a.PortBase == b.PortBase {
		b.PortBase++
	}
	key, signer := dockertest.RenterKey(t, "renter@test")
	spec := agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key}
	ctx := context.Background()

	mustLaunch(t, a, spec)
	mustSSH(t, agent.SSHPort(a.PortBase, id), signer, "echo from-a > /workspace/f")
	if err := a.Stop(ctx, agent.StopSpec{RentalID: id, WorkspaceID: ws}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, ws))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("workspace directory: %v, mode %v; want 0700", err, fi.Mode())
	}

	mustLaunch(t, b, spec)
	if out := mustSSH(t, agent.SSHPort(b.PortBase, id), signer, "cat /workspace/f"); out != "from-a" {
		t.Errorf("node B reads %q, want node A's file", out)
	}
	if b.SharedVolumeRoot() != root {
		t.Errorf("SharedVolumeRoot = %q", b.SharedVolumeRoot())
	}

	if err := b.DeleteVolume(ctx, agent.VolumeSpec{RentalID: id, WorkspaceID: ws}); err != nil {
		t.Fatal(err)
	}
	containerGone(t, cli, id)
	if _, err := os.Stat(filepath.Join(root, ws)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("workspace directory after delete: %v, want gone", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("the volume root itself: %v", err)
	}

	t.Run("a volume root that is not mounted fails the launch", func(t *testing.T) {
		c := dockerLauncher(t, cli, portBaseFor(t, id))
		c.VolumeRoot = filepath.Join(root, "not-mounted")
		_, err := c.Launch(ctx, spec)
		if err == nil || !strings.Contains(err.Error(), "shared storage mounted") {
			t.Errorf("err = %v", err)
		}
		if _, err := os.Stat(c.VolumeRoot); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the launcher made the missing root: %v", err)
		}
	})
}

func TestDockerLaunchFailures(t *testing.T) {
	cli := dockertest.Client(t)
	base := dockertest.Image(t)
	key, _ := dockertest.RenterKey(t, "renter@test")
	ctx := context.Background()
	launch := func(t *testing.T, l *docker.Launcher, spec agent.LaunchSpec) error {
		t.Helper()
		spec.RentalID = uniqueID(t)
		spec.WorkspaceID = "t" + strconv.FormatInt(spec.RentalID, 10)
		spec.SSHPublicKey = key
		if spec.GPUUUIDs == nil && !spec.NoGPU {
			spec.GPUUUIDs = []string{"GPU-sim-0"}
		}
		cleanupRental(t, cli, spec.RentalID, spec.WorkspaceID)
		l.PortBase = portBaseFor(t, spec.RentalID)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		_, err := l.Launch(cctx, spec)
		t.Logf("launch error: %v", err)
		if err != nil {
			containerGone(t, cli, spec.RentalID)
		}
		return err
	}

	t.Run("a network that lets containers reach each other is refused", func(t *testing.T) {
		name := "suanli-icc-" + strconv.FormatInt(uniqueID(t), 10)
		if _, err := cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.NetworkRemove(context.Background(), name) })
		for _, nw := range []string{name, "bridge"} {
			l := dockerLauncher(t, cli, 0)
			l.Network = nw
			err := launch(t, l, agent.LaunchSpec{})
			if err == nil || !strings.Contains(err.Error(), "lets containers reach each other") {
				t.Errorf("network %s: err = %v, want it refused", nw, err)
			}
		}
	})

	t.Run("an image without sshd fails naming it, with the container's log", func(t *testing.T) {
		noSSHD := derivedImage(t, cli, base, []string{"rm", "-f", "/usr/sbin/sshd"}, container.Config{})
		l := dockerLauncher(t, cli, 0)
		err := launch(t, l, agent.LaunchSpec{Image: noSSHD})
		if err == nil || !strings.Contains(err.Error(), "image has no sshd") || !strings.Contains(err.Error(), "log:") {
			t.Errorf("err = %v, want image has no sshd with the log", err)
		}
	})

	t.Run("a pull that cannot reach the registry fails with the reason", func(t *testing.T) {
		l := dockerLauncher(t, cli, 0)
		const ref = "127.0.0.1:1/suanli/none:1"
		err := launch(t, l, agent.LaunchSpec{Image: ref})
		if err == nil || !strings.Contains(err.Error(), "pull "+ref+": ") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("err = %v, want the pull's reason", err)
		}
	})

	t.Run("an image for a newer CUDA than the driver's is refused naming both", func(t *testing.T) {
		cuda := derivedImage(t, cli, base, []string{"true"}, container.Config{Env: []string{"CUDA_VERSION=12.8"}})
		l := dockerLauncher(t, cli, 0)
		l.DriverCUDA = func() string { return "12.4" }
		err := launch(t, l, agent.LaunchSpec{Image: cuda})
		if err == nil || !strings.Contains(err.Error(), "image needs CUDA 12.8, this node's driver supports CUDA 12.4") {
			t.Errorf("err = %v, want both CUDA versions named", err)
		}
		images, err := l.LocalImages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(images, func(i agent.LocalImage) bool { return slices.Contains(i.Refs, cuda) && i.CUDAVersion == "12.8" }) {
			t.Errorf("local images %+v: want %s with CUDA 12.8", images, cuda)
		}
		t.Run("a driver as new as the image runs it", func(t *testing.T) {
			l.DriverCUDA = func() string { return "12.8" }
			if err := launch(t, l, agent.LaunchSpec{Image: cuda}); err != nil {
				t.Error(err)
			}
		})
	})

	t.Run("an image made to run as another user still gets root's sshd", func(t *testing.T) {
		nobody := derivedImage(t, cli, base, []string{"true"}, container.Config{User: "nobody"})
		if err := launch(t, dockerLauncher(t, cli, 0), agent.LaunchSpec{Image: nobody}); err != nil {
			t.Error(err)
		}
	})

	t.Run("a real GPU launch asks the daemon for exactly the rented GPUs", func(t *testing.T) {
		// The test daemon has no NVIDIA runtime, so it refuses the device
		// request; a real node's hands the container those GPUs.
		l := dockerLauncher(t, cli, 0)
		l.Simulated = false
		err := launch(t, l, agent.LaunchSpec{GPUUUIDs: []string{"GPU-aaaa", "GPU-bbbb"}})
		if err == nil || !strings.Contains(err.Error(), "nvidia") {
			t.Errorf("err = %v, want the daemon refusing the nvidia device request", err)
		}
		t.Run("without GPUs (无卡模式) the same launcher starts the container", func(t *testing.T) {
			if err := launch(t, l, agent.LaunchSpec{NoGPU: true}); err != nil {
				t.Error(err)
			}
		})
	})
}

// BenchmarkDockerLaunch measures, with the image cached: a first launch
// until the renter's first successful SSH login, and a stop followed by a
// launch again until the login. Run with -benchtime=10x; it reports p50
// and p90 in ms.
func BenchmarkDockerLaunch(b *testing.B) {
	cli := dockertest.Client(b)
	key, signer := dockertest.RenterKey(b, "renter@test")
	ctx := context.Background()
	login := func(b *testing.B, port int) {
		if _, err := sshRun(port, signer, "true"); err != nil {
			b.Fatal(err)
		}
	}
	report := func(b *testing.B, d []time.Duration) {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		b.ReportMetric(float64(d[len(d)/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(d[len(d)*9/10].Milliseconds()), "p90-ms")
	}

	b.Run("launch-to-ssh", func(b *testing.B) {
		var d []time.Duration
		for b.Loop() {
			id := uniqueID(b)
			ws := "t" + strconv.FormatInt(id, 10)
			cleanupRental(b, cli, id, ws)
			l := dockerLauncher(b, cli, portBaseFor(b, id))
			start := time.Now()
			mustLaunch(b, l, agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key})
			login(b, agent.SSHPort(l.PortBase, id))
			d = append(d, time.Since(start))
			if err := l.Stop(ctx, agent.StopSpec{RentalID: id}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, d)
	})

	b.Run("stop-launch-to-ssh", func(b *testing.B) {
		id := uniqueID(b)
		ws := "t" + strconv.FormatInt(id, 10)
		cleanupRental(b, cli, id, ws)
		l := dockerLauncher(b, cli, portBaseFor(b, id))
		spec := agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key}
		mustLaunch(b, l, spec)
		var d []time.Duration
		for b.Loop() {
			start := time.Now()
			if err := l.Stop(ctx, agent.StopSpec{RentalID: id}); err != nil {
				b.Fatal(err)
			}
			mustLaunch(b, l, spec)
			login(b, agent.SSHPort(l.PortBase, id))
			d = append(d, time.Since(start))
		}
		report(b, d)
	})
}

// A stop with a grace (an interruption) gives every process of the
// container SIGTERM, the renter's own jobs too, and the time to save their
// work to /workspace before the container ends; the files are there on
// the next launch.
func TestDockerStopGivesGrace(t *testing.T) {
	cli := dockertest.Client(t)
	id := uniqueID(t)
	ws := "t" + strconv.FormatInt(id, 10)
	cleanupRental(t, cli, id, ws)
	l := dockerLauncher(t, cli, portBaseFor(t, id))
	key, signer := dockertest.RenterKey(t, "renter@test")
	spec := agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key, VolumeGB: 1, Limits: &agent.Limits{CPUs: 1, MemoryMiB: 256, ShmMiB: 64}}
	ctx := context.Background()
	mustLaunch(t, l, spec)
	port := agent.SSHPort(l.PortBase, id)
	// A "training job" that saves a checkpoint when told to stop.
	mustSSH(t, port, signer, `nohup sh -c 'trap "echo saved > /workspace/checkpoint; exit 0" TERM; echo started > /workspace/job; while :; do sleep 1; done' >/dev/null 2>&1 &
		while [ ! -s /workspace/job ]; do sleep 0.1; done; echo ok`)
	if err := l.Stop(ctx, agent.StopSpec{RentalID: id, WorkspaceID: ws, Grace: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	containerGone(t, cli, id)
	mustLaunch(t, l, spec)
	if out := mustSSH(t, port, signer, "cat /workspace/checkpoint 2>&1"); out != "saved" {
		t.Errorf("/workspace/checkpoint = %q: the job got no SIGTERM and grace before the container ended", out)
	}
}
