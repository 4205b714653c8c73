package config

import (
	"flag"
	"strings"
	"testing"
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
