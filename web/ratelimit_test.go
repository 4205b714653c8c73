package web_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/offers"
	"suanli/web"
)

// manualClock is a clock that moves only when the test says so.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// rateLimitedApp is the real router over a seeded SQLite database with an
// API rate limit on a clock the test moves (the other tests run without
// a limit, as web.Options' zero value has none).
func rateLimitedApp(t *testing.T, rl web.RateLimit) (*app, *manualClock) {
	t.Helper()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{now: time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)}
	rl.Now = clock.Now
	e := web.New(testHandler(db, ix), web.Options{RateLimit: rl})
	srv := httptest.NewServer(validateAPI(t, e))
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	return &app{t: t, db: db, index: ix, e: e, srv: srv, c: &http.Client{Jar: jar}}, clock
}

func tokenFor(t *testing.T, a *app, email string) string {
	t.Helper()
	u, _ := fundedRenter(t, a.db, email, testPassword, 0)
	token, _, err := (&accounts.Service{DB: a.db}).CreateAPIToken(context.Background(), u, "rate")
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// Reads: a burst, then 429 with Retry-After and the error shape until the
// bucket refills; each token has its own bucket.
func TestRateLimitReadsPerToken(t *testing.T) {
	t.Parallel()
	a, clock := rateLimitedApp(t, web.RateLimit{ReadPerSec: 1, ReadBurst: 3, WritePerSec: 1, WriteBurst: 1})
	tokenA, tokenB := tokenFor(t, a, "rate-a@example.com"), tokenFor(t, a, "rate-b@example.com")
	me := func(token string) (*http.Response, string) {
		return a.get("/api/v1/me", "Authorization", "Bearer "+token)
	}
	for i := range 3 {
		res, body := me(tokenA)
		must(t, res.StatusCode == http.StatusOK, "request %d of the burst: %d %s", i+1, res.StatusCode, body)
	}
	res, body := me(tokenA)
	must(t, res.StatusCode == http.StatusTooManyRequests, "over the burst: %d", res.StatusCode)
	must(t, res.Header.Get("Retry-After") == "1", "Retry-After %q", res.Header.Get("Retry-After"))
	code, _, _ := errorCode(t, body)
	must(t, code == "rate_limited", "code %q", code)

	res, _ = me(tokenB)
	must(t, res.StatusCode == http.StatusOK, "another token was limited: %d", res.StatusCode)

	clock.Advance(time.Second)
	res, _ = me(tokenA)
	must(t, res.StatusCode == http.StatusOK, "after a second: %d", res.StatusCode)
	res, _ = me(tokenA)
	must(t, res.StatusCode == http.StatusTooManyRequests, "one token per second: %d", res.StatusCode)

	// Requests without a token (the browser, anonymous visitors) are not
	// limited here.
	for i := range 5 {
		res, _ := a.get("/api/v1/offers")
		must(t, res.StatusCode == http.StatusOK, "anonymous request %d: %d", i+1, res.StatusCode)
	}
}

// Writes have their own, lower limit; reads go on meanwhile.
func TestRateLimitWrites(t *testing.T) {
	t.Parallel()
	a, clock := rateLimitedApp(t, web.RateLimit{ReadPerSec: 10, ReadBurst: 10, WritePerSec: 0.25, WriteBurst: 1})
	token := tokenFor(t, a, "rate-w@example.com")
	topup := `{"amount_fen":10000,"method":"bank_transfer"}`
	res, body := a.apiPost("/api/v1/wallet/topups", token, topup)
	must(t, res.StatusCode == http.StatusCreated, "first write: %d %s", res.StatusCode, body)
	res, body = a.apiPost("/api/v1/wallet/topups", token, topup)
	must(t, res.StatusCode == http.StatusTooManyRequests, "second write: %d %s", res.StatusCode, body)
	must(t, res.Header.Get("Retry-After") == "4", "Retry-After %q, want 4 (one write per 4 s)", res.Header.Get("Retry-After"))
	must(t, strings.Contains(body, `"code":"rate_limited"`), "body %s", body)
	res, _ = a.get("/api/v1/wallet", "Authorization", "Bearer "+token)
	must(t, res.StatusCode == http.StatusOK, "a read after the writes ran out: %d", res.StatusCode)
	clock.Advance(4 * time.Second)
	res, body = a.apiPost("/api/v1/wallet/topups", token, topup)
	must(t, res.StatusCode == http.StatusCreated, "after Retry-After: %d %s", res.StatusCode, body)
}

// A class with rate 0 is unlimited (the tests' default, and an operator's
// way to turn a limit off).
func TestRateLimitZeroIsOff(t *testing.T) {
	t.Parallel()
	a, _ := rateLimitedApp(t, web.RateLimit{})
	token := tokenFor(t, a, "rate-off@example.com")
	for i := range 50 {
		res, _ := a.get("/api/v1/me", "Authorization", "Bearer "+token)
		must(t, res.StatusCode == http.StatusOK, "request %d: %d", i+1, res.StatusCode)
	}
}
