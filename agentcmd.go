package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/agent/workload"
	"suanli/gpu"
)

// version is the agent version reported in heartbeats.
const version = "0.5.0"

// faultFlags collects repeated --fault flags.
type faultFlags []gpu.Fault

func (f *faultFlags) String() string { return fmt.Sprint(*f) }
func (f *faultFlags) Set(s string) error {
	x, err := gpu.ParseFault(s)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}

// runAgent is `suanli agent`: the node agent on a provider's GPU host.
func runAgent(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	server := fs.String("server", os.Getenv("SUANLI_SERVER"), "the marketplace's base URL (env SUANLI_SERVER)")
	token := fs.String("token", os.Getenv("SUANLI_NODE_TOKEN"), "the node's one-time registration token or its credential (env SUANLI_NODE_TOKEN)")
	state := fs.String("state-file", os.Getenv("SUANLI_AGENT_STATE"), "where to keep the node credential after registration, and the critical XIDs seen on the GPUs until cleared (env SUANLI_AGENT_STATE)")
	simulate := fs.String("simulate", "", "read go-nvml's mock servers instead of the real NVML: dgxa100, dgxh100, dgxh200, dgxb200, or a catalogue slug (rtx-4090, l40s…); everything it reports is labelled simulated; the server accepts it only for the demo's providers and test providers made with `suanli admin create-user … --provider NAME --simulated`")
	simGPUs := fs.Int("gpus", 0, "with --simulate: the number of GPUs (default 8)")
	var faults faultFlags
	fs.Var(&faults, "fault", "with --simulate: inject KIND@GPU[:after=30s], KIND one of xid:N, ecc, offbus, thermal, silent (repeatable)")
	launcher := fs.String("launcher", "", "how workloads start: docker, script or simulated (default: docker, or simulated with --simulate)")
	script := fs.String("script", "", "with --launcher=script: the provider's executable")
	image := fs.String("image", "", "with --launcher=docker: the image for a task that names none (any image with OpenSSH's sshd)")
	dockerHost := fs.String("docker-host", "", "with --launcher=docker: the Docker daemon's URL, e.g. unix:///var/run/docker.sock (default: DOCKER_HOST, else the default socket)")
	volumeRoot := fs.String("volume-root", "", "with --launcher=docker: a directory every node of the datacentre mounts (NFS, CephFS, JuiceFS): workspaces are directories in it and follow a rental to any node (default: docker volumes on this node's disk)")
	portBase := fs.Int("port-base", agent.DefaultPortBase, "with --launcher=docker: rental N's SSH port is this plus N modulo 10000 (two agents on one host need bases 10000 apart)")
	network := fs.String("docker-network", docker.DefaultNetwork, "with --launcher=docker: the Docker network rentals' containers run on, made if missing as a bridge on which containers cannot reach each other; the agent reaches their ports on it for browser access (Jupyter, HTTP ports), so it must run on the Docker host")
	namespace := fs.String("docker-namespace", "", "with --launcher=docker: a name part for this agent's containers (suanli-NS-rID), for agents of different marketplaces sharing one Docker daemon")
	host := fs.String("public-host", "", "the host or IP renters reach the workloads at (docker and simulated launchers)")
	pingAddr := fs.String("ping-addr", os.Getenv("SUANLI_PING_ADDR"), "listen address of the unauthenticated latency endpoint GET /ping that visitors' browsers time, e.g. :7070 (env SUANLI_PING_ADDR; empty: none, and the agent opens no port)")
	pingURL := fs.String("ping-url", os.Getenv("SUANLI_PING_URL"), "the public URL of that endpoint, reported to the server (env SUANLI_PING_URL; default http://PUBLIC-HOST:PORT/ping; behind an https marketplace give an https URL, browsers refuse http from https pages)")
	benchPython := fs.String("bench-python", agent.DefaultPython, "the Python interpreter (with PyTorch) that runs the benchmark's GPU loads; without one they are reported absent")
	benchTimeout := fs.Duration("bench-timeout", agent.DefaultBenchTimeout, "how long one benchmark task may run")
	expectNVLinks := fs.Int("expect-nvlinks", 0, "NVLinks each GPU has that must be up (e.g. 18 on an HGX H100); 0: only links seen up since the agent started must stay up")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(*logLevel))
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
	if *server == "" || (*token == "" && *state == "") {
		return errors.New("agent: give --server and --token (or a --state-file from an earlier registration)")
	}
	if *expectNVLinks < 0 || *expectNVLinks > nvml.NVLINK_MAX_LINKS {
		return fmt.Errorf("agent: --expect-nvlinks must be 0 to %d", nvml.NVLINK_MAX_LINKS)
	}
	if len(faults) > 0 && *simulate == "" {
		return errors.New("agent: --fault needs --simulate")
	}
	var lib nvml.Interface
	var silent func() bool
	if *simulate != "" {
		sim, err := simulated(*simulate, *simGPUs, nil)
		if err != nil {
			return err
		}
		if err := sim.Schedule(faults...); err != nil {
			return err
		}
		lib, silent = sim, sim.Silent
	} else {
		lib = nvml.New()
	}
	reader, err := gpu.Open(lib, gpu.Options{ExpectNVLinks: *expectNVLinks})
	if err != nil {
		// The Reader retries nvml.Init with backoff (never calling
		// anything else meanwhile): a driver that loads later is found
		// without a restart; until then heartbeats say "no NVML (retrying)".
		slog.Error("NVML unavailable; retrying with backoff, and telling the server meanwhile", "err", err)
	}
	defer reader.Close()
	l, closeLauncher, err := newLauncher(ctx, launcherOptions{
		kind:   cmpOr(*launcher, map[bool]string{true: "simulated", false: "docker"}[*simulate != ""]),
		script: *script, image: *image, host: *host, dockerHost: *dockerHost, volumeRoot: *volumeRoot,
		portBase: *portBase, namespace: *namespace, network: *network,
		simulated:  *simulate != "",
		driverCUDA: func() string { return reader.Read().CUDADriverVersion },
	})
	if err != nil {
		return err
	}
	defer closeLauncher()
	ping, err := listenPing(ctx, *pingAddr, *pingURL, *host)
	if err != nil {
		return err
	}
	// A launcher that reaches its containers serves the browser's access
	// to them through the agent's tunnel.
	var tunnelHandler http.Handler
	if w, ok := l.(workload.Workloads); ok {
		th := workload.NewHandler(w, slog.Default())
		defer th.Close()
		tunnelHandler = th
	}
	a, err := agent.New(agent.Config{Server: strings.TrimRight(*server, "/"), Token: *token, StateFile: *state, Tunnel: tunnelHandler,
		HTTPClient: &http.Client{Timeout: 60 * time.Second}, GPUs: reader, Launcher: l, Silent: silent, Version: version, PingURL: ping.url,
		Bench: agent.BenchOptions{Python: *benchPython, Timeout: *benchTimeout}})
	if err != nil {
		ping.stop()
		return err
	}
	slog.Info("agent starting", "server", *server, "simulate", *simulate, "launcher", l.Name(), "ping_url", ping.url)
	err = a.Run(ctx)
	ping.stop()
	return err
}

