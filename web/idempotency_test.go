package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/payments"
)

// idemPost POSTs body to path with a bearer token and, unless key is
// empty, an Idempotency-Key. It is safe to call from several goroutines.
func idemPost(a *app, path, token, key, body string) (int, http.Header, string, error) {
	req, err := http.NewRequest("POST", a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := a.c.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b), err
}

// idemRenter is a funded renter with an API token, and the body of a
// request to rent one GPU of the RTX 4090 demo offer.
func idemRenter(t *testing.T, a *app, email string) (org int64, token, body string) {
	t.Helper()
	u, org := fundedRenter(t, a.db, email, testPassword, 1_000_000)
	token, _, err := (&accounts.Service{DB: a.db}).CreateAPIToken(context.Background(), u, "idempotency")
	if err != nil {
		t.Fatal(err)
	}
	o := rtxOffer(t, a.db)
	// Its node's GPUs healthy and free, as its agent would report them.
	for _, q := range []string{`UPDATE nodes SET health = 'healthy', status = 'active' WHERE id = ?`,
		`UPDATE gpus SET health = 'healthy', state = 'free' WHERE node_id = ?`} {
		if err := a.db.W.Exec(q, o.NodeID).Error; err != nil {
			t.Fatal(err)
		}
	}
	return org, token, `{"offer_id":` + idParam(o.ID) + `,"gpus":1,"ssh_public_key":"` + testSSHKey(t) + `"}`
}

func errorCode(t *testing.T, body string) (code, param, msg string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Param, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not the error shape: %s", body)
	}
	return e.Error.Code, e.Error.Param, e.Error.Message
}

// The same key and body returns the first answer without renting again;
// another body with the same key is a 409; another key rents again.
func TestIdempotencyKeyOnRentals(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, body := idemRenter(t, a, "idem-rent@example.com")

		st, h, first, err := idemPost(a, "/api/v1/rentals", token, "rent-1", body)
		must(t, err == nil && st == http.StatusCreated, "first: %d %v %s", st, err, first)
		must(t, h.Get("Idempotent-Replayed") == "", "the first answer says it is replayed")
		loc := h.Get("Location")

		st, h, again, err := idemPost(a, "/api/v1/rentals", token, "rent-1", body)
		must(t, err == nil && st == http.StatusCreated, "retry: %d %v %s", st, err, again)
		must(t, again == first, "the retry's body differs:\n%s\n%s", first, again)
		must(t, h.Get("Idempotent-Replayed") == "true", "Idempotent-Replayed %q", h.Get("Idempotent-Replayed"))
		must(t, h.Get("Location") == loc, "Location %q, first %q", h.Get("Location"), loc)
		must(t, rentalsOf(t, db, org) == 1, "%d rentals after a retry", rentalsOf(t, db, org))

		other := strings.Replace(body, `"gpus":1`, `"gpus":2`, 1)
		st, _, resp, _ := idemPost(a, "/api/v1/rentals", token, "rent-1", other)
		must(t, st == http.StatusConflict, "another body, same key: %d %s", st, resp)
		code, param, _ := errorCode(t, resp)
		must(t, code == "conflict" && param == "Idempotency-Key", "error %s %s", code, param)
		must(t, rentalsOf(t, db, org) == 1, "%d rentals after a conflicting key", rentalsOf(t, db, org))

		st, _, resp, _ = idemPost(a, "/api/v1/rentals", token, "rent-2", body)
		must(t, st == http.StatusCreated && resp != first, "a new key: %d %s", st, resp)
		must(t, rentalsOf(t, db, org) == 2, "%d rentals after a new key", rentalsOf(t, db, org))

		// Without a key nothing changes: each POST rents.
		st, _, resp, _ = idemPost(a, "/api/v1/rentals", token, "", body)
		must(t, st == http.StatusCreated, "no key: %d %s", st, resp)
		must(t, rentalsOf(t, db, org) == 3, "%d rentals", rentalsOf(t, db, org))
	})
}

