// Package alertvm maps the spending alerts and the wallet's runway
// (package spendalerts) to the views of the wallet page, the rental page
// and the console, and to the API's form.
package alertvm

import (
	"context"
	"strconv"

	"suanli/models"
	"suanli/pricing"
	"suanli/spendalerts"
	"suanli/views"
	"suanli/views/alertviews"
	"suanli/views/rentalpages"
)

// Runway maps a wallet's runway to its view, its sentence in lang as the
// mails word it (spendalerts.RunwayTextIn), in the pages' yuan.
func Runway(r spendalerts.Runway, lang string) alertviews.Runway {
	return alertviews.Runway{BalanceFen: r.BalanceFen, RentalsFenPerHour: r.RentalsFenPerHour, StorageFenPerHour: r.StorageFenPerHour,
		Rentals: r.Rentals, Volumes: r.Volumes, Seconds: r.Seconds(), Text: spendalerts.RunwayTextIn(lang, r, views.Yuan)}
}

// Alerts maps an organisation's alerts to their views; viewerID's own
// cap is theirs (Self).
func Alerts(org *models.Org, as []spendalerts.Alert, viewerID int64, lang string) []alertviews.Alert {
	out := make([]alertviews.Alert, len(as))
	for i, a := range as {
		out[i] = alertviews.Alert{OrgID: org.ID, OrgName: org.Name, Personal: org.Personal, Kind: a.Kind, UserName: a.UserName,
			Self: a.UserID != 0 && a.UserID == viewerID, Threshold: a.Threshold, LimitFen: a.LimitFen, UsedFen: a.UsedFen, Pct: a.Pct(), Runway: Runway(a.Runway, lang)}
	}
	return out
}

// Settings maps alert settings to their view.
func Settings(s spendalerts.Settings) alertviews.Settings {
	return alertviews.Settings{LimitPcts: s.LimitPcts, LowBalanceFen: s.LowBalanceFen, RunwayHours: s.RunwayHours}
}

// FormValues are the settings as the wallet page's form shows them.
func FormValues(s spendalerts.Settings) map[string]string {
	v := map[string]string{"limit_pcts": alertviews.PctsText(s.LimitPcts), "low_balance": "", "runway_hours": ""}
	if s.LowBalanceFen != nil {
		v["low_balance"] = pricing.FenToYuanString(*s.LowBalanceFen)
	}
	if s.RunwayHours != nil {
		v["runway_hours"] = strconv.Itoa(*s.RunwayHours)
	}
	return v
}

// Console returns the alerts of the viewer's organisations, as each
// membership lets them see (spendalerts.Service.Alerts), read in db.
func Console(ctx context.Context, db *models.DB, oms []models.OrgMembership, viewerID int64, lang string) ([]rentalpages.SpendAlert, error) {
	svc := &spendalerts.Service{DB: db}
	var out []rentalpages.SpendAlert
	for i := range oms {
		as, err := svc.Alerts(ctx, &oms[i].Org, &oms[i].Membership)
		if err != nil {
			return nil, err
		}
		out = append(out, Alerts(&oms[i].Org, as, viewerID, lang)...)
	}
	return out, nil
}

// RentalRunway is a rental page's runway: the paying wallet's, while the
// rental runs billed by the second (nil otherwise), read in db.
func RentalRunway(ctx context.Context, db *models.DB, r *models.Rental, lang string) (*rentalpages.Runway, error) {
	if r.Status != models.RentalRunning || r.Term != pricing.OnDemand || r.Free {
		return nil, nil
	}
	rw, err := (&spendalerts.Service{DB: db}).Runway(ctx, r.OrgID)
	if err != nil {
		return nil, err
	}
	return &rentalpages.Runway{Runway: Runway(rw, lang), OrgID: r.OrgID}, nil
}

// API is a wallet's runway in the API.
type API struct {
	FenPerHour        int64 `json:"rate_fen_per_hour"`
	RentalsFenPerHour int64 `json:"rentals_fen_per_hour"`
	StorageFenPerHour int64 `json:"storage_fen_per_hour"`
	Rentals           int   `json:"running_rentals"`
	Volumes           int   `json:"volumes"`
	// LastsSeconds is how long the balance lasts at the rate (null when
	// nothing draws on it).
	LastsSeconds *int64 `json:"lasts_seconds"`
}

// RunwayAPI maps a runway to the API.
func RunwayAPI(r spendalerts.Runway) API {
	out := API{FenPerHour: r.FenPerHour(), RentalsFenPerHour: r.RentalsFenPerHour, StorageFenPerHour: r.StorageFenPerHour, Rentals: r.Rentals, Volumes: r.Volumes}
	if r.Draws() {
		s := r.Seconds()
		out.LastsSeconds = &s
	}
	return out
}

// AlertAPI is a threshold crossed now, in the API.
type AlertAPI struct {
	Kind      string `json:"kind"`
	UserID    *int64 `json:"user_id"`
	Threshold int64  `json:"threshold"`
	LimitFen  *int64 `json:"limit_fen"`
	UsedFen   int64  `json:"used_fen"`
}

// AlertsAPI maps alerts to the API.
func AlertsAPI(as []spendalerts.Alert) []AlertAPI {
	out := make([]AlertAPI, len(as))
	for i, a := range as {
		out[i] = AlertAPI{Kind: a.Kind, Threshold: a.Threshold, UsedFen: a.UsedFen}
		if a.UserID != 0 {
			out[i].UserID = &a.UserID
		}
		if a.Kind != spendalerts.KindLowBalance && a.Kind != spendalerts.KindRunway {
			out[i].LimitFen = &a.LimitFen
		}
	}
	return out
}

// SettingsAPI is an organisation's alert settings in the API.
type SettingsAPI struct {
	OrgID         int64  `json:"org_id"`
	LimitPcts     []int  `json:"limit_pcts"`
	LowBalanceFen *int64 `json:"low_balance_fen"`
	RunwayHours   *int   `json:"runway_hours"`
}

// SettingsOut maps settings to the API.
func SettingsOut(orgID int64, s spendalerts.Settings) SettingsAPI {
	pcts := s.LimitPcts
	if pcts == nil {
		pcts = []int{}
	}
	return SettingsAPI{OrgID: orgID, LimitPcts: pcts, LowBalanceFen: s.LowBalanceFen, RunwayHours: s.RunwayHours}
}
