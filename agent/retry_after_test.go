package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A server that answers 429 with Retry-After is waited for: the agent's
// next try comes no sooner than it asked (within a sane bound), and a
// heartbeat refused as too frequent waits at least one interval.
func TestRetryAfterIsHonoured(t *testing.T) {
	retryAfter := "7"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", retryAfter)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"code":"rate_limited","message":"slow down"}}`))
	}))
	t.Cleanup(srv.Close)
	a := &Agent{server: srv.URL, client: srv.Client(), cfg: Config{Version: "test"}}

	err := a.call(context.Background(), http.MethodPost, PathHeartbeat, time.Second, Heartbeat{}, nil)
	if !isTooMany(err) || !retryable(err) {
		t.Fatalf("a 429: %v, want a retryable too-many error", err)
	}
	var bo backoff
	if w := bo.after(err); w < 7*time.Second {
		t.Errorf("after a 429 with Retry-After: 7 the agent waits %v", w)
	}
	for _, tc := range []struct {
		header string
		min    time.Duration
		max    time.Duration
	}{
		{"1", time.Second, backoffMax},
		{"100000", maxRetryAfter, maxRetryAfter}, // bounded
		{"soon", 0, backoffMax},                  // unreadable: the backoff alone
		{"", 0, backoffMax},
	} {
		retryAfter = tc.header
		err := a.call(context.Background(), http.MethodGet, PathTasks, time.Second, nil, nil)
		var bo backoff
		if w := bo.after(err); w < tc.min || w > tc.max {
			t.Errorf("Retry-After %q: waits %v, want %v to %v", tc.header, w, tc.min, tc.max)
		}
	}
}