// pingEndpoint is the agent's running latency endpoint (url "" if none).
type pingEndpoint struct {
	url  string
	stop func()
}

// listenPing starts the latency endpoint on addr (none when addr is empty)
// and returns the URL to report: publicURL, or http://HOST:PORT/ping with
// host the --public-host (else the host name) and the port listened on.
func listenPing(ctx context.Context, addr, publicURL, host string) (pingEndpoint, error) {
	if addr == "" {
		if publicURL != "" {
			return pingEndpoint{stop: func() {}}, errors.New("agent: --ping-url needs --ping-addr (the endpoint to serve)")
		}
		return pingEndpoint{stop: func() {}}, nil
	}
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return pingEndpoint{stop: func() {}}, fmt.Errorf("agent: --ping-url %q: want http(s)://host[:port]/ping", publicURL)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return pingEndpoint{stop: func() {}}, fmt.Errorf("agent: --ping-addr: %w", err)
	}
	if publicURL == "" {
		if host == "" {
			host, _ = os.Hostname()
		}
		publicURL = agent.DefaultPingURL(host, ln)
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := agent.ServePing(pctx, ln); err != nil {
			slog.Error("latency endpoint stopped", "err", err)
		}
	}()
	slog.Info("latency endpoint listening", "addr", ln.Addr().String(), "url", publicURL)
	return pingEndpoint{url: publicURL, stop: func() { cancel(); <-done }}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// simulated builds a simulated host from a DGX system name or a
