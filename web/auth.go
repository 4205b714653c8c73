package web

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/platform"
	"suanli/reqlog"
	"suanli/routenames"
)

// NewSessions returns the session manager: sessions in the database (any
// replica serves any request), HttpOnly SameSite=Lax cookies, Secure when
// served over HTTPS.
func NewSessions(db *models.DB, secure bool) *scs.SessionManager {
	sm := scs.New()
	sm.Store = platform.SessionStore{DB: db}
	sm.Lifetime = 30 * 24 * time.Hour
	sm.IdleTimeout = 7 * 24 * time.Hour
	sm.Cookie.Name = "suanli_session"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = secure
	sm.Cookie.Persist = true
	return sm
}

// noSession lists the paths that never need a session or a user.
func noSession(c echo.Context) bool {
	p := c.Request().URL.Path
	// Node agents authenticate with their own credential (agentapi:
	// Handler.agentNode), rentals' verifiers with theirs (/witness/).
	return strings.HasPrefix(p, "/static/") || strings.HasPrefix(p, "/agent/") || strings.HasPrefix(p, "/witness/") || p == "/healthz" || p == "/readyz" || p == "/metrics"
}

// sessions loads and saves the session around a request.
func sessions(sm *scs.SessionManager) echo.MiddlewareFunc {
	wrapped := echo.WrapMiddleware(sm.LoadAndSave)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		w := wrapped(next)
		return func(c echo.Context) error {
			if noSession(c) || onAppsOrigin(c) {
				// An apps origin has its own session (appsOrigin).
				return next(c)
			}
			if rawKind(c) == rawProxy {
				// Read only: a proxied app makes many requests, and each
				// would otherwise write the session (its idle timeout).
				token := ""
				if ck, err := c.Cookie(sm.Cookie.Name); err == nil {
					token = ck.Value
				}
				ctx, err := sm.Load(c.Request().Context(), token)
				if err != nil {
					return err
				}
				c.SetRequest(c.Request().WithContext(ctx))
				return next(c)
			}
			return w(c)
		}
	}
}

// authenticate puts the user into the context: from an API token on
// /api/ requests (a bad token is a 401), else from the session.
func authenticate(h *handlers.Handler) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if noSession(c) || onAppsOrigin(c) {
				return next(c)
			}
			ctx := c.Request().Context()
			var u *models.User
			if auth := c.Request().Header.Get("Authorization"); auth != "" && isAPI(c) {
				plain, ok := strings.CutPrefix(auth, "Bearer ")
				if !ok {
					return apperr.Errorf(apperr.EUNAUTHORIZED, "use Authorization: Bearer <token>")
				}
				var err error
				if u, err = h.Accounts.UserByAPIToken(ctx, strings.TrimSpace(plain)); err != nil {
					return err
				}
				if accounts.Suspended(u) {
					return accounts.ErrAccountSuspended()
				}
			} else if id := h.Sessions.GetInt64(ctx, handlers.SessionUserKey); id != 0 {
				found, err := h.DB.UserByID(ctx, id)
				switch apperr.Code(err) {
				case apperr.ENOTFOUND:
					// The account is gone: forget the session.
					_ = h.Sessions.Destroy(ctx)
				case apperr.EINTERNAL:
					if err != nil {
						return err
					}
					u = found
					if h.Sessions.GetInt64(ctx, handlers.SessionEpochKey) != found.SessionEpoch {
						// Ended by a password change or reset, or "log out
						// other sessions": worth nothing from now on.
						if err := h.Sessions.Destroy(ctx); err != nil {
							return err
						}
						u = nil
					}
				}
				if accounts.Suspended(u) {
					// Kept, so that lifting the suspension restores it, but
					// worth nothing meanwhile: guard says why.
					c.Set(suspendedKey, true)
					u = nil
				}
				if flash := h.Sessions.PopString(ctx, handlers.FlashKey); flash != "" {
					c.Set(handlers.FlashKey, flash)
				}
			}
			if u != nil {
				c.Set(handlers.UserKey, u)
				reqlog.Set(ctx, "user_id", u.ID)
				// Audit entries written below this request name the user and address.
				c.SetRequest(c.Request().WithContext(models.WithActor(ctx, u.ID, c.RealIP())))
				if rawKind(c) != rawProxy {
					// Asked for only where prices show (handlers.IsStudent):
					// a statement most API calls do not need.
					c.Set(handlers.StudentKey, func() (bool, error) { return h.DB.StudentPricing(ctx, u.ID) })
				}
			}
			return next(c)
		}
	}
}

// suspendedKey marks a request whose session belongs to a suspended user:
// it is served as anonymous, and routes that need a user refuse it.
const suspendedKey = "suspended"

// Route access levels.
const (
	public = iota
	user   // logged in (pages redirect to /login; the API answers 401)
	admin  // platform admins only
)

// guard enforces a route's access level.
func guard(level int, next echo.HandlerFunc) echo.HandlerFunc {
	if level == public {
		return next
	}
	return func(c echo.Context) error {
		u := handlers.CurrentUser(c)
		if u == nil && c.Get(suspendedKey) == true {
			return accounts.ErrAccountSuspended()
		}
		if u == nil {
			if isAPI(c) {
				return apperr.Errorf(apperr.EUNAUTHORIZED, "log in or send Authorization: Bearer <token>")
			}
			if c.Request().Method == http.MethodGet {
				return c.Redirect(http.StatusSeeOther, c.Echo().Reverse(routenames.AuthLogin)+"?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			return apperr.Errorf(apperr.EUNAUTHORIZED, "log in first")
		}
		if level == admin {
			if err := accounts.RequirePlatformAdmin(u); err != nil {
				return err
			}
		}
		return next(c)
	}
}
