// Package docker is the node agent's docker launcher: each rental a
// container started through the Docker Engine API (the official Go SDK,
// with API version negotiation, so Debian's 20.10 daemon works), with its
// GPUs, sshd, its workspace volume and its limits.
package docker

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"

	"suanli/agent"
)

// Labels on the containers and volumes the docker launcher makes.
const (
	LabelRental    = "suanli.rental"
	LabelWorkspace = "suanli.workspace"
	// LabelSimulated is "true" on a container of a simulated agent: it
	// runs for real, but without GPUs.
	LabelSimulated = "suanli.simulated"
)

// DefaultReadyTimeout is how long a launched container's sshd may take
// to answer before the launch fails.
const DefaultReadyTimeout = time.Minute

// DefaultJupyterTimeout is how long a launched container's Jupyter may
// take to answer once sshd does.
const DefaultJupyterTimeout = time.Minute

// containerCaps are the only capabilities a rental's container keeps
// (all others are dropped): what sshd needs (privilege separation, ptys,
// port 22, the login record) and what root's ordinary work needs (owning
// and reading every file, signalling its own processes). No GPU work
// needs more; the NVIDIA runtime sets the devices up from outside.
var containerCaps = []string{
	"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL",
	"NET_BIND_SERVICE", "SYS_CHROOT", "AUDIT_WRITE",
}

// Launcher runs each rental as a container through the Docker
// Engine API: the renter's image with exactly the rented GPUs (a device
// request for their UUIDs: the NVIDIA Container Toolkit on the host),
// sshd started by an init the launcher copies in (so any image with
// OpenSSH's sshd works), port 22 published on the host, and the
// workspace at /workspace in a volume that outlives the container.
type Launcher struct {
	// Client talks to the Docker daemon (NewClient).
	Client *client.Client
	// Image is the provider's image for a task that names none.
	Image string
	// Host is the public host name or IP renters connect to.
	Host string
	// BindIP is the host address SSH ports are published on ("" all
	// interfaces).
	BindIP string
	// PortBase is the first SSH port (agent.DefaultPortBase if zero); see SSHPort.
	PortBase int
	// VolumeRoot, when set, is a directory every node of the datacentre
	// mounts (shared storage): a workspace is the directory
	// VolumeRoot/<workspace id>. Empty, a workspace is the docker volume
	// suanli-ws-<workspace id> on this node's disk.
	VolumeRoot string
	// Simulated runs real containers without GPUs (a simulated agent):
	// no device request, labelled simulated, and the access details say so.
	Simulated bool
	// DriverCUDA returns the CUDA version the node's driver supports
	// (NVML, e.g. "12.4"; "" unknown): an image built for a newer CUDA is
	// refused. Nil skips the check.
	DriverCUDA func() string
	// Namespace, when set, goes into container names
	// (suanli-<namespace>-r<id>): rental ids are unique within one
	// marketplace only, so agents of two marketplaces (or two test runs)
	// sharing one daemon need different namespaces.
	Namespace string
	// ReadyTimeout bounds the wait for sshd (DefaultReadyTimeout if zero).
	ReadyTimeout time.Duration
	// JupyterTimeout bounds the wait, after sshd answers, for the Jupyter
	// of an image that has one (DefaultJupyterTimeout if zero). One that
	// does not answer in time fails nothing: the launch reports no Jupyter.
	JupyterTimeout time.Duration
	// Network is the Docker network containers run on (DefaultNetwork
	// if empty), made on first use with inter-container traffic off.
	Network string
	Logger  *slog.Logger

	// workloads caches what the tunnel needs of running containers.
	workloads workloadCache

	mu sync.Mutex
	// cuda caches each image's CUDA_VERSION by image id, for heartbeats.
	cuda map[string]string
}

// NewClient connects to the Docker daemon at host (a URL such as
// unix:///var/run/docker.sock or tcp://10.0.0.5:2376), or, when host is
// empty, where DOCKER_HOST says, else the default socket. The API
// version is negotiated, so an older daemon (20.10, API 1.41) works.
func NewClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return c, nil
}

// Name implements Launcher.
func (*Launcher) Name() string { return "docker" }

// SharedVolumeRoot implements SharedStorage.
func (d *Launcher) SharedVolumeRoot() string { return d.VolumeRoot }

// ContainerName is the container that runs a rental (with no Namespace).
func ContainerName(rentalID int64) string {
	return "suanli-r" + strconv.FormatInt(rentalID, 10)
}