// catalogue slug.
func simulated(what string, n int, uuids []string) (*gpu.Sim, error) {
	var opts []gpu.SimOption
	if len(uuids) > 0 {
		opts = append(opts, gpu.WithUUIDs(uuids))
	}
	if strings.HasPrefix(what, "dgx") {
		return gpu.Simulate(what, n, opts...)
	}
	return gpu.SimulateCatalog(what, n, opts...)
}

// launcherOptions are the flags that choose and set up a launcher.
type launcherOptions struct {
	kind, script, image, host, dockerHost, volumeRoot, namespace, network string
	portBase                                                              int
	// simulated: the GPUs are simulated, so a docker launcher runs its
	// containers without any.
	simulated  bool
	driverCUDA func() string
}

// newLauncher builds the launcher o names, and what closes it.
func newLauncher(ctx context.Context, o launcherOptions) (agent.Launcher, func(), error) {
	noop := func() {}
	host := o.host
	if host == "" {
		h, _ := os.Hostname()
		host = h
	}
	if o.kind != "docker" && (o.volumeRoot != "" || o.dockerHost != "" || o.namespace != "") {
		return nil, noop, errors.New("agent: --volume-root, --docker-host and --docker-namespace are for --launcher docker")
	}
	switch o.kind {
	case "docker":
		cli, err := docker.NewClient(o.dockerHost)
		if err != nil {
			return nil, noop, err
		}
		// A daemon that is down now may be up by the first launch: the
		// agent starts anyway, and each launch says what went wrong.
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if _, err := cli.Ping(pctx); err != nil {
			slog.Error("the Docker daemon does not answer; launches fail until it does", "docker_host", cli.DaemonHost(), "err", err)
		}
		cancel()
		if o.volumeRoot != "" {
			if fi, err := os.Stat(o.volumeRoot); err != nil || !fi.IsDir() {
				slog.Error("--volume-root is not a directory; launches fail until the shared storage is mounted", "volume_root", o.volumeRoot, "err", err)
			}
		}
		if o.namespace != "" && !docker.ValidName(o.namespace) {
			return nil, noop, fmt.Errorf("agent: --docker-namespace %q: letters, digits, '_', '.' and '-' only", o.namespace)
		}
		return &docker.Launcher{Client: cli, Image: o.image, Host: host, VolumeRoot: o.volumeRoot, PortBase: o.portBase,
			Namespace: o.namespace, Network: o.network, Simulated: o.simulated, DriverCUDA: o.driverCUDA}, func() { _ = cli.Close() }, nil
	case "script":
		if o.script == "" {
			return nil, noop, errors.New("agent: --launcher=script needs --script PATH")
		}
		return &agent.ScriptLauncher{Path: o.script}, noop, nil
	case "simulated":
		return &agent.SimulatedLauncher{Host: host}, noop, nil
	}
	return nil, noop, fmt.Errorf("agent: unknown launcher %q (docker, script or simulated)", o.kind)
}
