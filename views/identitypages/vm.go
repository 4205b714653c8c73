// Package identitypages renders real-name verification (实名认证): the
// user's page with the privacy notice, the form and the SMS code form,
// and the admin console's review of one user's identity and its SMS
// outbox.
package identitypages

import (
	"time"

	"suanli/views"
	"suanli/views/adminpages"
)

// Statuses a page shows (identitystore's).
const (
	StatusUnverified = "unverified"
	StatusPending    = "pending"
	StatusVerified   = "verified"
	StatusRejected   = "rejected"
)

// Identity is a user's verification as the pages show it: never the
// full ID number, but on the admin's explicit, audited read (FullID).
type Identity struct {
	Status string
	// Operator: made verified by an operator, no ID stored.
	Operator                       bool
	Name, IDMask, Phone, PhoneMask string
	SubmittedAt, VerifiedAt        *time.Time
	RejectedAt                     *time.Time
	RejectReason                   string
	ConsentVersion                 string
	ConsentAt                      *time.Time
	CodeExpiresAt                  *time.Time
	HasSealedID                    bool
}

// PageVM is GET/POST /account/real-name.
type PageVM struct {
	Identity Identity
	// Required: renting beyond the trial credit needs verification
	// (--real-name required); off, the page says nothing of it.
	Required bool
	// Unavailable: the server has no key to store ID numbers.
	Unavailable bool
	// Form is the start form (name, id_number, phone, consent); Code the
	// code form (code).
	Form, Code views.Form
	// Withdraw is the withdrawal form (confirm).
	Withdraw views.Form
	// Editing shows the start form while a code is pending (a new phone
	// number, a typo), after a refused start.
	Editing bool
	// NoticeVersion is the privacy notice's version.
	NoticeVersion string
	// CodeMinutes, PhonePerDay: the code's lifetime and the daily limit.
	CodeMinutes, PhonePerDay int
}

// ShowStart reports whether the page shows the start form.
func (vm PageVM) ShowStart() bool {
	switch vm.Identity.Status {
	case StatusUnverified, StatusRejected:
		return true
	case StatusPending:
		return vm.Editing
	}
	return false
}

// ShowWithdraw reports whether the page offers to withdraw the consent
// and delete the verification's information: whenever there is one (or
// a refused withdrawal's message to show beside its box).
func (vm PageVM) ShowWithdraw() bool {
	return vm.Identity.Status != StatusUnverified || vm.Withdraw.Err("confirm") != ""
}

// User is the user an admin page is about.
type User struct {
	ID          int64
	Email, Name string
}

// AdminVM is GET /admin/users/{id}/real-name and its actions.
type AdminVM struct {
	User     User
	Identity Identity
	// FullID is the full ID number, only in the answer to the audited
	// "show" action (never cached).
	FullID string
	// Form is the reject form.
	Form views.Form
}

// SMS is one message of the SMS outbox.
type SMS struct {
	ID            int64
	ToPhone, Body string
	CreatedAt     time.Time
}

// SMSVM is GET /admin/sms.
type SMSVM struct {
	Messages []SMS
	// Phone filters by number ("" all).
	Phone string
	Pager adminpages.Pager
}
