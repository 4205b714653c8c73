package rentalpages

import "suanli/views/alertviews"

// Runway is the wallet's runway that a running rental's page shows (see
// alertviews.Runway), with the organisation that pays.
type Runway struct {
	alertviews.Runway
	OrgID int64
}

// SpendAlert is a threshold one of the viewer's organisations has
// crossed, as the console lists it.
type SpendAlert = alertviews.Alert
