package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/migrations"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/listing"
)

// withoutOwnSettings clears, for the test, the environment variables
// the commands read (the database, suanli's own, mail, Stripe's keys), so
// that a developer's shell (DATABASE_URL pointing at their PostgreSQL,
// say) does not change what an in-process command does. It cannot be
// used by parallel tests.
func withoutOwnSettings(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || k == "SMTP_URL" || strings.HasPrefix(k, "SUANLI_") || (strings.HasPrefix(k, "STRIPE_") && k != "STRIPE_MOCK_BIN") {
			t.Setenv(k, "") // restores the value when the test ends
			os.Unsetenv(k)
		}
	}
}

// The subcommands parse their flags and do their work on a real database.
func TestSeedAndMigrateCommands(t *testing.T) {
	withoutOwnSettings(t)
	ctx := context.Background()
	dir := t.TempDir()
	if err := seed(ctx, []string{"--data-dir", dir, "--demo", "--scale", "50"}); err != nil {
		t.Fatal(err)
	}
	if err := seed(ctx, []string{"--data-dir", dir, "--demo"}); err != nil {
		t.Fatalf("second demo seed: %v", err)
	}
	if err := seed(ctx, []string{"--data-dir", dir}); err == nil {
		t.Error("seed without --demo or --scale must fail")
	}
	if err := migrate(ctx, []string{"--data-dir", dir, "--status"}); err != nil {
		t.Errorf("status after seeding: %v", err)
	}
	db, err := models.Open(ctx, "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, _, err := listing.All(ctx, db)
	if err != nil || len(rows) != 93 {
		t.Errorf("%d offers (%v), want 43 demo + 50 synthetic", len(rows), err)
	}
}

// On PostgreSQL, serve and work refuse a schema that is behind and say
// what to run; migrate brings it up.
func TestPostgresRefusesSchemaBehind(t *testing.T) {
	withoutOwnSettings(t)
	url := dbtest.PostgresURL(t)
	ctx := context.Background()
	err := work(ctx, []string{"--database-url", url})
	if err == nil || !strings.Contains(err.Error(), "suanli migrate") {
		t.Fatalf("work on an empty database: %v", err)
	}
	if err := migrate(ctx, []string{"--database-url", url}); err != nil {
		t.Fatal(err)
	}
	db, err := models.Open(ctx, "postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := migrations.Check(ctx, "postgres", db.SQL)
	if err != nil || st.Behind() {
		t.Errorf("after migrate: %v %v", st, err)
	}
}

func TestConfigErrorsStopTheCommand(t *testing.T) {
	withoutOwnSettings(t)
	err := serve(context.Background(), []string{"--addr", "nonsense", "--database-url", "mysql://x"})
	if err == nil || !strings.Contains(err.Error(), "SUANLI_ADDR") || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("serve with bad configuration: %v", err)
	}
}

// serve starts on the embedded default with the demo market, answers, and
// shuts down in order when its context ends.
func TestServeLifecycle(t *testing.T) {
	withoutOwnSettings(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, []string{"--addr", addr, "--data-dir", t.TempDir(), "--demo"}) }()
	// Seeding the demo and migrating take a while on a loaded machine;
	// the deadline is generous, the pause between polls small.
	ready := false
	for deadline := time.Now().Add(2 * time.Minute); !ready && time.Now().Before(deadline); {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			ready = res.StatusCode == 200
			res.Body.Close()
		}
		if !ready {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !ready {
		cancel()
		t.Fatalf("serve never became ready: %v", <-done)
	}
	res, err := http.Get("http://" + addr + "/offers?gpu=h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "H100 SXM5") {
		t.Errorf("offers: %d", res.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v on shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("still serving after shutdown")
	}
}

// Operators create users and tokens with the admin command, on the same
// database as the server; the token then authenticates the API.
func TestAdminCreateUserAndToken(t *testing.T) {
	withoutOwnSettings(t)
	ctx := context.Background()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("operator-pass-2026\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := admin(ctx, []string{"create-user", "--data-dir", dir, "--email", "Ops@Example.com", "--password-file", pw, "--admin"}); err != nil {
		t.Fatal(err)
	}
	if err := admin(ctx, []string{"create-user", "--data-dir", dir, "--email", "ops@example.com", "--password-file", pw}); err == nil {
		t.Error("a second user with the same email (other case) was created")
	}
	db, err := models.Open(ctx, "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := db.UserByEmail(ctx, "ops@example.com")
	if err != nil || !u.PlatformAdmin || !u.Verified() {
		t.Fatalf("user %+v, %v: want a verified platform admin", u, err)
	}
	orgs, _ := db.OrgsOfUser(ctx, u.ID)
	if len(orgs) != 1 || !orgs[0].Org.Personal || orgs[0].Membership.Role != "owner" {
		t.Errorf("personal organisation: %+v", orgs)
	}
	if err := admin(ctx, []string{"token", "--data-dir", dir, "--email", "nobody@example.com", "--name", "ci"}); err == nil {
		t.Error("token for an unknown user")
	}
	if err := admin(ctx, []string{"token", "--data-dir", dir, "--email", "ops@example.com", "--name", "ci"}); err != nil {
		t.Error(err)
	}
	toks, _ := db.APITokensOf(ctx, u.ID)
	if len(toks) != 1 || toks[0].Name != "ci" {
		t.Errorf("tokens %+v", toks)
	}
	if err := admin(ctx, []string{"credit", "--data-dir", dir, "--email", "ops@example.com", "--fen", "5000", "--reason", "launch promotion"}); err != nil {
		t.Fatal(err)
	}
	if err := admin(ctx, []string{"credit", "--data-dir", dir, "--email", "ops@example.com", "--fen", "-5", "--reason", "x"}); err == nil {
		t.Error("a negative credit was accepted")
	}
	if bal, _ := ledger.WalletBalance(ctx, db, orgs[0].Org.ID); bal != 5000 {
		t.Errorf("balance after admin credit: %d", bal)
	}
	lines, _ := ledger.WalletLedger(ctx, db, orgs[0].Org.ID, models.LedgerFilter{})
	if len(lines) != 1 || lines[0].Kind != "promo_credit" || lines[0].Memo != "launch promotion" {
		t.Errorf("ledger %+v", lines)
	}
}