// ContainerName is the container that runs a rental on this launcher.
func (d *Launcher) ContainerName(rentalID int64) string {
	if d.Namespace == "" {
		return ContainerName(rentalID)
	}
	return "suanli-" + d.Namespace + "-r" + strconv.FormatInt(rentalID, 10)
}

// VolumeName is the docker volume that holds a workspace (without a
// --volume-root).
func VolumeName(workspaceID string, rentalID int64) string {
	return "suanli-ws-" + agent.WorkspaceName(workspaceID, rentalID)
}

// dockerName is what docker accepts in container and volume names; it is
// also a safe single path element (no slash, no leading dot).
var dockerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ValidName reports whether s may be part of a container name (and a
// Namespace).
func ValidName(s string) bool { return dockerName.MatchString(s) }

func (d *Launcher) log() *slog.Logger {
	return cmp.Or(d.Logger, slog.Default()).With("component", "docker")
}

// Launch implements Launcher. It returns once sshd in the container
// answers on the published port; a launch that fails leaves no container.
func (d *Launcher) Launch(ctx context.Context, spec agent.LaunchSpec) (*agent.Access, error) {
	if d.Client == nil {
		return nil, errors.New("docker launcher: no Docker client")
	}
	if d.Host == "" {
		return nil, errors.New("docker launcher: Host (the address renters connect to) is not set")
	}
	gpus := spec.GPUUUIDs
	if spec.NoGPU {
		gpus = nil
	} else if len(gpus) == 0 {
		return nil, errors.New("docker launcher: no GPUs to launch on")
	}
	for _, u := range gpus {
		if !dockerName.MatchString(u) {
			return nil, fmt.Errorf("docker launcher: GPU UUID %q is not usable in a device request", u)
		}
	}
	ws := agent.WorkspaceName(spec.WorkspaceID, spec.RentalID)
	if !dockerName.MatchString(ws) {
		return nil, fmt.Errorf("docker launcher: workspace id %q is not a valid volume name", spec.WorkspaceID)
	}
	if err := agent.CheckLaunchEnv(spec.Env, spec.Onstart); err != nil {
		return nil, fmt.Errorf("docker launcher: %w", err)
	}
	ref := cmp.Or(spec.Image, d.Image)
	if ref == "" {
		return nil, errors.New("docker launcher: the task names no image and the agent has no --image")
	}

	img, err := d.ensureImage(ctx, ref, spec.RegistryAuth, spec.PullAlways, spec.Progress)
	if err != nil {
		return nil, err
	}
	if !spec.NoGPU && d.DriverCUDA != nil {
		if err := cudaCompatible(imageCUDA(img), d.DriverCUDA()); err != nil {
			return nil, fmt.Errorf("docker launcher: %w (image %s)", err, ref)
		}
	}

	name := d.ContainerName(spec.RentalID)
	// A container left from an earlier launch of this rental (one that
	// failed half way, or one from before the node restarted) holds the
	// name and the port. The workspace is in the volume: removing the
	// container loses nothing.
	if err := d.removeContainer(ctx, name); err != nil {
		return nil, err
	}
	if err := d.ensureNetwork(ctx); err != nil {
		return nil, err
	}
	d.forget(spec.RentalID)
	mnt, err := d.workspaceMount(ctx, ws)
	if err != nil {
		return nil, err
	}

	port := agent.SSHPort(cmp.Or(d.PortBase, agent.DefaultPortBase), spec.RentalID)
	cfg, host := d.containerConfig(ctx, spec, ref, ws, gpus, port, mnt)
	id, err := d.create(ctx, cfg, host, name)
	if err != nil {
		return nil, err
	}
	token, err := jupyterToken()
	if err != nil {
		return nil, err
	}
	jc := jupyterConf{Token: token, BaseURL: agent.JupyterBaseURL(spec.RentalID)}
	if err := d.start(ctx, id, ref, spec.SSHPublicKey, jc, spec.Onstart, port); err != nil {
		// Nothing is left behind: the port and the name are free for the
		// next try, here or after the server moved the rental.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := d.removeContainer(cctx, id); rerr != nil {
			d.log().Warn("removing the failed container", "container", name, "err", rerr)
		}
		return nil, err
	}
	acc := &agent.Access{Host: d.Host, Port: port, User: "root", Command: agent.SSHCommand("root", d.Host, port), Simulated: d.Simulated, Container: true}
	kind, err := d.waitJupyter(ctx, id)
	if err != nil {
		return nil, err
	}
	if kind != "" {
		acc.Jupyter = &agent.Jupyter{Port: JupyterPort, Kind: kind}
	}
	return acc, nil
}

