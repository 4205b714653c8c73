package rentercli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// A rent whose answer was lost is sent again with the same key; when the
// first request is still running on the server (409 on the
// Idempotency-Key) the CLI waits and asks again until the first answer
// is replayed, and exits 0 with that rental, not 12 beside a rental
// that exists and bills.
func TestRentWaitsForTheFirstRequestStillInProgress(t *testing.T) {
	type seen struct{ key, body string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/rentals" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Header.Get("Idempotency-Key"), string(b)})
		n := len(got)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch n {
		case 1:
			// The answer is lost (the server goes on creating it).
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case 2:
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"error":{"code":"conflict","message":"a request with this Idempotency-Key is still in progress; retry shortly","param":"Idempotency-Key"}}`)
		default:
			w.Header().Set("Idempotent-Replayed", "true")
			w.Header().Set("Location", "/api/v1/rentals/77")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":77,"offer_id":3,"state":"pending","gpus":1}`)
		}
	}))
	defer srv.Close()
	home := t.TempDir()
	writeKey(t, home)
	env := map[string]string{"HOME": home, "SUANLI_SERVER": srv.URL, "SUANLI_TOKEN": "tok"}
	out, errOut, code := runCLI(t, env, "rent", "3", "--image", "debian-sshd", "--no-wait", "--json")
	if code != ExitOK || !strings.Contains(out, `"id": 77`) {
		t.Fatalf("rent: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "no answer: trying again in 1s") || !strings.Contains(errOut, "the server is still working on the first request: asking again in 1s") {
		t.Errorf("stderr says nothing of the waits:\n%s", errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0] != got[1] || got[1] != got[2] || !strings.HasPrefix(got[0].key, "cli-") {
		t.Errorf("requests: %+v; want three alike, with one key", got)
	}
}

// The waits for a first request still in progress end at a deadline:
// then the command says the request may yet take effect (exit 1), not
// that it was refused. A 409 on the key to a first send (not a repeat)
// is the server's word as it is.
func TestInProgressWaitEnds(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"error":{"code":"conflict","message":"still in progress","param":"Idempotency-Key"}}`)
	}))
	defer srv.Close()
	d := newDoer(nil)
	d.inProgressFor = time.Millisecond
	c, err := apiclient.NewClientWithResponses(srv.URL, apiclient.WithHTTPClient(d))
	if err != nil {
		t.Fatal(err)
	}
	a := &app{ctx: context.Background(), stderr: io.Discard, lang: locales.EN}
	key := apiclient.IdempotencyKey("cli-test-key")
	res, err := c.CreateRentalWithResponse(context.Background(), &apiclient.CreateRentalParams{IdempotencyKey: &key}, apiclient.RentalRequest{OfferId: ptr(3)})
	err = a.answer(err, res, http.StatusCreated)
	if exitCodeOf(err) != ExitError || !strings.Contains(a.describe(err), "it may yet take effect") {
		t.Errorf("after the deadline: exit %d, %q", exitCodeOf(err), a.describe(err))
	}
	mu.Lock()
	if calls != 3 {
		t.Errorf("%d requests, want 3 (lost, in progress, in progress past the deadline)", calls)
	}
	calls = 1 // the next request is a first send that gets the 409
	mu.Unlock()
	res, err = c.CreateRentalWithResponse(context.Background(), &apiclient.CreateRentalParams{IdempotencyKey: &key}, apiclient.RentalRequest{OfferId: ptr(3)})
	if err = a.answer(err, res, http.StatusCreated); exitCodeOf(err) != ExitConflict {
		t.Errorf("a first send answered 409: exit %d (%v), want 12", exitCodeOf(err), err)
	}
}

// writeKey puts an ed25519 public key at home/.ssh/id_ed25519.pub (rent
// sends it; its private half is not needed here).
func writeKey(t *testing.T, home string) {
	t.Helper()
	dir := filepath.Join(home, ".ssh")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "id_ed25519.pub"), []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0 r@h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
