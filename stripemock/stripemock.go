// Package stripemock starts Stripe's own API mock (github.com/stripe/stripe-mock,
// a tool in go.mod) for tests, on free loopback ports. Under CI=true a mock
// that cannot start fails the test instead of skipping it.
package stripemock

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Start runs stripe-mock until the test ends and returns its HTTP base URL.
// STRIPE_MOCK_BIN names a prebuilt binary; otherwise the tool is built.
func Start(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("STRIPE_MOCK_BIN")
	if bin == "" {
		// Build the tool (cached after the first time) and run the binary
		// itself: killing `go tool`'s process would leave its child running.
		bin = filepath.Join(tb.TempDir(), "stripe-mock")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/stripe/stripe-mock").CombinedOutput(); err != nil {
			fail(tb, "build stripe-mock: %v\n%s", err, out)
		}
	}
	// A free port is free when it is picked, not necessarily when the mock
	// binds it (another test's process may take it in between): a mock that
	// exits at once is started again on other ports.
	var last string
	for range 3 {
		url, out, ok := start(tb, bin)
		if ok {
			return url
		}
		last = out
	}
	fail(tb, "stripe-mock did not start: %s", last)
	return ""
}

// start runs the mock once; ok is false (with what it printed) when it
// exited before it listened.
func start(tb testing.TB, bin string) (url, out string, ok bool) {
	tb.Helper()
	httpAddr, httpsAddr := freeAddr(tb), freeAddr(tb)
	// Both addresses, or stripe-mock also binds its default HTTPS port.
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-http-addr", httpAddr, "-https-addr", httpsAddr)
	var buf lockedBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		cancel()
		fail(tb, "start stripe-mock: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", httpAddr, 200*time.Millisecond); err == nil {
			c.Close()
			tb.Cleanup(func() {
				cancel()
				<-exited
			})
			return "http://" + httpAddr, "", true
		}
		select {
		case <-exited:
			cancel()
			return "", buf.String(), false
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	<-exited
	return "", "no answer on " + httpAddr + " within a minute: " + buf.String(), false
}

// lockedBuffer collects the mock's output from its two pipes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func fail(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format+" (skipped outside CI)", args...)
}

func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