// jupyterToken is a fresh random token for a rental's Jupyter.
func jupyterToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("docker launcher: a Jupyter token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// waitJupyter waits until the container's Jupyter answers with its token
// and returns its kind (agent.JupyterLab or agent.JupyterNotebook), or ""
// at once when the image has no Jupyter. It polls the probe the init put
// in the container every 250 ms (each probe starts a Python), up to
// JupyterTimeout; one that does not
// answer by then, or keeps exiting, is reported as none, with a warning
// (the renter still has SSH). Only the launch's context ending fails it.
func (d *Launcher) waitJupyter(ctx context.Context, id string) (string, error) {
	limit := cmp.Or(d.JupyterTimeout, DefaultJupyterTimeout)
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		out, code, err := d.exec(wctx, id, "/bin/sh", initDir+"/jupyter-ready")
		switch {
		case err == nil && code == 0:
			switch kind := strings.TrimSpace(out); kind {
			case agent.JupyterLab, agent.JupyterNotebook:
				return kind, nil
			default:
				d.log().Warn("the Jupyter probe named no known kind; reporting none", "container", id, "kind", kind)
				return "", nil
			}
		case err == nil && code == 3:
			return "", nil
		case err == nil && code == 4:
			d.log().Warn("Jupyter keeps exiting; the rental runs without it", "container", id, "log", d.logTail(id))
			return "", nil
		case cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err):
			// The container stopped (or went) after sshd answered: no
			// probe will answer; the next heartbeat and task see it.
			d.log().Warn("the container stopped before Jupyter answered", "container", id, "err", err)
			return "", nil
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("probe status %d: %s", code, tail([]byte(out)))
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return "", context.Cause(ctx)
			}
			d.log().Warn("Jupyter did not answer in time; the rental runs without it", "container", id, "timeout", limit, "last", last, "log", d.logTail(id))
			return "", nil
		case <-tick.C:
		}
	}
}

// exec runs cmd as root in the container and returns its combined output
// and exit status.
func (d *Launcher) exec(ctx context.Context, id string, cmd ...string) (string, int, error) {
	ex, err := d.Client.ContainerExecCreate(ctx, id, container.ExecOptions{User: "0", Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", 0, fmt.Errorf("docker launcher: exec in the container: %w", err)
	}
	att, err := d.Client.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", 0, fmt.Errorf("docker launcher: attaching to an exec: %w", err)
	}
	defer att.Close()
	// The read does not watch ctx; closing the connection ends it.
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		return out.String(), 0, fmt.Errorf("docker launcher: reading an exec's output: %w", err)
	}
	ins, err := d.Client.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return out.String(), 0, fmt.Errorf("docker launcher: inspecting an exec: %w", err)
	}
	return out.String(), ins.ExitCode, nil
}

