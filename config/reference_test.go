package config_test

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"suanli/config"
)

// configurationSection returns the README's "## Configuration" section.
func configurationSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## Configuration\n")
	if i < 0 {
		t.Fatal("README has no ## Configuration section")
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	return s
}

// tableRow returns the cells of the README table row whose first cell is
// exactly `--name`.
func tableRow(section, name string) []string {
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `--"+name+"` |") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		return cells
	}
	return nil
}

// envInUsage is the environment variable a flag's usage names last, as
// "(NAME)" or "(NAME; …)".
var envInUsage = regexp.MustCompile(`\(([A-Z][A-Z0-9_]+)[;)]`)

// Every shared flag has its row in the README's configuration reference,
// with its environment variable and its default, so the reference cannot
// drift from config.Flags. (The agent's and the commands' own flags are
// checked by the root package's reference_test.go.)
func TestREADMEConfigurationListsEveryFlag(t *testing.T) {
	// Defaults come from the environment: read them without it.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SUANLI_") || strings.HasPrefix(k, "STRIPE_") || k == "DATABASE_URL" || k == "SMTP_URL" {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	section := configurationSection(t)
	fs := flag.NewFlagSet("reference", flag.ContinueOnError)
	config.Flags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		row := tableRow(section, f.Name)
		if row == nil {
			t.Errorf("--%s is not in the README's configuration reference (a row starting | `--%s` |)", f.Name, f.Name)
			return
		}
		if len(row) != 5 {
			t.Errorf("--%s: want 5 cells (flag, environment, default, meaning, example), got %d: %q", f.Name, len(row), row)
			return
		}
		if m := envInUsage.FindAllStringSubmatch(f.Usage, -1); len(m) > 0 {
			env := m[len(m)-1][1]
			if row[1] != "`"+env+"`" {
				t.Errorf("--%s: environment %s in the README, want `%s`", f.Name, row[1], env)
			}
		}
		if f.DefValue != "" && !sameDefault(row[2], f.DefValue) {
			t.Errorf("--%s: default %s in the README, want `%s`", f.Name, row[2], f.DefValue)
		}
		if row[4] == "" {
			t.Errorf("--%s: no example", f.Name)
		}
	})
	if n < 20 {
		t.Errorf("only %d shared flags found", n)
	}
}

// sameDefault compares a README default cell with a flag's default:
// literally, or as equal durations.
func sameDefault(cell, def string) bool {
	cell = strings.Trim(strings.Fields(cell + " ")[0], "`")
	if cell == def {
		return true
	}
	a, err1 := time.ParseDuration(cell)
	b, err2 := time.ParseDuration(def)
	return err1 == nil && err2 == nil && a == b
}