// A refused request is answered the same way again (the stored 400), and
// a key that is no printable ASCII is itself a 400.
func TestIdempotencyKeyStoresRefusalsAndChecksTheKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, _ := idemRenter(t, a, "idem-refused@example.com")
		st, _, first, _ := idemPost(a, "/api/v1/rentals", token, "bad-1", `{"offer_id":0}`)
		must(t, st == http.StatusBadRequest, "bad body: %d %s", st, first)
		st, h, again, _ := idemPost(a, "/api/v1/rentals", token, "bad-1", `{"offer_id":0}`)
		must(t, st == http.StatusBadRequest && again == first && h.Get("Idempotent-Replayed") == "true", "replayed refusal: %d %s", st, again)

		for _, key := range []string{strings.Repeat("k", 256), "naïve"} {
			st, _, resp, _ := idemPost(a, "/api/v1/rentals", token, key, `{"offer_id":1}`)
			must(t, st == http.StatusBadRequest, "key %q: %d %s", key, st, resp)
			_, param, _ := errorCode(t, resp)
			must(t, param == "Idempotency-Key", "param %q", param)
		}
		must(t, rentalsOf(t, db, org) == 0, "rentals were made")
	})
}

// Top-ups too: the retry answers the same pending top-up, made once.
func TestIdempotencyKeyOnTopups(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, _ := idemRenter(t, a, "idem-topup@example.com")
		body := `{"amount_fen":50000,"method":"bank_transfer"}`
		st, _, first, _ := idemPost(a, "/api/v1/wallet/topups", token, "topup-1", body)
		must(t, st == http.StatusCreated, "first: %d %s", st, first)
		st, h, again, _ := idemPost(a, "/api/v1/wallet/topups", token, "topup-1", body)
		must(t, st == http.StatusCreated && again == first && h.Get("Idempotent-Replayed") == "true", "retry: %d %s", st, again)
		var n int64
		if err := db.R.Model(&models.Topup{}).Where("org_id = ?", org).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		must(t, n == 1, "%d top-ups", n)
		st, _, resp, _ := idemPost(a, "/api/v1/wallet/topups", token, "topup-1", `{"amount_fen":60000,"method":"bank_transfer"}`)
		must(t, st == http.StatusConflict, "another amount, same key: %d %s", st, resp)
	})
}

// Keys are per user: another user's request with the same key is theirs.
func TestIdempotencyKeyIsPerUser(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	orgA, tokenA, body := idemRenter(t, a, "idem-a@example.com")
	orgB, tokenB, _ := idemRenter(t, a, "idem-b@example.com")
	st, _, _, _ := idemPost(a, "/api/v1/rentals", tokenA, "shared", body)
	must(t, st == http.StatusCreated, "A: %d", st)
	st, h, resp, _ := idemPost(a, "/api/v1/rentals", tokenB, "shared", body)
	must(t, st == http.StatusCreated && h.Get("Idempotent-Replayed") == "", "B: %d %s", st, resp)
	must(t, rentalsOf(t, a.db, orgA) == 1 && rentalsOf(t, a.db, orgB) == 1, "rentals A %d B %d", rentalsOf(t, a.db, orgA), rentalsOf(t, a.db, orgB))
}

// A duplicate that arrives while the first request still runs is a 409
// and runs nothing; once the key has expired (24 h) it may be used again.
func TestIdempotencyKeyInProgressAndExpiry(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, body := idemRenter(t, a, "idem-busy@example.com")
		u, err := a.db.UserByEmail(context.Background(), "idem-busy@example.com")
		if err != nil {
			t.Fatal(err)
		}
		// The first request's claim, as its middleware makes it before running.
		sum := sha256.Sum256([]byte("POST /api/v1/rentals\n" + body))
		if _, ok, err := db.ClaimIdempotencyKey(context.Background(), u.ID, "busy", hex.EncodeToString(sum[:]), 24*time.Hour, 5*time.Minute); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		st, _, resp, _ := idemPost(a, "/api/v1/rentals", token, "busy", body)
		must(t, st == http.StatusConflict, "in progress: %d %s", st, resp)
		_, _, msg := errorCode(t, resp)
		must(t, strings.Contains(msg, "in progress"), "message %q", msg)
		must(t, rentalsOf(t, db, org) == 0, "a duplicate ran")

		st, _, first, _ := idemPost(a, "/api/v1/rentals", token, "day", body)
		must(t, st == http.StatusCreated, "first: %d %s", st, first)
		real := db.Now
		db.Now = func() time.Time { return real().Add(25 * time.Hour) }
		defer func() { db.Now = real }()
		st, h, again, _ := idemPost(a, "/api/v1/rentals", token, "day", body)
		must(t, st == http.StatusCreated && h.Get("Idempotent-Replayed") == "" && again != first, "after 25 h: %d %s", st, again)
		// The in-progress claim is stale by now and taken over too.
		st, _, resp, _ = idemPost(a, "/api/v1/rentals", token, "busy", body)
		must(t, st == http.StatusCreated, "stale claim: %d %s", st, resp)
		must(t, rentalsOf(t, db, org) == 3, "%d rentals", rentalsOf(t, db, org))
	})
}

