package browser

import (
	"context"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/workspace"
)

// bearerToken is the API token a request to the API was authenticated
// with (web's authenticate reads a bearer token on /api/ paths only, and
// refuses the request if it is bad), or "" for a session's request.
func bearerToken(c echo.Context) string {
	r := c.Request()
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		return ""
	}
	plain, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(plain)
}

// callerRecheck authorises a lasting request again as it was
// authenticated: a request of the API made with a token holds while the
// token does (not revoked, its user not suspended) and its user may still
// work in the rental; any other, as its session (recheck). Without this a
// tool following a rental's output with a token would be cut off at the
// first recheck: it has no session.
func (w *Handler) callerRecheck(c echo.Context, ws *workspace.Workspace) func(context.Context) error {
	token := bearerToken(c)
	if token == "" {
		return w.recheck(c, ws)
	}
	return func(ctx context.Context) error {
		u, err := w.Accounts.UserByAPIToken(ctx, token)
		if err != nil {
			return err
		}
		return w.ws.Recheck(ctx, u, ws.RentalID)
	}
}
