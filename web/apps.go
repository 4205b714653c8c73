package web

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/handlers/browser"
	"suanli/models"
	"suanli/reqlog"
	"suanli/routenames"
	"suanli/workspace"
)

// appsRoutes are the only routes an apps origin (r{id}.APPS-DOMAIN)
// serves: the rental's Jupyter and declared ports, and the ticket's
// landing. None of the marketplace's own pages is ever served there, so
// no script of a renter's app shares an origin with them.
var appsRoutes = map[string]bool{
	routenames.RentalsJupyterRoot: true,
	routenames.RentalsJupyter:     true,
	routenames.RentalsPortRoot:    true,
	routenames.RentalsPort:        true,
	routenames.AppsLogin:          true,
}

// appsRental is the rental whose apps origin host names (r{id}.domain,
// with or without a port), or false when it is not one.
func appsRental(host, domain string) (int64, bool) {
	if domain == "" {
		return 0, false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, ok := strings.CutSuffix(strings.ToLower(host), "."+strings.ToLower(domain))
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutPrefix(label, "r")
	if !ok || digits == "" || strings.ContainsAny(digits, ".") {
		return 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != digits {
		return 0, false
	}
	return id, true
}

// appsOrigin, on an apps origin, lets through only its rental's app
// routes (anything else is 404), authenticated by the origin's own
// session (workspace.AppUser) instead of the marketplace's; a visitor
// without one is sent to the same address on the marketplace, which
// hands out a ticket or asks to log in. It runs after routing, before
// the session is loaded.
func appsOrigin(h *handlers.Handler, names map[string]string) echo.MiddlewareFunc {
	ws := h.Workspace()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			id, ok := appsRental(r.Host, h.AppsDomain)
			if !ok {
				return next(c)
			}
			route := names[r.Method+" "+c.Path()]
			if !appsRoutes[route] || c.Param("id") != strconv.FormatInt(id, 10) {
				return apperr.NotFound("page")
			}
			c.Set(handlers.AppsRentalKey, id)
			if route == routenames.AppsLogin {
				return next(c)
			}
			var u *models.User
			if ck, err := r.Cookie(browser.AppCookie); err == nil {
				var err error
				if u, err = ws.AppUser(r.Context(), ck.Value, id); err != nil && !errors.Is(err, workspace.ErrNoAppSession) {
					return err
				}
			}
			if u == nil {
				if r.Method != http.MethodGet && r.Method != http.MethodHead {
					return apperr.Errorf(apperr.EUNAUTHORIZED, "open the app from the rental's page")
				}
				return c.Redirect(http.StatusSeeOther, strings.TrimRight(h.Rentals.BaseURL, "/")+r.URL.RequestURI())
			}
			c.Set(handlers.UserKey, u)
			reqlog.Set(r.Context(), "user_id", u.ID)
			return next(c)
		}
	}
}

// onAppsOrigin reports whether the request came to an apps origin.
func onAppsOrigin(c echo.Context) bool {
	_, ok := c.Get(handlers.AppsRentalKey).(int64)
	return ok
}
