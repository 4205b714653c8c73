package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
)

// csrfCookie holds the token that every state-changing request must send
// back as the _csrf form field or the X-CSRF-Token header (double submit).
// It is HttpOnly: pages put the token into forms and into htmx's headers.
const csrfCookie = "suanli_csrf"

// csrf rejects, with 403 and before any handler runs, a state-changing
// request without the token; requests authenticated by an API token carry
// no cookies and are exempt. Cross-site state-changing requests are
// refused by their Sec-Fetch-Site header too.
func csrf(secure bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") && isAPI(c) {
				return next(c)
			}
			if strings.HasPrefix(r.URL.Path, "/webhooks/") || strings.HasPrefix(r.URL.Path, "/witness/") {
				// Signed by the sender instead (see handlers.StripeWebhook),
				// or, for a rental's verifier, authorised by its own token
				// alone: no session or cookie is read there (noSession).
				return next(c)
			}
			token := ""
			if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) == 43 {
				token = ck.Value
			}
			switch rawKind(c) {
			case rawProxy:
				// A proxied app's requests carry no token of ours: the
				// handler checks their origin instead.
				return next(c)
			case rawBody:
				// The handler reads the token (the form's first part)
				// before any other part, and nothing runs without it.
				site := r.Header.Get("Sec-Fetch-Site")
				c.Set(handlers.CSRFCheckKey, func(sent string) bool {
					return token != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(token)) == 1 && site != "cross-site" && site != "same-site"
				})
				return next(c)
			}
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				sent := r.Header.Get("X-CSRF-Token")
				if sent == "" {
					sent = c.FormValue("_csrf")
				}
				site := r.Header.Get("Sec-Fetch-Site")
				if token == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 || site == "cross-site" || site == "same-site" {
					return &apperr.Error{Code: apperr.EFORBIDDEN, Message: "missing or invalid CSRF token", Key: "err.csrf"}
				}
			}
			// The token is made when a page first needs it (a form): the
			// response is rendered before its headers are written, so the
			// cookie can still be set then.
			c.Set(handlers.CSRFKey, func() string {
				if token == "" {
					b := make([]byte, 32)
					if _, err := rand.Read(b); err != nil {
						panic("crypto/rand: " + err.Error())
					}
					token = base64.RawURLEncoding.EncodeToString(b)
					c.SetCookie(&http.Cookie{Name: csrfCookie, Value: token, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
				}
				return token
			})
			return next(c)
		}
	}
}
