package agent

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"suanli/gpu"
)

// GPUs is what the agent reads through NVML.
type GPUs interface {
	Read() gpu.Host                               // inventory, telemetry, verdicts
	Verify(uuids []string) map[string]gpu.Verdict // fresh checks on exactly these GPUs
}

// Defaults for the Config fields left zero.
const (
	DefaultHeartbeatEvery = 5 * time.Second
	DefaultPollWait       = 25 * time.Second
)

// Config is how a node agent is set up; main fills it from flags.
type Config struct {
	// Server is the marketplace's base URL, e.g. "https://suanli.example".
	Server string
	// Token is the one-time registration token or a node credential.
	Token string
	// StateFile, when set, is where the node credential is kept (mode
	// 0600) after registration, so that a restart does not need the
	// one-time token again.
	StateFile string
	// HTTPClient defaults to a client without a global timeout: every
	// request carries its own deadline, and the long-poll needs a long one.
	HTTPClient *http.Client
	// HeartbeatEvery is the heartbeat interval until the server names one
	// (HeartbeatReply.IntervalSeconds > 0). Default 5 s.
	HeartbeatEvery time.Duration
	// PollWait is how long the server may hold a task long-poll (sent in
	// whole seconds, at least 1). Default 25 s.
	PollWait time.Duration
	GPUs     GPUs
	Launcher Launcher
	// Bench tunes benchmark tasks (the load generators, timeouts and the
	// simulated figures); the zero value runs them with the defaults.
	Bench BenchOptions
	// Silent, when it returns true, makes the agent go dark: no heartbeats,
	// no polls and no results (held until it speaks again), as a host that
	// lost its network would. Used to inject the "silent" fault.
	Silent func() bool
	// Tunnel, when set, serves the streams the server opens through the
	// agent's tunnel (workload.NewHandler over a launcher that reaches
	// its containers); nil: the agent opens no tunnel.
	Tunnel http.Handler
	// PingURL is the public URL of this host's latency endpoint, if any.
	PingURL string
	Version string
	Logger  *slog.Logger
}

// Agent is the node agent: it sends heartbeats, long-polls for tasks,
// runs them and reports their results. Make one with New.
type Agent struct {
	cfg      Config
	server   string // Config.Server without a trailing slash
	client   *http.Client
	log      *slog.Logger
	hostname string

	mu sync.Mutex
	// token is the bearer token sent now: Config.Token, a credential from
	// the state file, or the credential the server handed out.
	token string
	// registered is closed once a heartbeat was accepted, i.e. the token
	// in use is known to be a node credential: polling waits for it.
	registered     chan struct{}
	registeredOnce sync.Once
	// inflight and done keep a task the server hands out twice (a poll
	// answered while its result was on the way) from running twice.
	inflight map[int64]bool
	done     map[int64]bool
	// imagesErr is the last failure to list local images ("" none), so
	// that it is logged once, not with every heartbeat.
	imagesErr string
	// nodeID and xids are what the state file holds besides the
	// credential: the node's id, and the critical XIDs last saved.
	nodeID int64
	xids   map[string][]int
	// nvmlErr is NVML's unavailability last logged ("" available).
	nvmlErr string
}

// New checks cfg and returns an agent ready to Run.
func New(cfg Config) (*Agent, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("agent: Server must be an http(s) URL")
	}
	if cfg.Token == "" && cfg.StateFile == "" {
		return nil, errors.New("agent: a Token or a StateFile holding a credential is needed")
	}
	if cfg.GPUs == nil {
		return nil, errors.New("agent: GPUs is nil")
	}
	if cfg.Launcher == nil {
		return nil, errors.New("agent: Launcher is nil")
	}
	if cfg.HeartbeatEvery <= 0 {
		cfg.HeartbeatEvery = DefaultHeartbeatEvery
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = DefaultPollWait
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	hostname, _ := os.Hostname()
	return &Agent{
		cfg:        cfg,
		server:     strings.TrimRight(cfg.Server, "/"),
		client:     cfg.HTTPClient,
		log:        cfg.Logger.With("component", "agent"),
		hostname:   hostname,
		token:      cfg.Token,
		registered: make(chan struct{}),
		inflight:   map[int64]bool{},
		done:       map[int64]bool{},
	}, nil
}

// Run sends heartbeats and works tasks until ctx is cancelled, then waits
// for its goroutines and returns nil. Connection failures and rejected
// tokens are logged and retried with backoff, never returned: a provider
// can fix the server or the token without restarting the agent. Run is
// called once per Agent.
func (a *Agent) Run(ctx context.Context) error {
	a.loadState()
	a.log.Info("agent starting", "server", a.server, "launcher", a.cfg.Launcher.Name(), "version", a.cfg.Version)

	var wg sync.WaitGroup
	wg.Go(func() { a.heartbeatLoop(ctx) })
	wg.Go(func() { a.pollLoop(ctx, &wg) })
	if a.cfg.Tunnel != nil {
		wg.Go(func() { a.tunnelLoop(ctx, a.cfg.Tunnel) })
	}
	wg.Wait()

	a.log.Info("agent stopped")
	return nil
}

// bearer is the token to send now.
func (a *Agent) bearer() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.token
}

func (a *Agent) markRegistered() {
	a.registeredOnce.Do(func() { close(a.registered) })
}

// silent reports whether the agent is to stay dark now.
func (a *Agent) silent() bool {
	return a.cfg.Silent != nil && a.cfg.Silent()
}

// idleWait is how often a dark agent looks whether it may speak again.
func (a *Agent) idleWait() time.Duration {
	return min(a.cfg.HeartbeatEvery, time.Second)
}
