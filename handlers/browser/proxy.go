// Package browser serves a renter's browser access to a running
// rental's container through its node agent's tunnel: Jupyter, declared
// HTTP ports (and their share links), a terminal, the container's output
// and the workspace's files. Every request is authorised again (the
// rental's organisation and the user's role, workspace.Service.For), and
// what the marketplace knows of the user (its cookies, an API token) is
// never passed to the container.
package browser

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/fleet"
	"suanli/handlers"
	"suanli/tunnel"
	"suanli/workspace"
)

// Handler serves the workspace routes.
type Handler struct {
	*handlers.Handler
	ws *workspace.Service
	// viaTunnel passes requests to node agents through their tunnels to
	// this process; viaReplica passes a whole request on to the web
	// replica holding the node's tunnel.
	viaTunnel  *httputil.ReverseProxy
	viaReplica *httputil.ReverseProxy
	// tunnelTransport carries viaTunnel's requests, and the handlers' own
	// (a directory listing).
	tunnelTransport *http.Transport
	// RecheckEvery is how often a request that lasts is authorised again
	// (DefaultRecheckEvery if zero).
	RecheckEvery time.Duration
}

// DefaultRecheckEvery is how often a proxied request that lasts is
// authorised again (Handler.RecheckEvery, when zero).
const DefaultRecheckEvery = 30 * time.Second

// HopHeader marks a request one web replica passed on to the replica
// holding the node's tunnel: that one serves it or fails, never passing it
// on again.
const HopHeader = "Suanli-Hop"

// New returns the workspace handlers on h.
func New(h *handlers.Handler) *Handler {
	w := &Handler{Handler: h, ws: h.Workspace(), RecheckEvery: h.WorkspaceRecheck}
	w.tunnelTransport = &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			node, ok := parseNodeHost(addr)
			if !ok {
				return nil, fmt.Errorf("workspace: not a tunnel address: %s", addr)
			}
			if h.Tunnels == nil {
				return nil, tunnel.ErrNotConnected
			}
			return h.Tunnels.Dial(ctx, node)
		},
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     60 * time.Second,
		// Bodies pass as the container sent them.
		DisableCompression: true,
	}
	w.viaTunnel = &httputil.ReverseProxy{
		Rewrite:        w.rewrite,
		Transport:      w.tunnelTransport,
		FlushInterval:  -1,
		ModifyResponse: w.modifyResponse,
		ErrorHandler:   keepError,
	}
	w.viaReplica = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := targetOf(pr.In.Context())
			u, _ := url.Parse(t.replica)
			pr.Out.URL.Scheme, pr.Out.URL.Host = u.Scheme, u.Host
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			pr.Out.Header.Set(HopHeader, "1")
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     60 * time.Second,
			DisableCompression:  true,
		},
		FlushInterval: -1,
		ErrorHandler:  keepError,
	}
	return w
}

// nodeHost names a node's tunnel as a URL host (the transport pools
// connections per host).
func nodeHost(node int64) string { return "node-" + strconv.FormatInt(node, 10) + ".tunnel" }

