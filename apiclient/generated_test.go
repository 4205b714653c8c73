package apiclient_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"suanli/apiclient/internal/generate"
)

// TestGeneratedClientUpToDate regenerates the client from the embedded
// document and compares it with the committed client.gen.go: CI runs the
// tests, so a change to openapi.json without `go generate ./apiclient`
// fails here instead of shipping a client that has drifted.
func TestGeneratedClientUpToDate(t *testing.T) {
	want, err := generate.Client()
	if err != nil {
		t.Fatalf("generate the client: %v", err)
	}
	have, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatalf("apiclient/client.gen.go is missing: run go generate ./apiclient (%v)", err)
	}
	if bytes.Equal(have, want) {
		return
	}
	hl, wl := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(hl) && line < len(wl) && hl[line] == wl[line] {
		line++
	}
	t.Fatalf("apiclient/client.gen.go is stale: run go generate ./apiclient\nfirst difference at line %d:\n committed: %s\n generated: %s",
		line+1, at(hl, line), at(wl, line))
}

// TestGenerationIsDeterministic generates twice: the same document must
// give the same bytes, or the up-to-date check would fail at random.
func TestGenerationIsDeterministic(t *testing.T) {
	a, err := generate.Client()
	if err != nil {
		t.Fatal(err)
	}
	b, err := generate.Client()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two generations of the client differ")
	}
}

// TestGeneratedHeader checks the file carries Go's generated-code marker,
// which tools (and the architecture test's line count) go by.
func TestGeneratedHeader(t *testing.T) {
	code, err := generate.Client()
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(code), "\n")
	if !strings.HasPrefix(first, "// Code generated ") || !strings.HasSuffix(first, " DO NOT EDIT.") {
		t.Fatalf("the first line is not a Code generated … DO NOT EDIT. marker: %q", first)
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}
