// Package alertviews shows spending alerts and the wallet's runway: the
// pieces the wallet page, the rental page and the console share.
package alertviews

import (
	"strings"

	"suanli/views"
)

// Runway is what an organisation's wallet pays for now and how long its
// balance lasts at that rate.
type Runway struct {
	BalanceFen int64
	// RentalsFenPerHour is what its Rentals billed by the second cost an
	// hour now; StorageFenPerHour what its Volumes cost.
	RentalsFenPerHour, StorageFenPerHour int64
	Rentals, Volumes                     int
	// Seconds is how long the balance lasts at their sum (when it is > 0).
	Seconds int64
	// Text is the runway's sentence (spendalerts.RunwayText, as the mails
	// say it).
	Text string
}

// FenPerHour is the current rate.
func (r Runway) FenPerHour() int64 { return r.RentalsFenPerHour + r.StorageFenPerHour }

// Alert is a threshold an organisation has crossed now.
type Alert struct {
	OrgID   int64
	OrgName string
	// Personal: the organisation is the viewer's personal one.
	Personal bool
	// Kind is budget, member_cap, hourly_cap, low_balance or runway.
	Kind string
	// UserName is the member of a member_cap alert; Self is true when it
	// is the viewer.
	UserName string
	Self     bool
	// Threshold is a percentage of LimitFen for a limit, fen for
	// low_balance, hours for runway.
	Threshold         int64
	LimitFen, UsedFen int64
	// Pct is how much of its limit is used, in whole percent
	// (spendalerts.Alert.Pct).
	Pct int64
	// Runway is the wallet's, for low_balance and runway.
	Runway Runway
}

// Settings are an organisation's alert thresholds, as shown.
type Settings struct {
	LimitPcts     []int
	LowBalanceFen *int64
	RunwayHours   *int
}

// PctsText writes thresholds as the form takes them: "50, 80, 100".
func PctsText(pcts []int) string {
	out := make([]string, len(pcts))
	for i, p := range pcts {
		out[i] = views.Itoa(p)
	}
	return strings.Join(out, ", ")
}

// partsText says what the rate is made of: the rentals, the volumes
// (each when there are some).
func partsText(vc views.Ctx, r Runway) []string {
	var out []string
	if r.Rentals > 0 {
		out = append(out, vc.N("alerts.runway_rentals", r.Rentals, views.Yuan(r.RentalsFenPerHour)))
	}
	if r.Volumes > 0 {
		out = append(out, vc.N("alerts.runway_storage", r.Volumes, views.Yuan(r.StorageFenPerHour)))
	}
	return out
}

// AlertText says an alert in one sentence.
func AlertText(vc views.Ctx, a Alert) string {
	switch a.Kind {
	case "budget":
		return vc.T("alerts.now.budget", a.Pct, views.Yuan(a.UsedFen), views.Yuan(a.LimitFen), a.Threshold)
	case "member_cap":
		if a.Self {
			return vc.T("alerts.now.member_cap_self", a.Pct, views.Yuan(a.UsedFen), views.Yuan(a.LimitFen), a.Threshold)
		}
		return vc.T("alerts.now.member_cap", a.UserName, a.Pct, views.Yuan(a.UsedFen), views.Yuan(a.LimitFen), a.Threshold)
	case "hourly_cap":
		return vc.T("alerts.now.hourly_cap", a.Pct, views.Yuan(a.UsedFen), views.Yuan(a.LimitFen), a.Threshold)
	case "low_balance":
		return vc.T("alerts.now.low_balance", views.Yuan(a.UsedFen), views.Yuan(a.Threshold))
	}
	return vc.T("alerts.now.runway", a.Runway.Text, a.Threshold)
}

// orgName names an alert's organisation ("personal" for the viewer's own).
func orgName(vc views.Ctx, a Alert) string {
	if a.Personal {
		return vc.T("rent.org_personal")
	}
	return a.OrgName
}

// settingsText says the thresholds that are set.
func settingsText(vc views.Ctx, s Settings) []string {
	out := []string{}
	if len(s.LimitPcts) == 0 {
		out = append(out, vc.T("alerts.set.limits_off"))
	} else {
		out = append(out, vc.T("alerts.set.limits", PctsText(s.LimitPcts)))
	}
	if s.LowBalanceFen != nil {
		out = append(out, vc.T("alerts.set.low_balance", views.Yuan(*s.LowBalanceFen)))
	}
	if s.RunwayHours != nil {
		out = append(out, vc.T("alerts.set.runway", *s.RunwayHours))
	}
	return out
}
