package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"suanli/locales"
	"suanli/pricing"
)

// Or returns s, or def when s is empty.
func Or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// I64 formats an int64 plainly (no separators): for ids and attributes.
func I64(n int64) string { return strconv.FormatInt(n, 10) }

// Itoa formats an int plainly (no separators): for ids and attributes.
func Itoa(n int) string { return strconv.Itoa(n) }

// Pct formats a percentage with one decimal: "99.5%".
func Pct(f float64) string { return fmt.Sprintf("%.1f%%", f) }

// Clock writes seconds as h:mm:ss (the rental page's ticker writes the
// same).
func Clock(secs int64) string {
	return fmt.Sprintf("%d:%02d:%02d", secs/3600, secs/60%60, secs%60)
}

// Duration writes seconds as hours and minutes in the reader's language.
func Duration(vc Ctx, secs int64) string {
	h, m := secs/3600, (secs%3600+59)/60
	if m == 60 {
		h, m = h+1, 0
	}
	switch {
	case h == 0:
		return vc.T("dur.m", m)
	case m == 0:
		return vc.T("dur.h", h)
	}
	return vc.T("dur.h_m", h, m)
}

// ShTime formats a time in Asia/Shanghai, to the second.
func ShTime(t time.Time) string { return t.In(pricing.Shanghai).Format("2006-01-02 15:04:05") }

// FmtTime formats an optional time in Asia/Shanghai, to the minute, or
// "—" when there is none.
func FmtTime(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.In(pricing.Shanghai).Format("2006-01-02 15:04")
}

// LabelOr translates key when the catalogue has it, else shows raw: for
// names that come from agents and market code (check names, event kinds).
func LabelOr(vc Ctx, key, raw string) string {
	if locales.Has(vc.Lang, key) {
		return vc.T(key)
	}
	return raw
}

// ShortMethod is the message-key suffix of a top-up's payment method:
// "bank" for a bank transfer, "stripe" for everything Stripe takes.
func ShortMethod(m string) string {
	if m == "bank_transfer" {
		return "bank"
	}
	return "stripe"
}

// TierName names an SLA tier without its figures (the SLA terms page and
// a rental's SLA section).
func TierName(vc Ctx, name string) string { return LabelOr(vc, "sla.tier."+name, name) }

// PctFig writes a percentage figure as the SLA table states it ("99.5%").
func PctFig(f float64) string { return Num(f) + "%" }

// UptimePct writes a measured uptime to four decimals ("99.3056%"),
// without trailing zeros.
func UptimePct(f float64) string {
	s := strconv.FormatFloat(f, 'f', 4, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}
