package docker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"suanli/agent/workload"
)

// DefaultNetwork is the Docker network rentals' containers run on: a
// bridge with inter-container traffic off, so that a container reaches
// no other renter's container, while this host (the agent's tunnel)
// reaches each one's ports.
const DefaultNetwork = "suanli-workloads"

// workloadTTL is how long what DialWorkload and JupyterToken learnt of a
// container (its address, its token) is used before the daemon is asked
// again: a proxied request should not cost an inspect each.
const workloadTTL = 5 * time.Second

// running is what the tunnel needs of a running container.
type running struct {
	id    string // container id
	ip    string // its address on the workloads network
	token string // its Jupyter token, read once per container ("" not yet)
	root  string // the host directory mounted at /workspace
	at    time.Time
}

// workloadCache remembers workloads by rental.
type workloadCache struct {
	mu sync.Mutex
	m  map[int64]running
}

func (d *Launcher) network() string { return cmp.Or(d.Network, DefaultNetwork) }

// iccOption is the bridge driver's switch for traffic between containers.
const iccOption = "com.docker.network.bridge.enable_icc"

// ensureNetwork makes the workloads network if the daemon lacks it, and
// refuses one without inter-container traffic off.
func (d *Launcher) ensureNetwork(ctx context.Context) error {
	name := d.network()
	if nw, err := d.Client.NetworkInspect(ctx, name, network.InspectOptions{}); err == nil {
		// One made otherwise (docker's default bridge, or by hand) may let
		// a renter's container reach the others' apps and Jupyter.
		if nw.Driver != "bridge" || nw.Options[iccOption] != "false" {
			return fmt.Errorf("docker launcher: network %s lets containers reach each other (driver %s, %s=%q); use a bridge made with -o %s=false, or a name the agent may make", name, nw.Driver, iccOption, nw.Options[iccOption], iccOption)
		}
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker launcher: inspecting network %s: %w", name, err)
	}
	_, err := d.Client.NetworkCreate(ctx, name, network.CreateOptions{
		Driver: "bridge",
		// Containers on it cannot reach each other; the host reaches them.
		Options: map[string]string{iccOption: "false"},
		Labels:  map[string]string{"suanli": "workloads"},
	})
	if err != nil && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("docker launcher: creating network %s: %w", name, err)
	}
	return nil
}

// running looks up the rental's running container (cached for
// workloadTTL); one that is not there or not running is os.ErrNotExist.
func (d *Launcher) running(ctx context.Context, rentalID int64) (running, error) {
	return d.lookup(ctx, rentalID, false)
}

// lookup is running, asking the daemon even within workloadTTL when
// fresh is set.
func (d *Launcher) lookup(ctx context.Context, rentalID int64, fresh bool) (running, error) {
	if d.Client == nil {
		return running{}, fmt.Errorf("docker launcher: no Docker client")
	}
	d.workloads.mu.Lock()
	w, ok := d.workloads.m[rentalID]
	d.workloads.mu.Unlock()
	if ok && !fresh && time.Since(w.at) < workloadTTL {
		return w, nil
	}
	info, err := d.Client.ContainerInspect(ctx, d.ContainerName(rentalID))
	if err != nil {
		d.forget(rentalID)
		if cerrdefs.IsNotFound(err) {
			return running{}, fmt.Errorf("docker launcher: rental %d: %w", rentalID, os.ErrNotExist)
		}
		return running{}, fmt.Errorf("docker launcher: inspecting the container: %w", err)
	}
	if info.State == nil || !info.State.Running || info.Config == nil || info.Config.Labels[LabelRental] != strconv.FormatInt(rentalID, 10) {
		d.forget(rentalID)
		return running{}, fmt.Errorf("docker launcher: rental %d is not running: %w", rentalID, os.ErrNotExist)
	}
	nw := running{id: info.ID, at: time.Now()}
	if ok && w.id == info.ID {
		nw.token = w.token
	}
	if info.NetworkSettings != nil {
		if ep := info.NetworkSettings.Networks[d.network()]; ep != nil {
			nw.ip = ep.IPAddress
		}
	}
	for _, m := range info.Mounts {
		if m.Destination == "/workspace" {
			nw.root = m.Source
		}
	}
	d.workloads.mu.Lock()
	if d.workloads.m == nil {
		d.workloads.m = map[int64]running{}
	}
	d.workloads.m[rentalID] = nw
	d.workloads.mu.Unlock()
	return nw, nil
}

func (d *Launcher) forget(rentalID int64) {
	d.workloads.mu.Lock()
	delete(d.workloads.m, rentalID)
	d.workloads.mu.Unlock()
}

// DialWorkload implements workload.Workloads: a connection to port of the
// rental's container, at its address on the workloads network.
//
// The container's address is asked for afresh (a new connection is rare:
// the tunnel's requests reuse them): an address cached for a container
// that went may already be another rental's.
func (d *Launcher) DialWorkload(ctx context.Context, rentalID int64, port int) (net.Conn, error) {
	w, err := d.lookup(ctx, rentalID, true)
	if err != nil {
		return nil, err
	}
	if w.ip == "" {
		return nil, fmt.Errorf("docker launcher: rental %d's container is not on network %s (launched before the tunnel; stop and start it): %w", rentalID, d.network(), os.ErrNotExist)
	}
	c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", net.JoinHostPort(w.ip, strconv.Itoa(port)))
	if err != nil {
		// The container may have been replaced: look again next time.
		d.forget(rentalID)
		return nil, err
	}
	return c, nil
}

