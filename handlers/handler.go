// Package handlers holds the HTTP handlers, one file per resource. A
// handler binds and validates input, calls market or models, and renders;
// rules and transactions live elsewhere.
package handlers

import (
	"bytes"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"suanli/accounts"
	"suanli/billing"
	"suanli/changefeed"
	"suanli/fleet"
	"suanli/identity"
	"suanli/offers"
	"suanli/providers"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"suanli/locales"
	"suanli/models"
	"suanli/rentals"
	"suanli/views"
	"suanli/views/accountpages"
)

// Handler carries the dependencies every handler needs; main and web set it.
type Handler struct {
	DB       *models.DB
	Index    *offers.Index
	Accounts *accounts.Service
	Sessions *scs.SessionManager
	Wallet   *billing.Wallet
	// StripeWebhookSecret verifies POST /webhooks/stripe (empty: no webhook).
	StripeWebhookSecret string
	// Bank is the platform's account that bank transfers go to.
	Bank accountpages.BankDetails
	// Rentals runs rentals and talks to node agents.
	Rentals *rentals.Service
	// Providers is the provider portal's and provider API's market side.
	Providers *providers.Service
	// Payouts pays providers and runs Stripe Connect onboarding.
	Payouts *providers.Payouts
	// Tunnels reaches the node agents' tunnels (browser access to
	// rentals' containers); nil: no tunnels are accepted.
	Tunnels *fleet.Tunnels
	// WorkspaceRecheck is how often a browser's lasting connection to a
	// container (a terminal, a kernel, a download) is authorised again;
	// zero: the browser package's default.
	WorkspaceRecheck time.Duration
	// AppsDomain, when set, serves renters' apps (Jupyter, declared
	// ports) on an origin of their own per rental, r{id}.AppsDomain, with
	// the scheme and port of the marketplace's base URL (--apps-domain).
	AppsDomain string
	// Changes tells waiting pages that what they show changed (the rental
	// page's event stream); nil: they poll. StreamKeepAlive and
	// StreamRefresh tune that stream (package rentalwatch; zero: its
	// defaults).
	Changes                        *changefeed.Feed
	StreamKeepAlive, StreamRefresh time.Duration
	// Identity is real-name verification (its pages, the admin's review
	// and reads, the SMS outbox); nil: the routes answer 503.
	Identity *identity.Service
}

// SessionUserKey is the session key of the logged-in user's id, and
// SessionEpochKey of the user's session epoch at login: a session whose
// epoch is older than the user's has been ended (a password change or
// reset, "log out other sessions").
const (
	SessionUserKey  = "user_id"
	SessionEpochKey = "epoch"
)

// Context keys set by the web layer's middleware.
const (
	UserKey    = "user"
	StudentKey = "student"
	FlashKey   = "flash"
	CSRFKey    = "csrf"
	// AppsRentalKey holds, on a request to a rental's apps origin, the
	// rental's id (int64).
	AppsRentalKey = "apps_rental"
	// CSRFCheckKey holds, on a route that streams a multipart body (a
	// file upload), a func(token string) bool that checks the CSRF token
	// the handler reads itself (the form's first part, or the
	// X-CSRF-Token header): the middleware cannot read such a form
	// without reading its whole body first.
	CSRFCheckKey = "csrf_check"
)

// IsStudent reports whether the request's user sees student prices (a
// confirmed member of an approved lab). The authentication middleware
// leaves a lookup under StudentKey, run at the first ask and kept: most
// API calls never ask. A failed lookup shows list prices, and is logged.
func IsStudent(c echo.Context) bool {
	switch v := c.Get(StudentKey).(type) {
	case bool:
		return v
	case func() (bool, error):
		student, err := v()
		if err != nil {
			slog.Error("student pricing lookup", "err", err)
		}
		c.Set(StudentKey, student)
		return student
	}
	return false
}

// CurrentUser returns the logged-in (or token-authenticated) user, or nil.
func CurrentUser(c echo.Context) *models.User {
	u, _ := c.Get(UserKey).(*models.User)
	return u
}

// LangKey is the echo context key under which the locale middleware stores
// the request's language.
const LangKey = "lang"

// Lang returns the request's language (zh-CN by default).
func Lang(c echo.Context) string {
	if l, ok := c.Get(LangKey).(string); ok && l != "" {
		return l
	}
	return locales.ZH
}

// ViewCtx builds the view context for the request.
func ViewCtx(c echo.Context) views.Ctx {
	vc := views.Ctx{
		Lang:      Lang(c),
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID),
		Path:      c.Request().URL.RequestURI(),
		URL:       reverser(c.Echo()),
	}
	vc.CSRF, _ = c.Get(CSRFKey).(func() string)
	vc.Flash, _ = c.Get(FlashKey).(string)
	vc.Student = IsStudent(c)
	if u := CurrentUser(c); u != nil {
		vc.User = &views.Viewer{ID: u.ID, Name: u.Name, Email: u.Email, Verified: u.Verified(), Admin: u.PlatformAdmin}
	}
	return vc
}

// routeURLs caches each route's URL split where its parameters go:
// echo's Reverse walks the whole route table (a map) per call, and an
// offer list page asks for a few links per row.
var routeURLs sync.Map

// routeSlot marks a parameter's place when a route's parts are cut.
const routeSlot = "\x00"

func reverser(e *echo.Echo) func(string, ...any) string {
	return func(name string, params ...any) string {
		v, ok := routeURLs.Load(name)
		if !ok {
			slots := make([]any, 8)
			for i := range slots {
				slots[i] = routeSlot
			}
			v, _ = routeURLs.LoadOrStore(name, strings.Split(e.Reverse(name, slots...), routeSlot))
		}
		parts := v.([]string)
		if len(parts) != len(params)+1 {
			return e.Reverse(name, params...) // as echo does with too few
		}
		var b strings.Builder
		b.WriteString(parts[0])
		for i, p := range params {
			switch p := p.(type) {
			case int64:
				b.WriteString(strconv.FormatInt(p, 10))
			case string:
				b.WriteString(p)
			default:
				fmt.Fprint(&b, p)
			}
			b.WriteString(parts[i+1])
		}
		return b.String()
	}
}

// IsHTMX reports whether the request came from htmx (and so wants a fragment).
func IsHTMX(c echo.Context) bool {
	return c.Request().Header.Get("HX-Request") == "true" && c.Request().Header.Get("HX-Boosted") != "true"
}

var pagePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Render writes a templ component as an HTML response with the status. The
// page is rendered whole into a pooled buffer and sent in one write with
// its Content-Length: streaming it through a 4 KB writer cost a dozen
// syscalls and chunked encoding per page (40% of the offer list's CPU).
func Render(c echo.Context, status int, comp templ.Component) error {
	buf := pagePool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 1<<20 {
			pagePool.Put(buf)
		}
	}()
	if err := comp.Render(c.Request().Context(), buf); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	if h.Get(echo.HeaderContentEncoding) == "" {
		h.Set(echo.HeaderContentLength, strconv.Itoa(buf.Len()))
	}
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(buf.Bytes())
	return err
}

// JSONError is the one JSON error shape: {"error":{"code":…,"message":…}}.
type JSONError struct {
	Error JSONErrorBody `json:"error"`
}

// JSONErrorBody is the inside of JSONError.
type JSONErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Param names the query parameter at fault, for bad input.
	Param string `json:"param,omitempty"`
}
