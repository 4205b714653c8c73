package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/migrations"
	"suanli/models"
)

// The subcommands parse their flags and do their work on a real database.
func TestSeedAndMigrateCommands(t *testing.T) {
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
	rows, _, err := db.ListedOffers(ctx)
	if err != nil || len(rows) != 93 {
		t.Errorf("%d offers (%v), want 43 demo + 50 synthetic", len(rows), err)
	}
}

// On PostgreSQL, serve and work refuse a schema that is behind and say
// what to run; migrate brings it up.
func TestPostgresRefusesSchemaBehind(t *testing.T) {
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
	err := serve(context.Background(), []string{"--addr", "nonsense", "--database-url", "mysql://x"})
	if err == nil || !strings.Contains(err.Error(), "SUANLI_ADDR") || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("serve with bad configuration: %v", err)
	}
}
