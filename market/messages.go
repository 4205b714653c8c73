package market

import (
	"strconv"
	"time"

	"gorm.io/gorm"

	"suanli/gpu"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
)

// What the market writes for people to read (ledger memos, timeline
// details, audit details, reasons) is stored as a message beside its
// English text (see locales.Msg), so that each reader's pages say it in
// their language. The English stays what the API and the CSVs show.

// verbatim is text someone else wrote (an agent's error, an admin's
// reason) inside a message: shown as it is, in every language.
func verbatim(s string) locales.Msg { return locales.M("msg.verbatim", s) }

// checkMsg is what a check read, as a message: the agent's message when
// it is one the catalogues know, else its English detail as it came
// (agents before messages send only that).
func checkMsg(c gpu.Check) locales.Msg {
	if c.Msg.Valid("check.", "xid.") {
		return c.Msg
	}
	return verbatim(c.Detail)
}

// reasonsMsg is the failing checks of a verdict, and the extra reasons
// the server found, as one message, a line each; the zero Msg when there
// are none.
func reasonsMsg(v gpu.Verdict, extra ...locales.Msg) locales.Msg {
	var lines []locales.Msg
	for _, c := range v.Checks {
		if !c.OK {
			lines = append(lines, checkMsg(c))
		}
	}
	if len(lines) == 0 {
		// A verdict of an agent that sent reasons without checks.
		for _, r := range v.Reasons {
			lines = append(lines, verbatim(r))
		}
	}
	lines = append(lines, extra...)
	if len(lines) == 0 {
		return locales.Msg{}
	}
	return locales.Lines(lines...)
}

// nodeLabel names a node in a renter's timeline: by its name, or its
// number when it has none.
func nodeLabel(tx *gorm.DB, id int64) string {
	if name := models.NodeName(tx, id); name != "" {
		return name
	}
	return "#" + strconv.FormatInt(id, 10)
}

// shTime is a time as pages show it (Asia/Shanghai), for message arguments.
func shTime(t time.Time) string { return t.In(pricing.Shanghai).Format("2006-01-02 15:04") }

// termMsg names a rental's term ("week", "month") as a message.
func termMsg(term string) locales.Msg { return locales.M("msg.term." + term) }
