// Package migrations holds the versioned SQL schema, one folder per dialect
// (goose), and applies it together with River's own migrations.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Status describes how far a database is behind the binary's schema.
type Status struct {
	Current, Target int64 // our goose versions
	RiverOK         bool
	RiverMessages   []string
}

// Behind reports whether any migration (ours or River's) is not applied.
func (s Status) Behind() bool { return s.Current < s.Target || !s.RiverOK }

func (s Status) String() string {
	msg := fmt.Sprintf("schema version %d of %d", s.Current, s.Target)
	if !s.RiverOK {
		msg += "; River: " + strings.Join(s.RiverMessages, "; ")
	}
	return msg
}

func provider(dialect string, db *sql.DB) (*goose.Provider, error) {
	var d goose.Dialect
	switch dialect {
	case "sqlite":
		d = goose.DialectSQLite3
	case "postgres":
		d = goose.DialectPostgres
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	sub, err := fs.Sub(files, dialect)
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(d, db, sub)
}

func riverMigrator(dialect string, db *sql.DB) (*rivermigrate.Migrator[*sql.Tx], error) {
	if dialect == "sqlite" {
		return rivermigrate.New(riversqlite.New(db), nil)
	}
	return rivermigrate.New(riverdatabasesql.New(db), nil)
}

// Up applies every pending migration, River's first (our later migrations
// may refer to its tables), then ours. It is safe to run repeatedly.
func Up(ctx context.Context, dialect string, db *sql.DB) (applied int, err error) {
	rm, err := riverMigrator(dialect, db)
	if err != nil {
		return 0, err
	}
	res, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return 0, fmt.Errorf("river migrations: %w", err)
	}
	applied += len(res.Versions)
	p, err := provider(dialect, db)
	if err != nil {
		return applied, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return applied, fmt.Errorf("suanli migrations: %w", err)
	}
	return applied + len(results), nil
}

// Check reports how the database's schema compares with the binary's.
func Check(ctx context.Context, dialect string, db *sql.DB) (Status, error) {
	p, err := provider(dialect, db)
	if err != nil {
		return Status{}, err
	}
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return Status{}, err
	}
	rm, err := riverMigrator(dialect, db)
	if err != nil {
		return Status{}, err
	}
	vr, err := rm.Validate(ctx, nil)
	if err != nil {
		return Status{}, fmt.Errorf("river validate: %w", err)
	}
	return Status{Current: cur, Target: target, RiverOK: vr.OK, RiverMessages: vr.Messages}, nil
}