// readJupyterToken is the token of the Jupyter running in a container,
// read back from the container (it is on the node only: the server never
// gets it), for the agent's end of the tunnel to add to the requests it
// passes on. It survives an agent restart with the container.
func (d *Launcher) readJupyterToken(ctx context.Context, containerID string) (string, error) {
	rc, _, err := d.Client.CopyFromContainer(ctx, containerID, jupyterTokenPath)
	if err != nil {
		return "", fmt.Errorf("docker launcher: reading the Jupyter token: %w", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		return "", fmt.Errorf("docker launcher: reading the Jupyter token: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(tr, 1024))
	if err != nil {
		return "", fmt.Errorf("docker launcher: reading the Jupyter token: %w", err)
	}
	return string(b), nil
}

// containerConfig is the container for spec: the init as entrypoint,
// the GPUs, the published SSH port, the workspace, the limits, and no
// privileges beyond containerCaps.
func (d *Launcher) containerConfig(ctx context.Context, spec agent.LaunchSpec, ref, ws string, gpus []string, port int, mnt mount.Mount) (*container.Config, *container.HostConfig) {
	labels := map[string]string{
		LabelRental:    strconv.FormatInt(spec.RentalID, 10),
		LabelWorkspace: ws,
	}
	if d.Simulated {
		labels[LabelSimulated] = "true"
	}
	// The NVIDIA runtime also reads NVIDIA_VISIBLE_DEVICES, which CUDA
	// images set to "all": it is set to exactly the rented GPUs, or to
	// none, so that a host whose default runtime is nvidia hands out no
	// other GPU.
	visible := "void"
	var devices []container.DeviceRequest
	if len(gpus) > 0 {
		visible = strings.Join(gpus, ",")
		if !d.Simulated {
			devices = []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: gpus, Capabilities: [][]string{{"gpu"}}}}
		}
	}
	sshPort := nat.Port("22/tcp")
	cfg := &container.Config{
		Image:    ref,
		Hostname: d.ContainerName(spec.RentalID),
		// The init installs root's key and starts sshd, which needs root;
		// an image made to run as another user (USER jovyan) is run as
		// root all the same.
		User:         "0",
		Entrypoint:   []string{"/bin/sh", initPath},
		Cmd:          []string{},
		Env:          d.containerEnv(spec, visible, gpus),
		ExposedPorts: nat.PortSet{sshPort: struct{}{}},
		Labels:       labels,
		WorkingDir:   "/workspace",
	}
	host := &container.HostConfig{
		PortBindings:  nat.PortMap{sshPort: {{HostIP: d.BindIP, HostPort: strconv.Itoa(port)}}},
		Mounts:        []mount.Mount{mnt},
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped},
		CapDrop:       []string{"ALL"},
		CapAdd:        containerCaps,
		SecurityOpt:   []string{"no-new-privileges"},
		NetworkMode:   container.NetworkMode(d.network()),
		Resources:     container.Resources{DeviceRequests: devices},
	}
	if l := spec.Limits; l != nil {
		cpus := l.CPUs
		if n := d.hostCPUs(ctx); n > 0 && cpus > n {
			// An offer selling more vCPUs than the host has would make the
			// daemon refuse the container: run it on all of them, and say so.
			d.log().Warn("offer's vCPUs exceed the host's; limiting the container to the host's", "rental", spec.RentalID, "asked", cpus, "host", n)
			cpus = n
		}
		host.NanoCPUs = int64(cpus) * 1e9
		host.Memory = l.MemoryMiB << 20
		host.ShmSize = l.ShmMiB << 20
	}
	if spec.VolumeGB > 0 {
		// The container's own layer (what the renter installs outside
		// /workspace) gets the same allowance as the workspace, where the
		// storage driver can enforce one.
		host.StorageOpt = map[string]string{"size": strconv.Itoa(spec.VolumeGB) + "G"}
	}
	return cfg, host
}

// disabledNVIDIAFeatures turn off the NVIDIA runtime's features that
// would hand a container host devices every tenant shares (NVSwitch,
// InfiniBand, GPUDirect Storage and RDMA). The container's environment
// overrides the image's ENV, so an image that sets one to "enabled"
// gets none of them either.
var disabledNVIDIAFeatures = []string{
	"NVIDIA_GDRCOPY=disabled", "NVIDIA_GDS=disabled", "NVIDIA_MOFED=disabled", "NVIDIA_NVSWITCH=disabled",
}

// containerEnv is the container's environment: the renter's variables,
// then the launcher's own (the GPUs for the NVIDIA runtime, its shared
// devices turned off, the verifier's), which no renter's variable may
// replace: reserved names (agent.ReservedEnvName) are skipped, and
// logged. The image's ENV stays under both (a renter's PATH replaces
// the image's, as docker run -e does). The init passes all of it on to
// login shells.
func (d *Launcher) containerEnv(spec agent.LaunchSpec, visible string, gpus []string) []string {
	env, skipped := agent.RenterEnv(spec.Env)
	if len(skipped) > 0 {
		d.log().Warn("the renter's environment names variables the launcher sets itself; skipping them", "rental", spec.RentalID, "names", skipped)
	}
	env = append(env, "NVIDIA_VISIBLE_DEVICES="+visible)
	env = append(env, disabledNVIDIAFeatures...)
	return append(env, verifyEnv(spec, d.Simulated, gpus)...)
}

// create makes the container. A daemon whose storage cannot enforce a
// quota (overlay2 is only able to on xfs with pquota) refuses the size;
// the container is then made without one.
func (d *Launcher) create(ctx context.Context, cfg *container.Config, host *container.HostConfig, name string) (string, error) {
	resp, err := d.Client.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil && host.StorageOpt != nil && strings.Contains(err.Error(), "storage-opt") {
		d.log().Debug("the storage driver enforces no quota; creating the container without one", "container", name, "err", err)
		host.StorageOpt = nil
		resp, err = d.Client.ContainerCreate(ctx, cfg, host, nil, nil, name)
	}
	if err != nil {
		return "", fmt.Errorf("docker launcher: creating %s: %w", name, err)
	}
	return resp.ID, nil
}

