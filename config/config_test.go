package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"suanli/secrets"
)

func parse(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	get := Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return get()
}

func TestDefaultsAreEmbeddedSQLite(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	c, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	d, loc, _ := c.Database()
	if c.Addr != ":8080" || d != SQLite || loc != "data/suanli.db" {
		t.Errorf("defaults: addr %q dialect %q loc %q", c.Addr, d, loc)
	}
}

func TestEnvironmentAndFlags(t *testing.T) {
	t.Setenv("SUANLI_ADDR", "127.0.0.1:9000")
	t.Setenv("DATABASE_URL", "postgres://u:secret@localhost/db")
	c, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if d, _, _ := c.Database(); c.Addr != "127.0.0.1:9000" || d != Postgres {
		t.Errorf("env not used: %+v", c)
	}
	c, err = parse(t, "--addr", ":7000")
	if err != nil || c.Addr != ":7000" {
		t.Errorf("flag must win over env: %v %+v", err, c)
	}
}

func TestValidationNamesEveryProblem(t *testing.T) {
	t.Setenv("DATABASE_URL", "mysql://u:secret@x/y")
	_, err := parse(t, "--addr", "nonsense", "--log-level", "loud")
	if err == nil {
		t.Fatal("want error")
	}
	msg := err.Error()
	for _, want := range []string{"SUANLI_ADDR", "DATABASE_URL", "log-level"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %s", msg, want)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error leaks the password: %q", msg)
	}
}

// The platform key: SUANLI_SECRET_KEY when set (a malformed one is a
// configuration error that does not repeat it); else a key file beside
// the embedded database, the same on every start; else, on PostgreSQL,
// none.
func TestPlatformKey(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DATABASE_URL", "")
	t.Setenv("SUANLI_SECRET_KEY", "")
	c, err := parse(t, "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	k1, err := c.PlatformKey()
	if err != nil || k1 == nil {
		t.Fatalf("embedded database without a key: %v %v", k1, err)
	}
	sealed := k1.Box("t").Seal([]byte("x"), nil)
	k2, err := c.PlatformKey()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k2.Box("t").Open(sealed, nil); err != nil || string(got) != "x" {
		t.Errorf("the key file's key changed between starts: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SecretKeyFile)); err != nil {
		t.Errorf("no key file in the data directory: %v", err)
	}

	t.Setenv("DATABASE_URL", "postgres://u:pw@localhost/db")
	c, err = parse(t, "--data-dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if k, err := c.PlatformKey(); k != nil || err != nil {
		t.Errorf("PostgreSQL without a key: %v %v, want none", k, err)
	}
	key := secrets.GenerateKey()
	t.Setenv("SUANLI_SECRET_KEY", key)
	c, err = parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := c.PlatformKey(); k == nil || err != nil {
		t.Errorf("PostgreSQL with SUANLI_SECRET_KEY: %v %v", k, err)
	}

	t.Setenv("SUANLI_SECRET_KEY", "too-short-a-key-hunter2")
	_, err = parse(t)
	if err == nil || !strings.Contains(err.Error(), "SUANLI_SECRET_KEY") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a malformed key: %v, want an error naming SUANLI_SECRET_KEY without the key", err)
	}
}
