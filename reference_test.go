package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// flagsOf runs a command with -h and returns the flags its usage lists
// (flag sets print their defaults on stderr).
func flagsOf(t *testing.T, run func() error) []string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	runErr := run()
	os.Stderr = stderr
	w.Close()
	out := <-done
	if !errors.Is(runErr, flag.ErrHelp) {
		t.Fatalf("-h: %v", runErr)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("no flags in the usage:\n%s", out)
	}
	return names
}

// readmeConfiguration returns the README's ## Configuration section and,
// within it, the agent's subsection.
func readmeConfiguration(t *testing.T) (section, agentPart string) {
	t.Helper()
	b, err := os.ReadFile("README.md")
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
	a := strings.Index(s, "### `suanli agent`")
	if a < 0 {
		t.Fatal("the configuration section has no ### `suanli agent` part")
	}
	rest := s[a+3:]
	if j := strings.Index(rest, "\n### "); j >= 0 {
		rest = rest[:j]
	}
	return s, rest
}

// Every flag of every command — the agent's, work's, migrate's, seed's and
// each admin command's, besides the shared ones (config/reference_test.go)
// — is in the README's configuration reference.
func TestREADMEConfigurationListsCommandFlags(t *testing.T) {
	ctx := context.Background()
	section, agentPart := readmeConfiguration(t)
	for _, name := range flagsOf(t, func() error { return runAgent(ctx, []string{"-h"}) }) {
		if !strings.Contains(agentPart, "| `--"+name+"` |") {
			t.Errorf("agent --%s is not in the README's agent table", name)
		}
	}
	commands := map[string]func() error{
		"work":    func() error { return work(ctx, []string{"-h"}) },
		"migrate": func() error { return migrate(ctx, []string{"-h"}) },
		"seed":    func() error { return seed(ctx, []string{"-h"}) },
	}
	for _, sub := range []string{"gpu-state", "create-user", "token", "credit", "node-token", "backup"} {
		commands["admin "+sub] = func() error { return admin(ctx, []string{sub, "-h"}) }
	}
	for cmd, run := range commands {
		for _, name := range flagsOf(t, run) {
			if !strings.Contains(section, "`--"+name+"`") {
				t.Errorf("%s --%s is not in the README's configuration reference", cmd, name)
			}
		}
	}
}
