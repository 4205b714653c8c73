package browser

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/tunnel"
	"suanli/workspace"
)

// rentalID is the route's :id.
func rentalID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, apperr.NotFound("rental")
	}
	return id, nil
}

// workspace authorises the request for the rental's workspace.
func (w *Handler) workspace(c echo.Context) (*workspace.Workspace, error) {
	id, err := rentalID(c)
	if err != nil {
		return nil, err
	}
	return w.ws.For(c.Request().Context(), handlers.CurrentUser(c), id)
}

// errSessionEnded ends a lasting connection whose session was ended.
var errSessionEnded = apperr.Errorf(apperr.EUNAUTHORIZED, "the session ended")

// sessionRecheck authorises a lasting request of the user's session
// again: the session still there, the user still allowed.
func (w *Handler) sessionRecheck(c echo.Context, ws *workspace.Workspace) func(context.Context) error {
	u := handlers.CurrentUser(c)
	token := w.Sessions.Token(c.Request().Context())
	return func(ctx context.Context) error {
		if live, err := w.ws.SessionLive(ctx, token); err == nil && !live {
			return errSessionEnded
		}
		return w.ws.Recheck(ctx, u, ws.RentalID)
	}
}

// sameOrigin reports whether a browser's request comes from the
// marketplace's own pages (or from no page: a tool). The proxied apps'
// own requests carry no CSRF token of the marketplace, so a request that
// changes something, and every WebSocket handshake, must show that it
// was not sent by another site with the renter's cookies.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// needsOrigin reports whether r must pass sameOrigin: a method that may
// change something, or a WebSocket handshake.
func needsOrigin(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	}
	return true
}

var errCrossSite = &apperr.Error{Code: apperr.EFORBIDDEN, Message: "this request came from another site; open the rental from the marketplace's pages", Key: "err.workspace_cross_site"}

// Jupyter is ANY /rentals/{id}/jupyter/…: the rental's Jupyter, its API
// and its kernels' WebSockets, with the path unchanged (it serves under
// that base URL).
func (w *Handler) Jupyter(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	if !ws.Jupyter {
		return &apperr.Error{Code: apperr.ENOTFOUND, Message: "this rental's image has no Jupyter", Key: "err.workspace_no_jupyter"}
	}
	if w.elsewhere(c) {
		return w.toAppsOrigin(c, ws)
	}
	if needsOrigin(c.Request()) && !sameOrigin(c.Request()) {
		return errCrossSite
	}
	return w.forward(c, &target{ws: ws, kind: tunnel.TargetJupyter, recheck: w.recheck(c, ws)})
}

// JupyterRoot is /rentals/{id}/jupyter: on to its base URL, with the slash.
func (w *Handler) JupyterRoot(c echo.Context) error {
	id, err := rentalID(c)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusTemporaryRedirect, jupyterPrefix(id))
}

// portPrefix is the path a rental's declared port is served under (no
// trailing slash).
func portPrefix(id int64, port int) string {
	return "/rentals/" + strconv.FormatInt(id, 10) + "/ports/" + strconv.Itoa(port)
}

// port is the route's :port.
func port(c echo.Context) (int, error) {
	p, err := strconv.Atoi(c.Param("port"))
	if err != nil || p < 1 || p > 65535 {
		return 0, apperr.NotFound("port")
	}
	return p, nil
}

// stripPrefix sets t's path to the request's path below prefix (an
// escaped path: "%2F" in a name stays one).
func stripPrefix(t *target, r *http.Request, prefix string) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), prefix)
	if rest == "" || rest[0] != '/' {
		rest = "/" + rest
	}
	p, err := url.PathUnescape(rest)
	if err != nil {
		p = rest
	}
	t.path, t.prefix = p, prefix
	if p != rest {
		t.rawPath = rest
	}
}

var errPortNotDeclared = &apperr.Error{Code: apperr.ENOTFOUND, Message: "this port was not declared for the rental", Key: "err.workspace_port_unknown"}

