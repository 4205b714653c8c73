package workload

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// A container's output is passed on a line at a time whatever the
// lines' length: a progress bar redrawn with carriage returns on one
// line of megabytes shows as its last state, the lines after it still
// come, and a last line without a newline too.
func TestLogLines(t *testing.T) {
	var progress strings.Builder
	progress.WriteString("2026-12-06T10:00:01.000000002Z ")
	for i := range 20000 {
		progress.WriteString("\r" + strings.Repeat(" ", 60) + "\r" + "step " + strings.Repeat("#", i%50) + " ")
	}
	progress.WriteString("\rdone 100%\n")
	in := "2026-12-06T10:00:00.000000001Z first line\n" +
		progress.String() +
		"2026-12-06T10:00:02.000000003Z 第三行 after\r\n" +
		"2026-12-06T10:00:03.000000004Z " + strings.Repeat("x", 3*maxLogLine) + "\n" +
		"2026-12-06T10:00:04.000000005Z no newline"
	l := newLogLines(strings.NewReader(in))
	want := []struct{ ts, text string }{
		{"2026-12-06T10:00:00.000000001Z", "first line"},
		{"2026-12-06T10:00:01.000000002Z", "…done 100%"},
		{"2026-12-06T10:00:02.000000003Z", "第三行 after"},
		{"2026-12-06T10:00:03.000000004Z", "…" + strings.Repeat("x", maxLogLine)},
		{"2026-12-06T10:00:04.000000005Z", "no newline"},
	}
	for i, w := range want {
		ts, text, err := l.next()
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if ts != w.ts || text != w.text {
			t.Errorf("line %d: %q %q (%d bytes), want %q %q", i, ts, text[:min(len(text), 40)], len(text), w.ts, w.text[:min(len(w.text), 40)])
		}
	}
	if _, _, err := l.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last line: %v, want EOF", err)
	}
}
