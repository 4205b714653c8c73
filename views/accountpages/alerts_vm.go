package accountpages

import (
	"suanli/views"
	"suanli/views/alertviews"
)

// AlertsVM is the wallet page's alerts: the runway at the current rate,
// the thresholds crossed now, those that are set and, for those who may
// change them, the form (limit_pcts, low_balance in yuan, runway_hours).
type AlertsVM struct {
	Runway   alertviews.Runway
	Current  []alertviews.Alert
	Settings alertviews.Settings
	Form     views.Form
}
