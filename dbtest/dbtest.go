// Package dbtest gives tests real, migrated databases: a SQLite file in a
// temporary directory always, and a fresh PostgreSQL database when
// TEST_DATABASE_URL is set. Under CI=true a missing PostgreSQL fails the
// test instead of skipping it.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"suanli/migrations"
	"suanli/models"
)

// Each runs fn as a subtest once per available database dialect.
func Each(t *testing.T, fn func(t *testing.T, db *models.DB)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

// SQLite returns a migrated SQLite database in a temporary directory.
func SQLite(tb testing.TB) *models.DB {
	tb.Helper()
	return open(tb, "sqlite", filepath.Join(tb.TempDir(), "test.db"))
}

// PostgresURL returns the URL of a fresh, empty PostgreSQL database that is
// dropped when the test ends, or skips (fails under CI) without one.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("TEST_DATABASE_URL is not set; CI requires the PostgreSQL suites")
		}
		tb.Skip("TEST_DATABASE_URL not set: PostgreSQL suite skipped")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("PostgreSQL at TEST_DATABASE_URL unreachable: %v", err)
		}
		tb.Skipf("PostgreSQL unreachable: %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "suanli_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Postgres returns a migrated, fresh PostgreSQL database (see PostgresURL).
func Postgres(tb testing.TB) *models.DB {
	tb.Helper()
	return open(tb, "postgres", PostgresURL(tb))
}

func open(tb testing.TB, dialect, loc string) *models.DB {
	tb.Helper()
	ctx := context.Background()
	db, err := models.Open(ctx, dialect, loc)
	if err != nil {
		tb.Fatalf("open %s: %v", dialect, err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := migrations.Up(ctx, dialect, db.SQL); err != nil {
		tb.Fatalf("migrate %s: %v", dialect, err)
	}
	if err := db.SyncCatalog(ctx); err != nil {
		tb.Fatalf("sync catalogue: %v", err)
	}
	return db
}