// Concurrent duplicates: exactly one runs. The others get its answer
// (replayed) or a 409 while it is still running, never a second rental.
func TestIdempotencyKeyConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, body := idemRenter(t, a, "idem-race@example.com")
		const n = 8
		type answer struct {
			status   int
			replayed bool
			body     string
			err      error
		}
		answers := make([]answer, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				st, h, b, err := idemPost(a, "/api/v1/rentals", token, "race", body)
				answers[i] = answer{st, h.Get("Idempotent-Replayed") == "true", b, err}
			})
		}
		close(start)
		wg.Wait()
		ran, created := 0, ""
		for _, r := range answers {
			must(t, r.err == nil, "request: %v", r.err)
			switch {
			case r.status == http.StatusCreated && !r.replayed:
				ran++
				created = r.body
			case r.status == http.StatusCreated:
			case r.status == http.StatusConflict:
				_, _, msg := errorCode(t, r.body)
				must(t, strings.Contains(msg, "in progress"), "409: %s", r.body)
			default:
				t.Fatalf("answer %d %s", r.status, r.body)
			}
		}
		must(t, ran == 1, "%d requests ran", ran)
		for _, r := range answers {
			if r.replayed {
				must(t, r.body == created, "a replay differs from the answer")
			}
		}
		must(t, rentalsOf(t, db, org) == 1, "%d rentals", rentalsOf(t, db, org))
	})
}

// panicOnceGateway is a card gateway whose first checkout panics (a bug
// in a handler's dependency) and whose later ones succeed.
type panicOnceGateway struct{ calls atomic.Int32 }

func (g *panicOnceGateway) Checkout(context.Context, payments.CheckoutRequest) (string, string, error) {
	if g.calls.Add(1) == 1 {
		panic("checkout exploded")
	}
	return "cs_test_retry", "https://checkout.stripe.test/cs_test_retry", nil
}

func (g *panicOnceGateway) Refund(context.Context, string, int64, string) (string, error) {
	return "", errors.New("not used")
}

// A request whose handler panics is a 500 like any other server error:
// its key is released, so the client's retry with the same key runs
// (rather than being refused as "in progress" for minutes).
func TestIdempotencyKeyReleasedWhenTheHandlerPanics(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		gw := &panicOnceGateway{}
		a := newAppWith(t, db, func(h *handlers.Handler) { h.Wallet.Gateway = gw })
		_, token, _ := idemRenter(t, a, "idem-panic@example.com")
		// Straight to the router: the OpenAPI check around a.srv would
		// (rightly) fail the test on the undocumented 500.
		post := func() *httptest.ResponseRecorder {
			req := httptest.NewRequest("POST", "/api/v1/wallet/topups", strings.NewReader(`{"amount_fen":50000,"method":"stripe"}`))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "panics")
			rec := httptest.NewRecorder()
			a.e.ServeHTTP(rec, req)
			return rec
		}
		first := post()
		must(t, first.Code == http.StatusInternalServerError, "panicking handler: %d %s", first.Code, first.Body)
		again := post()
		must(t, again.Code == http.StatusCreated && again.Header().Get("Idempotent-Replayed") == "",
			"retry after a panic: %d %s", again.Code, again.Body)
		must(t, strings.Contains(again.Body.String(), "cs_test_retry"), "retry body %s", again.Body)
	})
}