// Port is ANY /rentals/{id}/ports/{port}/…: a declared HTTP port of the
// container (WebSocket included), the prefix taken off the path and
// passed as X-Forwarded-Prefix.
func (w *Handler) Port(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	p, err := port(c)
	if err != nil {
		return err
	}
	if !ws.HasPort(p) {
		return errPortNotDeclared
	}
	if w.elsewhere(c) {
		return w.toAppsOrigin(c, ws)
	}
	if needsOrigin(c.Request()) && !sameOrigin(c.Request()) {
		return errCrossSite
	}
	t := &target{ws: ws, kind: tunnel.TargetPort, port: p, recheck: w.recheck(c, ws)}
	stripPrefix(t, c.Request(), portPrefix(ws.RentalID, p))
	return w.forward(c, t)
}

// PortRoot is /rentals/{id}/ports/{port}: on to it with the slash, so
// that the app's relative links resolve below it.
func (w *Handler) PortRoot(c echo.Context) error {
	id, err := rentalID(c)
	if err != nil {
		return err
	}
	p, err := port(c)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusTemporaryRedirect, portPrefix(id, p)+"/")
}

// sharePrefix is the path a share link serves under.
func sharePrefix(token string) string { return "/share/" + token }

// Shared is ANY /share/{token}/…: the port a share link opens, to anyone
// holding it, sandboxed (modifyResponse).
func (w *Handler) Shared(c echo.Context) error {
	token := c.Param("token")
	ws, p, err := w.ws.SharedWorkspace(c.Request().Context(), token)
	if err != nil {
		return err
	}
	if c.Request().Method == http.MethodOptions && c.Request().Header.Get("Access-Control-Request-Method") != "" {
		// The sandboxed page's own requests are cross-origin: their
		// preflight is answered here, for any method and header.
		h := c.Response().Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE")
		h.Set("Access-Control-Allow-Headers", c.Request().Header.Get("Access-Control-Request-Headers"))
		h.Set("Access-Control-Max-Age", "600")
		return c.NoContent(http.StatusNoContent)
	}
	t := &target{ws: ws, kind: tunnel.TargetPort, port: p, share: true, recheck: func(ctx context.Context) error {
		_, _, err := w.ws.SharedWorkspace(ctx, token)
		return err
	}}
	stripPrefix(t, c.Request(), sharePrefix(token))
	return w.forward(c, t)
}

// SharedRoot is /share/{token}: on to it with the slash.
func (w *Handler) SharedRoot(c echo.Context) error {
	return c.Redirect(http.StatusTemporaryRedirect, sharePrefix(c.Param("token"))+"/")
}

// TerminalSocket is GET /rentals/{id}/terminal/ws: the WebSocket of the
// terminal page, a shell with a TTY in the container. Query cols and rows
// give its first size; binary messages are keystrokes, text messages
// {"cols":N,"rows":N} resize it.
func (w *Handler) TerminalSocket(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	if !strings.EqualFold(c.Request().Header.Get("Upgrade"), "websocket") {
		return &apperr.Error{Code: apperr.EINVALID, Message: "the terminal is a WebSocket: open the terminal page", Key: "err.workspace_terminal_socket"}
	}
	if !sameOrigin(c.Request()) {
		return errCrossSite
	}
	q := url.Values{}
	for _, k := range []string{"cols", "rows"} {
		if n, err := strconv.Atoi(c.QueryParam(k)); err == nil && n > 0 && n < 1000 {
			q.Set(k, strconv.Itoa(n))
		}
	}
	return w.forward(c, &target{ws: ws, kind: tunnel.TargetTerminal, path: "/", query: q.Encode(), recheck: w.recheck(c, ws)})
}

// Logs is GET /rentals/{id}/logs, and the API's GET
// /api/v1/rentals/{id}/logs: the container's recent output as text, or
// with follow=1 as server-sent events that follow it live (resumed after
// Last-Event-ID). The API's requests may be made with a token.
func (w *Handler) Logs(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	q := url.Values{}
	if t := c.QueryParam("tail"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 || n > 10000 {
			return apperr.Field("tail", "err.logs_tail", 10000)
		}
		q.Set("tail", strconv.Itoa(n))
	}
	if c.QueryParam("follow") == "1" {
		q.Set("follow", "1")
	}
	return w.forward(c, &target{ws: ws, kind: tunnel.TargetLogs, path: "/", query: q.Encode(), recheck: w.callerRecheck(c, ws)})
}
