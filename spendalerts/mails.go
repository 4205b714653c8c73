package spendalerts

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"suanli/billing"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
)

// yuan writes fen as the mails write money: ¥12.5.
func yuan(fen int64) string { return "¥" + pricing.FenToYuanString(fen) }

// Lasts writes how long a balance lasts, as "about …" completes it:
// minutes under an hour, hours under two days, then hours and days (all
// rounded down). Under a minute it is "" (the callers say "used up
// within a minute" instead).
func Lasts(lang string, secs int64) string {
	n := func(key string, count int64, args ...any) string {
		if count == 1 && locales.Has(lang, key+".one") {
			key += ".one"
		}
		return locales.T(lang, key, append([]any{count}, args...)...)
	}
	switch {
	case secs < 60:
		return ""
	case secs < 3600:
		return n("alerts.lasts.minutes", secs/60)
	case secs < 48*3600:
		return n("alerts.lasts.hours", secs/3600)
	}
	return locales.T(lang, "alerts.lasts.days", secs/3600, secs/86400)
}

// RunwayText is the runway's sentence in lang: how long the balance
// lasts at the current rate, or that nothing draws on it.
func RunwayText(lang string, rw Runway) string { return RunwayTextIn(lang, rw, yuan) }

// RunwayTextIn is RunwayText with the rate written by money (the pages
// write yuan with their cents, the mails without).
func RunwayTextIn(lang string, rw Runway, money func(fen int64) string) string {
	rate := money(rw.FenPerHour())
	switch {
	case !rw.Draws():
		return locales.T(lang, "alerts.runway_none")
	case rw.Seconds() < 60:
		return locales.T(lang, "alerts.runway_out", rate)
	}
	return locales.T(lang, "alerts.runway", rate, Lasts(lang, rw.Seconds()))
}

func pctList(pcts []int) string {
	out := make([]string, len(pcts))
	for i, p := range pcts {
		out[i] = strconv.Itoa(p) + "%"
	}
	return strings.Join(out, ", ")
}

func (s *Service) walletURL(orgID int64) string {
	return fmt.Sprintf("%s/orgs/%d/wallet#alerts", strings.TrimRight(s.BaseURL, "/"), orgID)
}

// limitMail is the alert that a limit's use u reached its threshold in
// period, to u; member is the member, for a cap per member.
func (s *Service) limitMail(to *models.User, st state, u Alert, member *models.User, period string) *models.OutboxMail {
	lang := to.MailLang()
	org, url := st.org.Name, s.walletURL(st.org.ID)
	pcts := pctList(st.settings.LimitPcts)
	var subject, body string
	switch u.Kind {
	case billing.LimitBudget:
		subject = locales.T(lang, "mail.alert_budget.subject", org, u.Pct())
		body = locales.T(lang, "mail.alert_budget.body", org, u.Pct(), yuan(u.UsedFen), yuan(u.LimitFen), period, u.Threshold, pcts, url)
	case billing.LimitMemberCap:
		name := cmp.Or(member.Name, member.Email)
		subject = locales.T(lang, "mail.alert_member_cap.subject", name, u.Pct(), org)
		body = locales.T(lang, "mail.alert_member_cap.body", name, u.Pct(), org, yuan(u.UsedFen), yuan(u.LimitFen), period, u.Threshold, pcts, url)
	default:
		subject = locales.T(lang, "mail.alert_hourly_cap.subject", org, u.Pct())
		body = locales.T(lang, "mail.alert_hourly_cap.body", org, u.Pct(), yuan(u.UsedFen), yuan(u.LimitFen), u.Threshold, pcts, url)
	}
	return &models.OutboxMail{ToAddr: to.Email, Lang: lang, CreatedAt: st.now, Subject: subject, Body: body}
}

// walletMail is a wallet alert (a low balance, a short runway), to u.
func (s *Service) walletMail(to *models.User, st state, a Alert) *models.OutboxMail {
	lang := to.MailLang()
	org, url, rw := st.org.Name, s.walletURL(st.org.ID), a.Runway
	var subject, body string
	if a.Kind == KindLowBalance {
		subject = locales.T(lang, "mail.alert_low_balance.subject", org, yuan(a.Threshold))
		body = locales.T(lang, "mail.alert_low_balance.body", org, yuan(rw.BalanceFen), yuan(a.Threshold), RunwayText(lang, rw), url)
	} else {
		lasts := locales.T(lang, "alerts.lasts.under_minute")
		if l := Lasts(lang, rw.Seconds()); l != "" {
			lasts = locales.T(lang, "alerts.lasts.about", l)
		}
		subject = locales.T(lang, "mail.alert_runway.subject", org, lasts)
		body = locales.T(lang, "mail.alert_runway.body", org, lasts, yuan(rw.FenPerHour()), yuan(rw.BalanceFen), a.Threshold, url)
	}
	return &models.OutboxMail{ToAddr: to.Email, Lang: lang, CreatedAt: st.now, Subject: subject, Body: body}
}
