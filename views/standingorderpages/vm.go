// Package standingorderpages holds the standing orders' views (「有卡就租」):
// the page with the organisation's orders and the form that places one,
// and the console's notices.
package standingorderpages

import (
	"time"

	"suanli/views"
)

// Option is one choice of a select.
type Option struct {
	Value, Label string
}

// OrgOption is an organisation the user may place orders for.
type OrgOption struct {
	ID   int64
	Name string
}

// Row is one standing order as the page and the console show it.
type Row struct {
	ID      int64
	OrgName string
	GPUName string
	GPUs    int
	// City and From are city slugs ("" none); MaxLatencyMS 0 is none.
	City, From   string
	MaxLatencyMS int
	// MaxPriceFen (on demand) or BidFen (interruptible) is set.
	MaxPriceFen, BidFen *int64
	// Student: MaxPriceFen is compared with student prices.
	Student bool
	// Notify: it only tells (no rent).
	Notify bool
	Image  string
	// Status is open, filled, failed or expired.
	Status   string
	RentalID *int64
	OfferID  *int64
	// Failure is why its rent was refused, in the reader's language.
	Failure   string
	ExpiresAt time.Time
	CreatedAt time.Time
	EndedAt   *time.Time
	// CanCancel: the reader placed it or administers its organisation.
	CanCancel bool
}

// StatusKey is the message key of the order's status.
func (r Row) StatusKey() string { return "so.status." + r.Status }

// ChipClass is the status chip's class (the rental chips' colours: open
// on its way, filled running, failed failed, expired stopped).
func (r Row) ChipClass() string {
	switch r.Status {
	case "open":
		return "badge chip status-pending"
	case "filled":
		return "badge chip status-running"
	case "failed":
		return "badge chip status-failed"
	}
	return "badge chip status-stopped"
}

// PageVM is the standing orders' page.
type PageVM struct {
	Orgs     []OrgOption
	MultiOrg bool
	Open     []Row
	Ended    []Row
	// Form is the form to place one, as submitted (with its problems) or
	// with its defaults.
	Form   views.Form
	GPUs   []Option
	Cities []Option
	Tiers  []string
	// The rules the page states.
	MaxAheadDays, MaxOpen, MaxGPUs, MaxLatencyMS, NoticeDays, DefaultHours int
}

// NoticesVM is the console's standing orders card: how many are open and
// the ones that ended lately.
type NoticesVM struct {
	Open  int64
	Ended []Row
	Days  int
}
