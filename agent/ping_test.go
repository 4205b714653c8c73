package agent_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"suanli/agent"
)

// startPing serves the ping endpoint on a loopback port until the test ends.
func startPing(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.ServePing(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServePing: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("ServePing did not stop within a minute")
		}
	})
	return agent.DefaultPingURL("127.0.0.1", ln)
}

func TestPingAnswersBrowsersFromAnyOrigin(t *testing.T) {
	url := startPing(t)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/ping") {
		t.Fatalf("DefaultPingURL = %q", url)
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		t.Run(method, func(t *testing.T) {
			req, _ := http.NewRequest(method, url, nil)
			req.Header.Set("Origin", "https://suanli.example")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusNoContent || len(body) != 0 {
				t.Fatalf("%s /ping: %d with %d bytes, want 204 and no body", method, res.StatusCode, len(body))
			}
			for h, want := range map[string]string{
				"Access-Control-Allow-Origin": "*",
				"Timing-Allow-Origin":         "*",
				"Cache-Control":               "no-store",
			} {
				if got := res.Header.Get(h); got != want {
					t.Errorf("%s: %q, want %q", h, got, want)
				}
			}
		})
	}
}

func TestPingAnswersNothingElse(t *testing.T) {
	url := startPing(t)
	base := strings.TrimSuffix(url, "/ping")
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/", http.StatusNotFound},
		{"GET", "/ping/x", http.StatusNotFound},
		{"GET", "/agent/v1/heartbeat", http.StatusNotFound},
		{"POST", "/ping", http.StatusMethodNotAllowed},
		{"DELETE", "/ping", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, res.StatusCode, tc.want)
		}
		if res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s: CORS header on a refusal", tc.method, tc.path)
		}
	}
}

// A client that opens a connection and sends nothing is cut off instead
// of holding the connection.
func TestPingCutsOffSlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the header timeout")
	}
	url := startPing(t)
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/ping"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("GET /ping HTTP/1.1\r\n")) // and never the rest
	// The server's header timeout is a few seconds; the read deadline,
	// far past it, only bounds a server that never cuts the client off.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadAll(c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the server held the connection until the client gave up")
	}
}
