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
	"suanli/workspace"
)

// AppCookie is a rental's apps origin's session cookie (host-only: each
// rental's origin has its own, and the marketplace's never reaches it).
const AppCookie = "suanli_app"

// onAppsOrigin is the rental whose apps origin the request came to (the
// web layer's appsOrigin set it), or false.
func onAppsOrigin(c echo.Context) (int64, bool) {
	id, ok := c.Get(handlers.AppsRentalKey).(int64)
	return id, ok
}

// appsOriginURL is rental id's apps origin: the marketplace's scheme and
// port, the host r{id}.AppsDomain.
func (w *Handler) appsOriginURL(id int64) string {
	u, err := url.Parse(w.Rentals.BaseURL)
	scheme, port := "https", ""
	if err == nil {
		scheme, port = u.Scheme, u.Port()
	}
	host := "r" + strconv.FormatInt(id, 10) + "." + w.AppsDomain
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// elsewhere says whether an app is served on its rental's own origin
// rather than on this request's (an apps domain is set and this is the
// marketplace's origin).
func (w *Handler) elsewhere(c echo.Context) bool {
	_, on := onAppsOrigin(c)
	return w.AppsDomain != "" && !on
}

// toAppsOrigin sends a browser that asked the marketplace for an app on
// to the rental's apps origin, with a one-time ticket for the user; only
// a page load is sent (an app's own requests go to its origin).
func (w *Handler) toAppsOrigin(c echo.Context, ws *workspace.Workspace) error {
	r := c.Request()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &apperr.Error{Code: apperr.ENOTFOUND, Message: "this app is served at its own address: open it from the rental's page", Key: "err.workspace_apps_origin"}
	}
	ticket, err := w.ws.Ticket(r.Context(), handlers.CurrentUser(c), ws.RentalID, w.Sessions.Token(r.Context()))
	if err != nil {
		return err
	}
	to := w.appsOriginURL(ws.RentalID) + "/rentals/" + strconv.FormatInt(ws.RentalID, 10) + "/.suanli-app?" +
		url.Values{"ticket": {ticket}, "next": {r.URL.RequestURI()}}.Encode()
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	return c.Redirect(http.StatusSeeOther, to)
}

// AppsLogin is GET /rentals/{id}/.suanli-app?ticket=&next= on a rental's
// apps origin: the ticket, once, for the origin's own session cookie,
// then on to next (a path of the rental's apps).
func (w *Handler) AppsLogin(c echo.Context) error {
	id, on := onAppsOrigin(c)
	if !on {
		return apperr.NotFound("page")
	}
	prefix := "/rentals/" + strconv.FormatInt(id, 10) + "/"
	next := c.QueryParam("next")
	if !strings.HasPrefix(next, prefix) || strings.ContainsAny(next, "\\\r\n") {
		next = jupyterPrefix(id)
	}
	token, exp, err := w.ws.Redeem(c.Request().Context(), c.QueryParam("ticket"), id)
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: AppCookie, Value: token, Path: "/", Expires: exp, HttpOnly: true,
		Secure: strings.HasPrefix(w.Rentals.BaseURL, "https://"), SameSite: http.SameSiteLaxMode})
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	return c.Redirect(http.StatusSeeOther, next)
}

// recheck authorises a lasting request again: on an apps origin its
// session (still valid, its user's sessions not ended), else the
// marketplace's; then the user's right to work in the rental.
func (w *Handler) recheck(c echo.Context, ws *workspace.Workspace) func(context.Context) error {
	if _, on := onAppsOrigin(c); on {
		token := ""
		if ck, err := c.Cookie(AppCookie); err == nil {
			token = ck.Value
		}
		return func(ctx context.Context) error {
			cur, err := w.ws.AppUser(ctx, token, ws.RentalID)
			if err != nil {
				return err
			}
			return w.ws.Recheck(ctx, cur, ws.RentalID)
		}
	}
	return w.sessionRecheck(c, ws)
}