func parseNodeHost(addr string) (int64, bool) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	s, ok := strings.CutPrefix(host, "node-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".tunnel")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// target is where one request goes, handed to the proxy's hooks in the
// request's context.
type target struct {
	ws   *workspace.Workspace
	kind string // tunnel.Target…
	port int
	// path and rawPath are the path the container sees ("" keeps the
	// request's); prefix is the marketplace's part taken off it, passed
	// as X-Forwarded-Prefix.
	path, rawPath, prefix string
	// query is the query of a request to the agent itself (terminal,
	// logs, files); a proxied one keeps the browser's.
	query string
	// share: opened through a share link (rendered sandboxed).
	share bool
	// replica is the URL of the web replica holding the tunnel, when it
	// is not this one.
	replica string
	// recheck authorises the request again; forward runs it every
	// RecheckEvery while the request lasts (a terminal, a kernel, the
	// output, a download) and ends the request once it fails.
	recheck func(context.Context) error
	// err is what failed, for the handler to answer.
	err error
}

type targetKey struct{}

func targetOf(ctx context.Context) *target {
	t, _ := ctx.Value(targetKey{}).(*target)
	return t
}

// keepError records a proxy failure for the handler, which answers it
// with the central error handler (a page or JSON).
func keepError(_ http.ResponseWriter, r *http.Request, err error) {
	if t := targetOf(r.Context()); t != nil {
		t.err = err
	}
}

// ownCookies are the cookies of the marketplace itself: never sent to a
// container, never set by one.
func ownCookie(name string) bool { return strings.HasPrefix(name, "suanli_") }

// rewrite makes the request the agent gets: the tunnel's host, the
// target's headers and path, the Host the browser asked for (Jupyter
// checks a WebSocket's Origin against it), and nothing of the user's
// credentials.
func (w *Handler) rewrite(pr *httputil.ProxyRequest) {
	t := targetOf(pr.In.Context())
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = nodeHost(t.ws.NodeID)
	if t.path != "" {
		pr.Out.URL.Path, pr.Out.URL.RawPath = t.path, t.rawPath
	}
	if t.kind != tunnel.TargetJupyter && t.kind != tunnel.TargetPort {
		// The agent's own requests take only what the handler put.
		pr.Out.URL.RawQuery = t.query
	}
	pr.Out.Host = pr.In.Host
	pr.SetXForwarded()
	if t.prefix != "" {
		pr.Out.Header.Set("X-Forwarded-Prefix", t.prefix)
	}
	if auth := pr.Out.Header.Get("Authorization"); t.kind != tunnel.TargetPort || ownCredential(auth) {
		// The marketplace's own tokens never reach a container; an app's
		// own scheme (Basic, its bearer tokens) passes to its port.
		pr.Out.Header.Del("Authorization")
	}
	pr.Out.Header.Del(HopHeader)
	for _, k := range []string{tunnel.HeaderRental, tunnel.HeaderTarget, tunnel.HeaderPort} {
		pr.Out.Header.Del(k)
	}
	pr.Out.Header.Set(tunnel.HeaderRental, strconv.FormatInt(t.ws.RentalID, 10))
	pr.Out.Header.Set(tunnel.HeaderTarget, t.kind)
	if t.kind == tunnel.TargetPort {
		pr.Out.Header.Set(tunnel.HeaderPort, strconv.Itoa(t.port))
	}
	stripOwnCookies(pr.Out.Header)
}

// ownCredential reports whether an Authorization value carries a token
// of the marketplace (an API token, a node's or a share link's).
func ownCredential(auth string) bool {
	v, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return false
	}
	v = strings.TrimSpace(v)
	for _, p := range []string{accounts.TokenPrefix, fleet.CredentialPrefix, fleet.RegTokenPrefix, workspace.SharePrefix} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// stripOwnCookies removes the marketplace's cookies (the session, the
// CSRF token, the language) from a request's Cookie headers.
func stripOwnCookies(h http.Header) {
	var keep []string
	for _, line := range h.Values("Cookie") {
		for part := range strings.SplitSeq(line, ";") {
			part = strings.TrimSpace(part)
			name, _, _ := strings.Cut(part, "=")
			if part != "" && !ownCookie(strings.TrimSpace(name)) {
				keep = append(keep, part)
			}
		}
	}
	h.Del("Cookie")
	if len(keep) > 0 {
		h.Set("Cookie", strings.Join(keep, "; "))
	}
}

// agentError is the agent's refusal (tunnel.HeaderError), as an answer.
type agentError struct {
	code   string
	status int
	text   string
}

func (e *agentError) Error() string { return "agent: " + e.code + ": " + e.text }

// modifyResponse turns an agent's refusal into an error for the handler,
// keeps the container from setting the marketplace's cookies (and keeps
// the cookies it sets within its own path), and renders what a share link
// opens sandboxed.
func (w *Handler) modifyResponse(resp *http.Response) error {
	t := targetOf(resp.Request.Context())
	if code := resp.Header.Get(tunnel.HeaderError); code != "" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		_ = resp.Body.Close()
		return &agentError{code: code, status: resp.StatusCode, text: strings.TrimSpace(string(b))}
	}
	// An app on the marketplace's origin may not widen its reach beyond
	// its path: no service worker for the whole site, no wiping of the
	// site's cookies and storage.
	resp.Header.Del("Service-Worker-Allowed")
	resp.Header.Del("Clear-Site-Data")
	// What comes through is one user's: no shared cache may keep it (a
	// workspace's files and output not even the browser's).
	switch cc := resp.Header.Get("Cache-Control"); {
	case t.kind == tunnel.TargetFiles || t.kind == tunnel.TargetLogs:
		resp.Header.Set("Cache-Control", "private, no-store")
	case cc == "":
		resp.Header.Set("Cache-Control", "private")
	default:
		resp.Header.Set("Cache-Control", privateOnly(cc))
	}
	scope := t.prefix
	if t.kind == tunnel.TargetJupyter {
		scope = jupyterPrefix(t.ws.RentalID)
	}
	if cs := resp.Header.Values("Set-Cookie"); len(cs) > 0 {
		resp.Header.Del("Set-Cookie")
		for _, line := range cs {
			if c, err := http.ParseSetCookie(line); err == nil && !ownCookie(c.Name) && scope != "" {
				// A cookie for "/" would reach every rental's apps: it is
				// kept to the path it came through.
				if t.kind == tunnel.TargetPort || !strings.HasPrefix(c.Path, scope) {
					c.Path = strings.TrimSuffix(scope, "/") + "/" + strings.TrimPrefix(c.Path, "/")
				}
				c.Domain = ""
				resp.Header.Add("Set-Cookie", c.String())
			}
		}
	}
	if t.share {
		// What a share link opens runs in an opaque origin: its scripts
		// cannot act with a visitor's marketplace session; its own
		// requests (now cross-origin) are allowed to read the answers.
		resp.Header.Set("Content-Security-Policy", "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads")
		resp.Header.Set("Access-Control-Allow-Origin", "*")
		resp.Header.Set("Referrer-Policy", "no-referrer")
	}
	return nil
}

