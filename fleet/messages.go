package fleet

import (
	"suanli/gpu"
	"suanli/locales"
)

// Verbatim is text someone else wrote (an agent's error, an admin's
// reason) inside a message: shown as it is, in every language.
func Verbatim(s string) locales.Msg { return locales.M("msg.verbatim", s) }

// CheckMsg is what a check read, as a message: the agent's message when
// it is one the catalogues know, else its English detail as it came
// (agents before messages send only that).
func CheckMsg(c gpu.Check) locales.Msg {
	if c.Msg.Valid("check.", "xid.") {
		return c.Msg
	}
	return Verbatim(c.Detail)
}

// ReasonsMsg is the failing checks of a verdict, and the extra reasons
// the server found, as one message, a line each; the zero Msg when there
// are none.
func ReasonsMsg(v gpu.Verdict, extra ...locales.Msg) locales.Msg {
	var lines []locales.Msg
	for _, c := range v.Checks {
		if !c.OK {
			lines = append(lines, CheckMsg(c))
		}
	}
	if len(lines) == 0 {
		// A verdict of an agent that sent reasons without checks.
		for _, r := range v.Reasons {
			lines = append(lines, Verbatim(r))
		}
	}
	lines = append(lines, extra...)
	if len(lines) == 0 {
		return locales.Msg{}
	}
	return locales.Lines(lines...)
}
