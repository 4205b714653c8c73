package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/benchmarks"
	"suanli/billing"
	"suanli/config"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/handlers"
	"suanli/identity"
	"suanli/models"
	"suanli/offers"
	"suanli/providers"
	"suanli/rentals"
	"suanli/secrets"
	"suanli/views/accountpages"
	"suanli/web"
	"suanli/workers"
)

// app is the real router over a real, seeded database.
type app struct {
	t     *testing.T
	db    *models.DB
	index *offers.Index
	e     *echo.Echo
	srv   *httptest.Server
	c     *http.Client
	// tunnels are the server's tunnels from node agents.
	tunnels *fleet.Tunnels
}

// newApp seeds the demo market into db and serves the real router.
func newApp(t *testing.T, db *models.DB) *app { return newAppWith(t, db, nil) }

// newAppWith is newApp with a chance to change the handler's dependencies
// (a Stripe gateway, say) before the router is built.
func newAppWith(t *testing.T, db *models.DB, change func(*handlers.Handler)) *app {
	t.Helper()
	return newAppOptions(t, db, web.Options{}, change)
}

// newAppOptions is newAppWith with the web layer's options.
func newAppOptions(t *testing.T, db *models.DB, opts web.Options, change func(*handlers.Handler)) *app {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	ix := offers.NewIndex(db)
	ix.Judge = benchmarks.JudgeOffers(db)
	if _, err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	h := testHandler(db, ix)
	if change != nil {
		change(h)
	}
	e := web.New(h, opts)
	// Every /api/v1 request and answer is checked against the OpenAPI
	// document (web/openapi_test.go), so the document cannot drift.
	srv := httptest.NewServer(validateAPI(t, e))
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	return &app{t: t, db: db, index: ix, e: e, srv: srv, tunnels: h.Tunnels, c: &http.Client{
		Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

func newSQLiteApp(t *testing.T) *app { return newApp(t, dbtest.SQLite(t)) }

// get requests path with optional headers (name, value pairs).
func (a *app) get(path string, headers ...string) (*http.Response, string) {
	a.t.Helper()
	req, err := http.NewRequest("GET", a.srv.URL+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := a.c.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// url builds a path from a route name.
func (a *app) url(name string, params ...any) string { return a.e.Reverse(name, params...) }

func must(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}

func contains(t *testing.T, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("body does not contain %q", w)
		}
	}
}

func query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}

func TestMain(m *testing.M) {
	// Request logs drown failures; SUANLI_TEST_LOG=1 shows them.
	if os.Getenv("SUANLI_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

// testPIIKey seals the test servers' personal information.
var testPIIKey = func() *secrets.Key {
	k, err := secrets.ParseKey(secrets.GenerateKey())
	if err != nil {
		panic(err)
	}
	return k
}()

// testHandler wires the real handlers over db, as main does.
func testHandler(db *models.DB, ix *offers.Index) *handlers.Handler {
	wallet := &billing.Wallet{DB: db, BaseURL: "http://suanli.test"}
	// Rentals with an insert-only queue: jobs are stored, not worked,
	// unless a test starts workers (startWorkers) on the same service.
	q, err := workers.New(db, workers.Options{})
	if err != nil {
		panic(err)
	}
	rentals := &rentals.Service{DB: db, Wallet: wallet, Jobs: q, Hub: fleet.NewHub(), BaseURL: "http://suanli.test"}
	// Real-name verification, wired as main wires it (the service is the
	// rent gate) but off: these suites are not about it; the
	// realname_*_test.go suites turn it on (realNameApp).
	ids := &identity.Service{DB: db, Ring: secrets.NewRing(config.PIIPurpose, testPIIKey), Mode: config.RealNameOff}
	rentals.Gate = ids
	return &handlers.Handler{
		DB: db, Index: ix, Identity: ids,
		Accounts:  &accounts.Service{DB: db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes},
		Sessions:  web.NewSessions(db, false),
		Wallet:    wallet,
		Rentals:   rentals,
		Providers: &providers.Service{DB: db, Rentals: rentals, BaseURL: "http://suanli.test"},
		Payouts:   &providers.Payouts{DB: db},
		Bank:      accountpages.BankDetails{Bank: "Test Bank", AccountName: "Suanli", Account: "6222 0000", Demo: true},
		Tunnels:   fleet.NewTunnels(db, ""),
		// A lasting connection to a container is authorised again every
		// second (30 s in production), so tests see one end soon.
		WorkspaceRecheck: time.Second,
	}
}