// start copies the init, the key, the Jupyter token and the renter's
// on-start script into the container, starts it, and waits until its
// sshd answers (not for the on-start script, which the init runs beside
// sshd).
func (d *Launcher) start(ctx context.Context, id, ref, key string, jc jupyterConf, onstart string, port int) error {
	tarball, err := initArchive(key, jc, onstart)
	if err != nil {
		return err
	}
	if err := d.Client.CopyToContainer(ctx, id, "/", bytes.NewReader(tarball), container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("docker launcher: copying the init into the container: %w", err)
	}
	if err := d.Client.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("docker launcher: starting the container: %w", err)
	}
	return d.waitSSH(ctx, id, ref, port)
}

// waitSSH waits until sshd greets on the published port, polling every
// 50 ms up to ReadyTimeout. A connection is not enough: Docker's port
// proxy accepts one before anything listens in the container, so it
// waits for sshd's "SSH-" greeting. A container that exits (or restarts)
// meanwhile fails the launch with its log's tail.
func (d *Launcher) waitSSH(ctx context.Context, id, ref string, port int) error {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(d.ReadyTimeout, DefaultReadyTimeout))
	defer cancel()
	addr := net.JoinHostPort(cmp.Or(d.BindIP, "127.0.0.1"), strconv.Itoa(port))
	if d.BindIP == "0.0.0.0" || d.BindIP == "::" {
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := d.Client.ContainerInspect(ctx, id)
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("docker launcher: inspecting the container: %w", err)
		}
		if err == nil && info.State != nil && (info.State.Restarting || info.RestartCount > 0 || (!info.State.Running && info.State.Status != "created")) {
			logs := d.logTail(id)
			if strings.Contains(logs, noSSHDMarker) {
				return fmt.Errorf("docker launcher: image has no sshd (%s); %s", ref, logs)
			}
			return fmt.Errorf("docker launcher: the container exited (code %d) before sshd answered: %s", info.State.ExitCode, logs)
		}
		if sshGreets(ctx, addr) {
			return nil
		}
		select {
		case <-ctx.Done():
			if parent := context.Cause(ctx); errors.Is(parent, context.Canceled) {
				return parent
			}
			return fmt.Errorf("docker launcher: sshd did not answer on port %d within %s: %s", port, cmp.Or(d.ReadyTimeout, DefaultReadyTimeout), d.logTail(id))
		case <-tick.C:
		}
	}
}

// sshGreets reports whether an SSH server answers at addr with its
// version line.
func sshGreets(ctx context.Context, addr string) bool {
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 4)
	n := 0
	for n < len(buf) {
		m, err := c.Read(buf[n:])
		n += m
		if err != nil {
			break
		}
	}
	return string(buf[:n]) == "SSH-"
}

// logTail is the end of the container's log, where the reason it failed is.
func (d *Launcher) logTail(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := d.Client.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil && out.Len() == 0 {
		return "(no log: " + err.Error() + ")"
	}
	// A container that restarted says the same again: once is enough.
	var lines []string
	for line := range strings.Lines(out.String()) {
		if line = strings.TrimRight(line, "\r\n"); len(lines) == 0 || lines[len(lines)-1] != line {
			lines = append(lines, line)
		}
	}
	if s := tail([]byte(strings.Join(lines, "\n"))); s != "" {
		return "log: " + s
	}
	return "(empty log)"
}

// workspaceMount is the mount of workspace ws at /workspace: a directory
// under VolumeRoot (made if missing), or a labelled docker volume.
func (d *Launcher) workspaceMount(ctx context.Context, ws string) (mount.Mount, error) {
	if d.VolumeRoot != "" {
		dir, err := d.workspaceDir(ws)
		if err != nil {
			return mount.Mount{}, err
		}
		// The root itself must be there already: were the shared storage
		// not mounted, making it would put the files on this node's disk,
		// where no other node finds them.
		if fi, err := os.Stat(d.VolumeRoot); err != nil || !fi.IsDir() {
			return mount.Mount{}, fmt.Errorf("docker launcher: volume root %s is not a directory (is the shared storage mounted?): %v", d.VolumeRoot, err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return mount.Mount{}, fmt.Errorf("docker launcher: making the workspace directory: %w", err)
		}
		return mount.Mount{Type: mount.TypeBind, Source: dir, Target: "/workspace"}, nil
	}
	name := "suanli-ws-" + ws
	if _, err := d.Client.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: map[string]string{LabelWorkspace: ws}}); err != nil {
		return mount.Mount{}, fmt.Errorf("docker launcher: creating volume %s: %w", name, err)
	}
	return mount.Mount{Type: mount.TypeVolume, Source: name, Target: "/workspace"}, nil
}

