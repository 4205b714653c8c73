// Package tunnel is the one connection a node agent keeps open to the
// marketplace, and the streams the marketplace opens over it to reach
// renters' containers. The agent dials out (a provider's host needs no
// inbound port): a WebSocket to PathAgent, authenticated with the node's
// credential, carrying yamux, on which the server opens a stream per
// proxied connection and the agent serves HTTP (agent.Config.Tunnel,
// served by agent/workload.Handler).
//
// The package is shared by both ends and imports nothing of the
// marketplace: it runs on providers' hosts as well as on the servers.
package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
)

// PathAgent is where agents open their tunnel (a WebSocket upgrade).
const PathAgent = "/agent/v1/tunnel"

// Subprotocol is the WebSocket subprotocol both ends must agree on; a
// later, incompatible framing gets a new one.
const Subprotocol = "suanli-tunnel.v1"

// StreamWindow is the most a stream may have in flight unacknowledged:
// 1 MiB keeps one download near the link's speed across a 30 ms round
// trip (yamux's default, 256 KiB, caps it at ~8 MB/s there).
const StreamWindow = 1 << 20

// KeepAlive is how often each end pings the other: a connection that a
// NAT or a load balancer dropped silently is noticed within about this
// long plus ConnectionWriteTimeout, and the agent dials again.
const KeepAlive = 15 * time.Second

// config is the yamux configuration of both ends.
func config() *yamux.Config {
	c := yamux.DefaultConfig()
	c.MaxStreamWindowSize = StreamWindow
	c.KeepAliveInterval = KeepAlive
	c.ConnectionWriteTimeout = 10 * time.Second
	c.StreamOpenTimeout = 10 * time.Second
	c.LogOutput = io.Discard
	return c
}

// Accept upgrades an agent's tunnel request (already authenticated by the
// caller) and returns the server's end: a session on which the server
// opens streams. The request's connection deadlines are cleared first,
// since the tunnel outlives any request timeout; it lives until ctx ends
// or the session closes.
func Accept(ctx context.Context, w http.ResponseWriter, r *http.Request) (*yamux.Session, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{Subprotocol},
		// Agents are not browsers: no Origin to check, and their
		// credential is checked before Accept.
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, fmt.Errorf("tunnel: accepting the WebSocket: %w", err)
	}
	if c.Subprotocol() != Subprotocol {
		c.Close(websocket.StatusPolicyViolation, "want subprotocol "+Subprotocol)
		return nil, errors.New("tunnel: the agent did not speak " + Subprotocol)
	}
	// Streams are the server's to open: one the agent opens is closed at
	// once (accepted, so that none waits with its window full). The
	// backlog stays yamux's default: it also bounds how many of the
	// server's own opens may wait for the agent's acknowledgement, which
	// a small one would queue on a distant node.
	s, err := yamux.Client(websocket.NetConn(ctx, c, websocket.MessageBinary), config())
	if err != nil {
		c.Close(websocket.StatusInternalError, "")
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	go func() {
		for {
			st, err := s.Accept()
			if err != nil {
				return // the session ended
			}
			_ = st.Close()
		}
	}()
	return s, nil
}

