// Package models holds the gorm records and the stores that query and change
// them. A store method owns its transaction; helpers take the tx.
package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "github.com/mattn/go-sqlite3" // the SQLite driver ("sqlite3"), cgo
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
)

// DB is the database handle shared by stores. On SQLite every write goes
// through one connection (SQLite has one writer; a single connection avoids
// busy errors and lock upgrades), while reads use a separate pool so they
// stay concurrent under WAL. On PostgreSQL both are the same pool.
type DB struct {
	Dialect string
	// W is for writes and transactions, R for reads that may run concurrently.
	W, R *gorm.DB
	// SQL is the write pool as database/sql (migrations, River on SQLite).
	SQL *sql.DB
	// ReadSQL is the read pool as database/sql.
	ReadSQL *sql.DB
	// PGX is the pgx pool on PostgreSQL (River's worker driver), else nil.
	PGX *pgxpool.Pool
	// Now is the clock; tests replace it.
	Now func() time.Time
}

// Open connects to the database described by dialect and location (see
// config.Config.Database) and checks that it answers.
func Open(ctx context.Context, dialect, location string) (*DB, error) {
	switch dialect {
	case "sqlite":
		return openSQLite(ctx, location)
	case "postgres":
		return openPostgres(ctx, location)
	}
	return nil, fmt.Errorf("models: unknown dialect %q", dialect)
}

func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:                                   logger.Discard,
		SkipDefaultTransaction:                   true,
		DisableForeignKeyConstraintWhenMigrating: true,
		NowFunc:                                  func() time.Time { return time.Now().UTC() },
	}
}

func openSQLite(ctx context.Context, path string) (*DB, error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
	}
	// _txlock=immediate takes the write lock at BEGIN, so a transaction
	// never fails half-way on a lock upgrade.
	common := "_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_synchronous=NORMAL"
	w, err := sql.Open("sqlite3", "file:"+path+"?"+common+"&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open SQLite %s: %w", path, err)
	}
	r, err := sql.Open("sqlite3", "file:"+path+"?"+common+"&_query_only=true")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	r.SetConnMaxLifetime(0)
	gw, err := gorm.Open(sqlite.Dialector{Conn: w}, gormConfig())
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	gr, err := gorm.Open(sqlite.Dialector{Conn: r}, gormConfig())
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	slog.Debug("database open", "dialect", "sqlite", "path", path)
	return &DB{Dialect: "sqlite", W: gw, R: gr, SQL: w, ReadSQL: r, Now: time.Now}, nil
}

func openPostgres(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	g, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), gormConfig())
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &DB{Dialect: "postgres", W: g, R: g, SQL: sqlDB, ReadSQL: sqlDB, PGX: pool, Now: time.Now}, nil
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.ReadSQL.PingContext(ctx); err != nil {
		return err
	}
	return db.SQL.PingContext(ctx)
}

// Close closes every pool.
func (db *DB) Close() error {
	errs := []error{db.SQL.Close()}
	if db.ReadSQL != db.SQL {
		errs = append(errs, db.ReadSQL.Close())
	}
	if db.PGX != nil {
		db.PGX.Close()
	}
	return errors.Join(errs...)
}

// Tx runs fn in a write transaction; nested calls should pass the tx on.
// The transaction carries the database's clock (see Now).
func (db *DB) Tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return db.W.WithContext(context.WithValue(ctx, clockKey{}, db.Now)).Transaction(fn)
}

type clockKey struct{}

// Now reads the clock of the DB whose Tx opened tx (DB.Now, which tests
// replace), so that code handed only a transaction still takes its time
// from the injected clock. Outside a DB.Tx it is the wall clock.
func Now(tx *gorm.DB) time.Time {
	if tx != nil && tx.Statement != nil && tx.Statement.Context != nil {
		if now, ok := tx.Statement.Context.Value(clockKey{}).(func() time.Time); ok && now != nil {
			return now()
		}
	}
	return time.Now()
}

// Attempt runs fn inside tx behind a savepoint and undoes what fn wrote
// when it returns an error for which undo is true; that error is returned
// too (any other error leaves the savepoint for the caller's transaction
// to roll back as a whole).
func Attempt(tx *gorm.DB, name string, fn func() error, undo func(error) bool) error {
	if err := tx.SavePoint(name).Error; err != nil {
		return err
	}
	err := fn()
	if err != nil && undo(err) {
		if rerr := tx.RollbackTo(name).Error; rerr != nil {
			return rerr
		}
	}
	return err
}

// AdminPerPage is the console's page size.
const AdminPerPage = 50

// ClampPage bounds a page number and size: page from 1 (and at most a
// million, so the offset stays in range), size from 1 to maxPer, default
// AdminPerPage.
func ClampPage(page, per, maxPer int) (int, int) {
	page = min(max(page, 1), 1_000_000)
	if per <= 0 {
		per = AdminPerPage
	}
	return page, min(per, maxPer)
}

// LockRow adds FOR UPDATE on PostgreSQL (SQLite's one writer needs none).
func LockRow(tx *gorm.DB) *gorm.DB {
	if tx.Dialector.Name() == "postgres" {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}
