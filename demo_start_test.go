package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"
)

// syncBuffer is a log sink written from the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// demoServe runs serve --demo on dir with the extra flags until the test
// ends or stop is called, and returns its address once /readyz answers.
func demoServe(t *testing.T, dir string, flags ...string) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, append([]string{"--addr", addr, "--data-dir", dir, "--demo", "--base-url", "http://" + addr}, flags...))
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	// Seeding and migrating take a while on a loaded machine: a generous
	// deadline, a small pause between polls.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get("http://" + addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return addr, stop
			}
		}
	}
	t.Fatal("serve --demo never became ready")
	return "", nil
}

// waitFor waits, up to a deadline, until the log holds every one of wants.
func waitFor(t *testing.T, logs *syncBuffer, wants ...string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		s := logs.String()
		missing := ""
		for _, w := range wants {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log never showed %q:\n%s", missing, tail(s, 40))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

var loginLine = regexp.MustCompile(`(?m)^  (admin|provider) +(\S+@\S+) +password (.+)$`)

// serve --demo says its logins again, in a block of their own, once the
// server listens (the seeding's log lines scroll away at once), and its
// simulated agents' routine traffic is logged at debug, not info.
func TestDemoStartPrintsLoginsAndKeepsAgentsQuiet(t *testing.T) {
	logs := &syncBuffer{}
	prevOut, prevLog := logOutput, slog.Default()
	logOutput = logs
	t.Cleanup(func() { logOutput = prevOut; slog.SetDefault(prevLog) })
	dir := t.TempDir()

	addr, stop := demoServe(t, dir, "--log-level", "debug")
	// The block is written before the server answers its first request.
	out := logs.String()
	block := strings.Index(out, "Suanli demo is ready")
	serving := strings.Index(out, "msg=serving")
	if block < 0 {
		t.Fatalf("no demo login block once ready:\n%s", tail(out, 40))
	}
	if serving < 0 || block < serving {
		t.Errorf("the login block (at %d) should follow the serving line (at %d)", block, serving)
	}
	logins := map[string][2]string{}
	for _, m := range loginLine.FindAllStringSubmatch(out[block:], -1) {
		logins[m[1]] = [2]string{m[2], m[3]}
	}
	if len(logins) != 2 {
		t.Fatalf("login block lists %v, want the admin and the provider:\n%s", logins, out[block:min(len(out), block+800)])
	}
	for role, l := range logins {
		if st := logIn(t, addr, l[0], l[1]); st != http.StatusSeeOther {
			t.Errorf("%s %s with the printed password %q: log in answered %d, want 303", role, l[0], l[1], st)
		}
	}

	// The agents' start and their heartbeats are in the log, at debug.
	out = waitFor(t, logs, `msg="agent starting"`, "path=/agent/v1/heartbeat")
	for _, line := range strings.Split(out, "\n") {
		if (strings.Contains(line, `msg="agent starting"`) || strings.Contains(line, "path=/agent/")) && !strings.Contains(line, "level=DEBUG") {
			t.Errorf("routine agent traffic not at debug: %s", line)
			break
		}
	}
	stop()

	// A second start on the same data: the accounts exist, and the block
	// says where their passwords were shown instead of printing none.
	logs2 := &syncBuffer{}
	logOutput = logs2
	demoServe(t, dir, "--log-level", "info")
	out = logs2.String()
	block = strings.Index(out, "Suanli demo is ready")
	if block < 0 {
		t.Fatalf("no demo login block on the second start:\n%s", tail(out, 40))
	}
	again := loginLine.FindAllStringSubmatch(out[block:], -1)
	if len(again) != 2 {
		t.Errorf("second start: the block lists %d accounts, want 2:\n%s", len(again), out[block:min(len(out), block+800)])
	}
	for _, m := range again {
		if !strings.Contains(m[3], "first start") {
			t.Errorf("second start: %s password %q, want a pointer to the first start", m[1], m[3])
		}
	}
}

// logIn posts the login form as a browser would and returns the status.
func logIn(t *testing.T, addr, email, password string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "http://" + addr
	res, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	u, _ := url.Parse(base)
	csrf := ""
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "suanli_csrf" {
			csrf = ck.Value
		}
	}
	res, err = c.PostForm(base+"/login", url.Values{"_csrf": {csrf}, "email": {email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
