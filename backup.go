package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"suanli/config"
	"suanli/models"
)

// backupSQLite writes a consistent copy of the SQLite database db to out,
// which must not exist yet.
//
// It uses VACUUM INTO rather than the online backup API
// (sqlite3_backup_step): VACUUM INTO copies inside one read transaction,
// so under WAL it sees one snapshot while serve and work keep writing and
// never blocks them, and it cannot be restarted by those writes — the
// backup API restarts an incremental copy whenever another connection
// writes, and copying in one step holds the same read transaction anyway.
// The copy is also compacted and needs no -wal file beside it. It runs on
// the write connection (the read pool is query-only, which forbids VACUUM
// even INTO another file); it takes no write lock on the source.
func backupSQLite(ctx context.Context, db *models.DB, out string) error {
	if db.Dialect != config.SQLite {
		return fmt.Errorf("backup: %s is not SQLite", db.Dialect)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	// Create the file exclusively: an existing backup is never overwritten,
	// even by a second backup started at the same moment. VACUUM INTO
	// accepts an empty file.
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("backup: %s already exists; choose a new file", out)
		}
		return fmt.Errorf("backup: %w", err)
	}
	f.Close()
	if err := db.VacuumInto(ctx, abs); err != nil {
		os.Remove(abs)
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// pgDumpArgs are the arguments of the documented pg_dump command for the
// database at dbURL, writing the custom format (restore with pg_restore)
// to out, and the password the URL held. The password is left out of the
// arguments, which every user of the host can read (ps, /proc): it goes
// to pg_dump in PGPASSWORD instead.
func pgDumpArgs(dbURL, out string) (args []string, password string) {
	if u, err := url.Parse(dbURL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			password = pw
			u.User = url.User(u.User.Username())
			dbURL = u.String()
		}
	}
	return []string{"--format=custom", "--no-owner", "--no-privileges", "--file=" + out, "--dbname=" + dbURL}, password
}

// backupPostgres runs pg_dump when it is on PATH; otherwise it prints the
// command to run (with the password left out of the URL: give it in
// PGPASSWORD or ~/.pgpass) and fails, since nothing was backed up.
func backupPostgres(ctx context.Context, dbURL, out string) error {
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("backup: %s already exists; choose a new file", out)
	}
	args, password := pgDumpArgs(dbURL, out)
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = strconv.Quote(a)
		}
		fmt.Println("pg_dump is not on PATH here; on a host with the PostgreSQL client tools of the server's major version run:")
		fmt.Printf("  pg_dump %s\n", strings.Join(quoted, " "))
		fmt.Println("(password in PGPASSWORD or ~/.pgpass); restore with: pg_restore --no-owner --dbname=URL " + out)
		// No file was written: a scheduled backup must not look as if it
		// had succeeded.
		return fmt.Errorf("backup: no backup written: pg_dump is not on PATH")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if password != "" {
		cmd.Env = append(os.Environ(), "PGPASSWORD="+password)
	}
	if err := cmd.Run(); err != nil {
		os.Remove(out)
		return fmt.Errorf("backup: pg_dump: %w", err)
	}
	return nil
}