// Dial opens the agent's end of a tunnel to server (the marketplace's
// base URL, http or https) with the node's bearer token. The session
// accepts the streams the server opens; it lives until ctx ends or the
// connection drops. An HTTP refusal is a *RefusedError.
func Dial(ctx context.Context, client *http.Client, server, token string) (*yamux.Session, error) {
	u, err := url.Parse(strings.TrimRight(server, "/") + PathAgent)
	if err != nil {
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return nil, fmt.Errorf("tunnel: server URL %q is not http(s)", server)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(dctx, u.String(), &websocket.DialOptions{
		HTTPClient:      client,
		HTTPHeader:      http.Header{"Authorization": {"Bearer " + token}},
		Subprotocols:    []string{Subprotocol},
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, &RefusedError{Code: resp.StatusCode, Err: err}
		}
		return nil, fmt.Errorf("tunnel: dialing %s: %w", u.Redacted(), err)
	}
	if c.Subprotocol() != Subprotocol {
		c.Close(websocket.StatusPolicyViolation, "")
		return nil, errors.New("tunnel: the server does not speak " + Subprotocol)
	}
	s, err := yamux.Server(websocket.NetConn(ctx, c, websocket.MessageBinary), config())
	if err != nil {
		c.Close(websocket.StatusInternalError, "")
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	return s, nil
}

// RefusedError is the server's refusal of a tunnel (its HTTP status:
// 401 for a credential it does not know, 404 for a server without
// tunnels, 429 or 503 when it asks the agent to come back later).
type RefusedError struct {
	Code int
	Err  error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("tunnel: the server answered %d: %v", e.Code, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// ErrNotConnected is returned by Registry.Dial when the node has no
// tunnel to this process.
var ErrNotConnected = errors.New("tunnel: the node's agent has no tunnel to this server")

// The headers the server sets on a request it sends through a tunnel, to
// say what it is for; the agent removes them before anything reaches a
// container.
const (
	// HeaderRental is the rental's id.
	HeaderRental = "Suanli-Rental"
	// HeaderTarget is one of the Target… values.
	HeaderTarget = "Suanli-Target"
	// HeaderPort is the container's port, for TargetPort.
	HeaderPort = "Suanli-Port"
	// HeaderError, on an answer of the agent, says why it could not
	// pass a request on (one of the Err… values), so that the server
	// can explain it to the renter.
	HeaderError = "Suanli-Error"
)

// What a request through a tunnel is for.
const (
	// TargetJupyter is the rental's Jupyter, with the path unchanged
	// (it serves under the rental's base URL); the agent adds its token.
	TargetJupyter = "jupyter"
	// TargetPort is an HTTP port of the container (HeaderPort), with
	// the marketplace's prefix taken off the path.
	TargetPort = "port"
	// TargetTerminal is a WebSocket to a shell with a TTY in the
	// container; query cols and rows give its first size.
	TargetTerminal = "terminal"
	// TargetLogs is the container's output: query tail, follow=1
	// (server-sent events, resumed after Last-Event-ID).
	TargetLogs = "logs"
	// TargetFiles is the workspace: GET ?path= a file (its bytes) or a
	// directory (a Listing; with download=1 a directory is refused), PUT
	// ?path= a file's new bytes (an Upload).
	TargetFiles = "files"
)

// Why the agent could not pass a request on (HeaderError).
const (
	// ErrNoWorkload: no running workload of that rental on the node.
	ErrNoWorkload = "no-workload"
	// ErrRefused: nothing listens on that port in the container.
	ErrRefused = "refused"
	// ErrNoJupyter: the container runs no Jupyter.
	ErrNoJupyter = "no-jupyter"
	// ErrUnsupported: the agent cannot serve the request: a target it
	// does not know, or its launcher failed to open the container's
	// terminal, output or workspace.
	ErrUnsupported = "unsupported"
	// ErrBadPath: a workspace path that is not there or not allowed.
	ErrBadPath = "bad-path"
)

// Listing is a workspace directory's entries (TargetFiles, GET of a
// directory), directories first, then by name.
type Listing struct {
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
	// Truncated: the directory holds more than MaxEntries entries; the
	// first MaxEntries the directory gave are listed.
	Truncated bool `json:"truncated,omitempty"`
}

// MaxEntries is the most entries a Listing holds.
const MaxEntries = 5000

// Entry is one file or directory of a Listing.
type Entry struct {
	Name    string    `json:"name"`
	Dir     bool      `json:"dir"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// Upload is the agent's answer to a file written into the workspace.
type Upload struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// WorkspacePath is a path of the workspace as a renter gives it ("data/x",
// "/workspace/data/x"), relative to the workspace ("" the workspace
// itself), or false for one that is not well-formed text (NUL, not UTF-8)
// or holds a backslash. Cleaned from "/", it cannot leave the workspace.
func WorkspacePath(p string) (string, bool) {
	if !utf8.ValidString(p) || strings.ContainsAny(p, "\x00\\") {
		return "", false
	}
	p = strings.TrimSpace(p)
	if rest, ok := strings.CutPrefix(p, "/workspace"); ok && (rest == "" || rest[0] == '/') {
		p = rest
	}
	return strings.TrimPrefix(path.Clean("/"+p), "/"), true
}