// privateOnly is an app's Cache-Control with what lets shared caches keep
// an answer (public, s-maxage) replaced by private.
func privateOnly(cc string) string {
	var keep []string
	for part := range strings.SplitSeq(cc, ",") {
		d := strings.ToLower(strings.TrimSpace(part))
		if d == "public" || d == "private" || strings.HasPrefix(d, "s-maxage") || strings.HasPrefix(d, "proxy-revalidate") || d == "" {
			continue
		}
		keep = append(keep, strings.TrimSpace(part))
	}
	return strings.Join(append([]string{"private"}, keep...), ", ")
}

// jupyterPrefix is the path a rental's Jupyter serves under.
func jupyterPrefix(rentalID int64) string {
	return "/rentals/" + strconv.FormatInt(rentalID, 10) + "/jupyter/"
}

// errNotConnected answers a request for a node whose agent has no
// tunnel (to this replica or any other known one).
var errNotConnected = &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "the node's agent is not connected to the marketplace right now; try again in a minute", Key: "err.workspace_agent_offline"}

var errServiceWorker = &apperr.Error{Code: apperr.EFORBIDDEN, Message: "apps opened through the marketplace may not install service workers", Key: "err.workspace_service_worker"}

// forward sends the request on to t: through this process's tunnel to
// the node, or to the replica holding it. It clears the connection's
// deadlines first: a download, an upload or a WebSocket outlives the
// server's request timeouts.
func (w *Handler) forward(c echo.Context, t *target) error {
	r := c.Request()
	if w.Tunnels == nil {
		return errNotConnected
	}
	if r.Header.Get("Service-Worker") != "" {
		// A service worker on the marketplace's origin would outlive the
		// rental and see the marketplace's own pages.
		return errServiceWorker
	}
	local, replica, err := w.Tunnels.Route(r.Context(), t.ws.NodeID)
	if err != nil {
		return err
	}
	proxy := w.viaTunnel
	if !local {
		if replica == "" || r.Header.Get(HopHeader) != "" {
			return errNotConnected
		}
		t.replica, proxy = replica, w.viaReplica
	}
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var ended atomic.Pointer[error] // why the recheck ended the request
	if t.recheck != nil && local {
		// What is allowed at the handshake may not be an hour later: a
		// member removed, a session ended, a link revoked, the rental
		// stopped. Ending the request closes its connections (the
		// reverse proxy closes an upgraded one with its context).
		go func() {
			tick := time.NewTicker(cmp.Or(w.RecheckEvery, DefaultRecheckEvery))
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					err := t.recheck(ctx)
					if err == nil || ctx.Err() != nil {
						continue
					}
					if apperr.Code(err) == apperr.EINTERNAL {
						// A database that failed to answer says nothing
						// about the access: the next tick asks again.
						slog.Warn("workspace: access recheck failed; asking again", "rental_id", t.ws.RentalID, "err", err)
						continue
					}
					slog.Info("workspace: access ended; closing the connection", "rental_id", t.ws.RentalID, "reason", err)
					ended.Store(&err)
					cancel()
					return
				}
			}
		}()
	}
	proxy.ServeHTTP(c.Response(), r.WithContext(context.WithValue(ctx, targetKey{}, t)))
	if c.Response().Committed {
		return nil
	}
	if why := ended.Load(); why != nil {
		// Ended before the agent answered: say why (not the proxy's
		// context.Canceled, which would read as a server error).
		return *why
	}
	if t.err == nil {
		return nil
	}
	return answer(t.err)
}

