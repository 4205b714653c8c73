package rentercli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"suanli/apiclient"
	"suanli/locales"
)

// A 429 is waited out (Retry-After) and the request sent again, a few
// times; then the command gives up with exit 7. The server here only
// answers with the rate limiter's shape: the API's behaviour itself is
// tested against the real server (cli_journey_test.go).
func TestRateLimitIsRetriedThenExit7(t *testing.T) {
	var mu sync.Mutex
	calls, limited := 0, 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n <= limited {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"code":"rate_limited","message":"too many requests"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":1,"email":"r@example.com","name":"R","lang":"en","email_verified":true,"platform_admin":false,"student_pricing":false,"orgs":[]}`)
	}))
	defer srv.Close()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}
	var errOut bytes.Buffer
	a := &app{ctx: context.Background(), stderr: &errOut, lang: locales.EN}
	c, err := a.newClient(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.GetMeWithResponse(context.Background())
	if err := a.answer(err, res, http.StatusOK); err != nil {
		t.Fatalf("after two 429s: %v", err)
	}
	if n := count(); n != 3 || strings.Count(errOut.String(), "rate limited: trying again in 1s") != 2 {
		t.Errorf("%d calls, stderr %q", n, errOut.String())
	}

	mu.Lock()
	calls, limited = 0, 100
	mu.Unlock()
	res, err = c.GetMeWithResponse(context.Background())
	err = a.answer(err, res, http.StatusOK)
	if n := count(); exitCodeOf(err) != ExitRateLimited || n != 1+rateRetries {
		t.Errorf("always limited: exit %d after %d calls (%v)", exitCodeOf(err), n, err)
	}
}

// A write with an Idempotency-Key that got no answer is sent again with
// the same key and body; one without a key is not.
func TestLostAnswerRetriesOnlyIdempotentWrites(t *testing.T) {
	type seen struct{ key, body string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Header.Get("Idempotency-Key"), string(b)})
		first := len(got) == 1
		mu.Unlock()
		if first {
			// The connection drops before an answer (a timeout, a
			// restart of the server).
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"error":{"code":"no_capacity","message":"no free GPUs"}}`)
	}))
	defer srv.Close()
	requests := func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
	a := &app{ctx: context.Background(), stderr: io.Discard, lang: locales.EN}
	c, _ := a.newClient(srv.URL, "tok")
	key := apiclient.IdempotencyKey("cli-test-key")
	res, err := c.CreateRentalWithResponse(context.Background(), &apiclient.CreateRentalParams{IdempotencyKey: &key}, apiclient.RentalRequest{OfferId: ptr(3)})
	err = a.answer(err, res, http.StatusCreated)
	if exitCodeOf(err) != ExitNoCapacity {
		t.Fatalf("exit %d (%v), want 5", exitCodeOf(err), err)
	}
	if seen := requests(); len(seen) != 2 || seen[0] != seen[1] || seen[0].key != "cli-test-key" || !strings.Contains(seen[0].body, `"offer_id":3`) {
		t.Errorf("requests seen: %+v", seen)
	}

	mu.Lock()
	got = nil
	mu.Unlock()
	res2, err := c.StopRentalWithResponse(context.Background(), 9)
	if err = a.answer(err, res2, http.StatusOK); exitCodeOf(err) != ExitError || len(requests()) != 1 {
		t.Errorf("a stop without a key: exit %d after %d requests (%v)", exitCodeOf(err), len(requests()), err)
	}
}
