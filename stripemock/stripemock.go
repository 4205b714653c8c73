// Package stripemock starts Stripe's own API mock (github.com/stripe/stripe-mock,
// a tool in go.mod) for tests, on free loopback ports. Under CI=true a mock
// that cannot start fails the test instead of skipping it.
package stripemock

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Start runs stripe-mock until the test ends and returns its HTTP base URL.
// STRIPE_MOCK_BIN names a prebuilt binary; otherwise the tool is built.
func Start(tb testing.TB) string {
	tb.Helper()
	httpAddr, httpsAddr := freeAddr(tb), freeAddr(tb)
	// Both addresses, or stripe-mock also binds its default HTTPS port.
	args := []string{"-http-addr", httpAddr, "-https-addr", httpsAddr}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		if tb.Failed() || tb.Skipped() {
			cancel()
		}
	}()
	bin := os.Getenv("STRIPE_MOCK_BIN")
	if bin == "" {
		// Build the tool (cached after the first time) and run the binary
		// itself: killing `go tool`'s process would leave its child running.
		bin = filepath.Join(tb.TempDir(), "stripe-mock")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/stripe/stripe-mock").CombinedOutput(); err != nil {
			cancel()
			fail(tb, "build stripe-mock: %v\n%s", err, out)
		}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		cancel()
		fail(tb, "start stripe-mock: %v", err)
	}
	tb.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	// The first `go tool` run compiles it: allow for that.
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", httpAddr, 200*time.Millisecond); err == nil {
			c.Close()
			return "http://" + httpAddr
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fail(tb, "stripe-mock did not start on %s", httpAddr)
	return ""
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