// answer maps a proxy failure to the error the renter sees.
func answer(err error) error {
	var ae *agentError
	switch {
	case errors.As(err, &ae):
		switch ae.code {
		case tunnel.ErrNoWorkload:
			return &apperr.Error{Code: apperr.ECONFLICT, Message: "the container is not running on its node (it may be starting or moving)", Key: "err.workspace_no_workload"}
		case tunnel.ErrRefused:
			return &apperr.Error{Code: apperr.EUNAVAILABLE, Message: ae.text, Key: "err.workspace_port_refused"}
		case tunnel.ErrNoJupyter:
			return &apperr.Error{Code: apperr.ENOTFOUND, Message: "this rental's container runs no Jupyter", Key: "err.workspace_no_jupyter"}
		case tunnel.ErrBadPath:
			// The agent's text is for the API and the log; pages say it
			// in the reader's language, by what the agent answered.
			switch ae.status {
			case http.StatusNotFound:
				return &apperr.Error{Code: apperr.ENOTFOUND, Field: "path", Message: ae.text, Key: "err.workspace_path"}
			case http.StatusConflict:
				return &apperr.Error{Code: apperr.ECONFLICT, Field: "path", Message: ae.text, Key: "err.workspace_path_taken"}
			}
			return &apperr.Error{Code: apperr.EINVALID, Field: "path", Message: ae.text, Key: "err.workspace_path_unusable"}
		}
		return &apperr.Error{Code: apperr.EUNAVAILABLE, Message: ae.text, Key: "err.workspace_agent_refused", Args: []any{ae.text}}
	case errors.Is(err, tunnel.ErrNotConnected):
		return errNotConnected
	case errors.Is(err, context.Canceled):
		// The browser went: nobody reads an answer (the error handler
		// logs it as such).
		return err
	}
	return &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "the node's agent did not answer: " + err.Error(), Key: "err.workspace_agent_failed"}
}
