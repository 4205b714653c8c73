package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"suanli/billing"
	"suanli/config"
	"suanli/dbtest"
	"suanli/migrations"
	"suanli/models"
	"suanli/models/ledger"
)

// `suanli admin backup --out F` on SQLite copies a live database: a seeded
// market with wallet credits posted by another connection before, during
// and after the copy. The copy opens, holds every table of the original
// as of one moment (the ledger balanced, the credits a whole number of
// transactions between the counts before and after), needs no migration,
// and the command refuses to overwrite it.
func TestAdminBackupSQLiteWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := seed(ctx, []string{"--data-dir", dir, "--demo", "--scale", "20"}); err != nil {
		t.Fatal(err)
	}
	live, err := models.Open(ctx, "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	u, err := accountsService(live, config.Config{BaseURL: "http://localhost:8080"}).CreateUser(ctx, "ops@example.com", "correct horse battery staple", "", false)
	if err != nil {
		t.Fatal(err)
	}
	orgs, err := live.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("orgs of the new user: %v %v", orgs, err)
	}
	org := orgs[0].Org.ID
	credits := func(db *models.DB) int64 {
		t.Helper()
		var n int64
		if err := db.R.Model(&ledger.LedgerTxn{}).Where("kind = ?", "backup_test").Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The writer: one credit per transaction until told to stop; it reports
	// each commit so the test can wait for writes on both sides of the copy.
	stop := make(chan struct{})
	wrote := make(chan struct{}, 1)
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := live.Tx(ctx, func(tx *gorm.DB) error {
				return billing.CreditPromo(tx, org, 100, "backup_test", "backup test", nil, nil, live.Now().UTC())
			}); err != nil {
				writeErr = err
				return
			}
			select {
			case wrote <- struct{}{}:
			default:
			}
		}
	})
	waitWrites := func(n int) {
		t.Helper()
		for range n {
			<-wrote
		}
	}
	waitWrites(5)
	before := credits(live)
	out := filepath.Join(t.TempDir(), "copy.db")
	if err := admin(ctx, []string{"backup", "--data-dir", dir, "--out", out}); err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	waitWrites(5)
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("writer: %v", writeErr)
	}
	after := credits(live)

	cp, err := models.Open(ctx, "sqlite", out)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	got := credits(cp)
	if got < before || got > after || after <= got {
		t.Errorf("copy holds %d credits; %d before the backup and %d after it (writes must continue past it)", got, before, after)
	}
	problems, err := ledger.LedgerCheck(ctx, cp)
	if err != nil || len(problems) > 0 {
		t.Errorf("ledger of the copy: %v %v", problems, err)
	}
	bal, err := ledger.WalletBalance(ctx, cp, org)
	if err != nil || bal < got*100 {
		t.Errorf("wallet balance in the copy %d (%v), want at least the %d credits of 100 fen", bal, err, got)
	}
	for _, table := range []string{"offers", "gpus", "nodes", "datacenters", "users", "orgs", "gpu_models"} {
		var a, b int64
		live.R.Table(table).Count(&a)
		cp.R.Table(table).Count(&b)
		if a == 0 || a != b {
			t.Errorf("%s: %d rows live, %d in the copy", table, a, b)
		}
	}
	if n, err := migrations.Up(ctx, "sqlite", cp.SQL); err != nil || n != 0 {
		t.Errorf("migrate on the copy applied %d (%v), want none", n, err)
	}
	st, err := migrations.Check(ctx, "sqlite", cp.SQL)
	if err != nil || st.Behind() {
		t.Errorf("schema of the copy: %v %v", st, err)
	}

	// Never overwrite: the same file again is refused and left as it was.
	info, _ := os.Stat(out)
	err = admin(ctx, []string{"backup", "--data-dir", dir, "--out", out})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second backup to the same file: %v", err)
	}
	if again, _ := os.Stat(out); again == nil || again.Size() != info.Size() || !again.ModTime().Equal(info.ModTime()) {
		t.Error("the existing backup was touched")
	}
	if err := admin(ctx, []string{"backup", "--data-dir", dir}); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("backup without --out: %v", err)
	}
}

// The password of DATABASE_URL never reaches pg_dump's arguments, which
// any user of the host can read: it is handed over in PGPASSWORD.
func TestPgDumpArgsKeepThePasswordOutOfArgv(t *testing.T) {
	args, pw := pgDumpArgs("postgres://suanli:s3cret@db.internal:5432/suanli?sslmode=require", "/backup/x.dump")
	if pw != "s3cret" {
		t.Errorf("password %q, want s3cret", pw)
	}
	for _, a := range args {
		if strings.Contains(a, "s3cret") {
			t.Errorf("argument %q holds the password", a)
		}
	}
	if !slices.Contains(args, "--dbname=postgres://suanli@db.internal:5432/suanli?sslmode=require") || !slices.Contains(args, "--file=/backup/x.dump") {
		t.Errorf("args %q", args)
	}
	if _, pw := pgDumpArgs("postgres://suanli@db.internal/suanli", "x"); pw != "" {
		t.Errorf("a URL without a password gave %q", pw)
	}
}

// On PostgreSQL, `admin backup` runs pg_dump (where it is installed) and
// writes a dump that pg_restore reads.
func TestAdminBackupPostgres(t *testing.T) {
	if _, err := exec.LookPath("pg_restore"); err != nil {
		t.Skip("no PostgreSQL client tools here")
	}
	dbURL := dbtest.PostgresURL(t)
	ctx := context.Background()
	db, err := models.Open(ctx, "postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, "postgres", db.SQL); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out := filepath.Join(t.TempDir(), "suanli.dump")
	if err := backupPostgres(ctx, dbURL, out); err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command("pg_restore", "--list", out).CombinedOutput()
	if err != nil || !strings.Contains(string(list), "TABLE public idempotency_keys") {
		t.Errorf("pg_restore --list: %v\n%s", err, list)
	}
	if err := backupPostgres(ctx, dbURL, out); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second backup to the same file: %v", err)
	}
}

// Without pg_dump on PATH the command prints what to run and fails: no
// file was written, so a scheduled backup must not pass as done.
func TestAdminBackupPostgresWithoutPgDumpFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "suanli.dump")
	err := backupPostgres(context.Background(), "postgres://u:secret@127.0.0.1:5432/db", out)
	if err == nil || !strings.Contains(err.Error(), "pg_dump is not on PATH") {
		t.Errorf("backup without pg_dump: %v, want an error", err)
	}
	if _, statErr := os.Stat(out); statErr == nil {
		t.Error("a backup file was written")
	}
}
