package rentercli

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows a wait (a rental on its way to running): on a terminal
// one line with a spinner and the elapsed time, redrawn in place; else
// (a pipe, a CI log) a plain line each time what it says changes, so a
// log shows each step once.
type progress struct {
	w    io.Writer
	bar  *progressbar.ProgressBar
	last string
}

// newProgress starts a progress display on w (standard error: standard
// output stays clean for --json and the final answer).
func newProgress(w io.Writer, terminal bool) *progress {
	p := &progress{w: w}
	if terminal {
		p.bar = progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetSpinnerChangeInterval(100*time.Millisecond),
			progressbar.OptionThrottle(50*time.Millisecond),
			// Drawn at once, so that the spinner's own ticker redraws it
			// (it only redraws a bar that has started).
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	return p
}

// show says where the wait is.
func (p *progress) show(line string) {
	if line == p.last {
		return
	}
	p.last = line
	if p.bar != nil {
		p.bar.Describe(line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends the display: the spinner's line is cleared (the caller says
// how it ended), the plain lines stay.
func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
		p.bar = nil
	}
}