// workspaceDir is ws's directory under VolumeRoot; a name that would
// reach outside it is refused.
func (d *Launcher) workspaceDir(ws string) (string, error) {
	root, err := filepath.Abs(d.VolumeRoot)
	if err != nil {
		return "", fmt.Errorf("docker launcher: volume root: %w", err)
	}
	dir := filepath.Join(root, ws)
	if !dockerName.MatchString(ws) || filepath.Dir(dir) != root {
		return "", fmt.Errorf("docker launcher: workspace id %q is not a directory name", ws)
	}
	return dir, nil
}

// removeContainer removes a container, running or not; one that is not
// there is removed already. Anonymous volumes an image declares go with
// it; named ones (the workspace) stay.
func (d *Launcher) removeContainer(ctx context.Context, nameOrID string) error {
	err := d.Client.ContainerRemove(ctx, nameOrID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress") {
		// Another remove of it runs (a stop task and the next launch of
		// the rental, say): wait for that one, bounded.
		err = d.waitRemoved(ctx, nameOrID)
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker launcher: removing %s: %w", nameOrID, err)
	}
	return nil
}

// waitRemoved waits, at most removeWait, until the container is gone.
func (d *Launcher) waitRemoved(ctx context.Context, nameOrID string) error {
	ctx, cancel := context.WithTimeout(ctx, removeWait)
	defer cancel()
	okC, errC := d.Client.ContainerWait(ctx, nameOrID, container.WaitConditionRemoved)
	select {
	case <-okC:
		return nil
	case err := <-errC:
		return err
	}
}

// removeWait bounds the wait for a removal another task started.
const removeWait = 30 * time.Second

// Stop implements Launcher: the container is removed, the workspace kept.
// With a grace, its processes first get SIGTERM (the image's stop signal)
// and the grace to end before they are killed.
func (d *Launcher) Stop(ctx context.Context, spec agent.StopSpec) error {
	if d.Client == nil {
		return errors.New("docker launcher: no Docker client")
	}
	d.forget(spec.RentalID)
	name := d.ContainerName(spec.RentalID)
	if spec.Grace > 0 {
		secs := int(spec.Grace / time.Second)
		if err := d.Client.ContainerStop(ctx, name, container.StopOptions{Timeout: &secs}); err != nil && !cerrdefs.IsNotFound(err) {
			d.log().Warn("graceful stop failed; removing", "container", name, "err", err)
		}
	}
	return d.removeContainer(ctx, name)
}

// DeleteVolume implements Launcher: the rental's container, if any,
// then the workspace's docker volume or its directory under VolumeRoot.
func (d *Launcher) DeleteVolume(ctx context.Context, spec agent.VolumeSpec) error {
	if d.Client == nil {
		return errors.New("docker launcher: no Docker client")
	}
	ws := agent.WorkspaceName(spec.WorkspaceID, spec.RentalID)
	if !dockerName.MatchString(ws) {
		return fmt.Errorf("docker launcher: workspace id %q is not a valid volume name", spec.WorkspaceID)
	}
	if spec.RentalID != 0 {
		if err := d.removeContainer(ctx, d.ContainerName(spec.RentalID)); err != nil {
			return err
		}
	}
	if d.VolumeRoot != "" {
		dir, err := d.workspaceDir(ws)
		if err != nil {
			return err
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("docker launcher: deleting the workspace: %w", err)
		}
		return nil
	}
	name := "suanli-ws-" + ws
	if err := d.Client.VolumeRemove(ctx, name, false); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker launcher: deleting volume %s: %w", name, err)
	}
	return nil
}

// tailBytes is how much of a container's log goes into an error.
const tailBytes = 2048

// tail is the end of a container's log, where the reason it failed is.
func tail(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > tailBytes {
		s = "…" + s[len(s)-tailBytes:]
	}
	return s
}

// hostCPUs is the number of CPUs the daemon reports (0 when it cannot be
// read): the most a container's CPU limit may be.
func (d *Launcher) hostCPUs(ctx context.Context) int {
	if d.Client == nil {
		return 0
	}
	info, err := d.Client.Info(ctx)
	if err != nil {
		return 0
	}
	return info.NCPU
}