// JupyterToken implements workload.Workloads: the token of the Jupyter in
// the rental's container, read back from it once per container.
func (d *Launcher) JupyterToken(ctx context.Context, rentalID int64) (string, error) {
	w, err := d.running(ctx, rentalID)
	if err != nil {
		return "", err
	}
	if w.token != "" {
		return w.token, nil
	}
	tok, err := d.readJupyterToken(ctx, w.id)
	if err != nil {
		return "", err
	}
	d.workloads.mu.Lock()
	if cur, ok := d.workloads.m[rentalID]; ok && cur.id == w.id {
		cur.token = tok
		d.workloads.m[rentalID] = cur
	}
	d.workloads.mu.Unlock()
	return tok, nil
}

// shell starts bash as a login shell where the image has it, else sh:
// a login shell reads /etc/profile, which the init made pass the
// container's environment on.
const shell = `if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l`

// Terminal implements workload.Workloads: a login shell as root in
// /workspace, with a TTY (docker exec).
func (d *Launcher) Terminal(ctx context.Context, rentalID int64, size workload.TermSize) (workload.Terminal, error) {
	w, err := d.running(ctx, rentalID)
	if err != nil {
		return nil, err
	}
	cs := &[2]uint{size.Rows, size.Cols}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	pidFile := initDir + "/term-" + hex.EncodeToString(b) + ".pid"
	ex, err := d.Client.ContainerExecCreate(ctx, w.id, container.ExecOptions{
		User: "0", Tty: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		ConsoleSize: cs, Env: []string{"TERM=xterm-256color"}, WorkingDir: "/workspace",
		// The shell's pid (exec keeps it) is kept for the hang-up.
		Cmd: []string{"/bin/sh", "-c", "echo $$ > " + pidFile + "; " + shell},
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
			d.forget(rentalID)
			return nil, fmt.Errorf("docker launcher: rental %d: %w", rentalID, os.ErrNotExist)
		}
		return nil, fmt.Errorf("docker launcher: exec in the container: %w", err)
	}
	att, err := d.Client.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{Tty: true, ConsoleSize: cs})
	if err != nil {
		return nil, fmt.Errorf("docker launcher: attaching to the terminal: %w", err)
	}
	return &execTerminal{d: d, exec: ex.ID, container: w.id, pidFile: pidFile, att: att}, nil
}

// execTerminal is a shell started with docker exec and a TTY: with a
// TTY, what the hijacked connection carries is the screen as it is.
type execTerminal struct {
	d         *Launcher
	exec      string
	container string
	// pidFile holds the shell's pid in the container.
	pidFile string
	att     types.HijackedResponse
	once    sync.Once
}

func (t *execTerminal) Read(p []byte) (int, error) { return t.att.Reader.Read(p) }

func (t *execTerminal) Write(p []byte) (int, error) { return t.att.Conn.Write(p) }

// Close hangs the terminal up, as closing a terminal window does: the
// shell gets SIGHUP, and passes it on to its jobs (what the renter
// started with setsid or nohup goes on). Docker keeps an exec's process
// when its client goes, so the launcher sends the signal itself.
func (t *execTerminal) Close() error {
	t.once.Do(func() {
		_ = t.att.CloseWrite()
		t.att.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, _, err := t.d.exec(ctx, t.container, "/bin/sh", "-c", `kill -HUP "$(cat "$1")" 2>/dev/null; rm -f "$1"`, "sh", t.pidFile); err != nil {
			t.d.log().Warn("hanging up a terminal's shell", "container", t.container, "err", err)
		}
	})
	return nil
}

// Resize implements workload.Terminal.
func (t *execTerminal) Resize(ctx context.Context, size workload.TermSize) error {
	return t.d.Client.ContainerExecResize(ctx, t.exec, container.ResizeOptions{Height: size.Rows, Width: size.Cols})
}

// Logs implements workload.Workloads: the container's stdout and stderr,
// with timestamps, as one stream of lines.
func (d *Launcher) Logs(ctx context.Context, rentalID int64, opts workload.LogOptions) (io.ReadCloser, error) {
	w, err := d.running(ctx, rentalID)
	if err != nil {
		return nil, err
	}
	lo := container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Follow: opts.Follow}
	if opts.Tail > 0 {
		lo.Tail = strconv.Itoa(opts.Tail)
	}
	if !opts.Since.IsZero() {
		lo.Since = fmt.Sprintf("%d.%09d", opts.Since.Unix(), opts.Since.Nanosecond())
	}
	rc, err := d.Client.ContainerLogs(ctx, w.id, lo)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			d.forget(rentalID)
			return nil, fmt.Errorf("docker launcher: rental %d: %w", rentalID, os.ErrNotExist)
		}
		return nil, fmt.Errorf("docker launcher: reading the container's log: %w", err)
	}
	// Without a TTY the daemon interleaves both streams in frames.
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		_ = pw.CloseWithError(err)
	}()
	return readCloser{Reader: pr, close: func() error { _ = pr.Close(); return rc.Close() }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// Workspace implements workload.Workloads: the directory this host mounts
// at the container's /workspace (a docker volume's or one under
// VolumeRoot), opened as a root, so that a symbolic link a renter made
// in it leads nowhere outside.
func (d *Launcher) Workspace(ctx context.Context, rentalID int64) (*os.Root, error) {
	w, err := d.running(ctx, rentalID)
	if err != nil {
		return nil, err
	}
	if w.root == "" {
		return nil, fmt.Errorf("docker launcher: rental %d's container mounts no /workspace", rentalID)
	}
	r, err := os.OpenRoot(w.root)
	if err != nil {
		// Not os.ErrNotExist: the container runs, its volume is where the
		// agent cannot read it (a daemon on another host).
		return nil, fmt.Errorf("docker launcher: opening the workspace at %s: %v", w.root, err)
	}
	return r, nil
}

var _ workload.Workloads = (*Launcher)(nil)
