package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// What the agent sends never holds an escaped NUL (the server refuses the
// body), while text that only looks like one, a backslash and "u0000",
// arrives as it was.
func TestBodiesCarryNoNUL(t *testing.T) {
	for _, text := range []string{
		"docker: \x00exit status 1",
		"\x00",
		`a literal \u0000 stays`,
		"mixed \\\x00 and \\\\u0000 and \"quoted\x00\"",
	} {
		b, err := json.Marshal(Result{Error: text})
		if err != nil {
			t.Fatal(err)
		}
		got := withoutNUL(b)
		var r Result
		if err := json.Unmarshal(got, &r); err != nil {
			t.Fatalf("%q: %v (%s)", text, err, got)
		}
		if want := strings.ReplaceAll(text, "\x00", "\ufffd"); r.Error != want {
			t.Errorf("%q arrived as %q, want %q", text, r.Error, want)
		}
		if strings.Contains(r.Error, "\x00") {
			t.Errorf("%q still holds a NUL", text)
		}
	}
}
