// Package orgverifypages renders organisation verification (企业认证):
// the organisation's verification page with its form and privacy notice,
// the card its own page shows, the admin's queue and review page, and
// the notices of payouts that wait for verification, from plain view
// models that handlers/orgverify builds.
package orgverifypages

import (
	"time"

	"suanli/views"
)

// Statuses of an organisation's verification, as the pages show them.
const (
	StatusUnverified = "unverified"
	StatusPending    = "pending"
	StatusVerified   = "verified"
	StatusRejected   = "rejected"
	StatusReset      = "reset"
)

// Card is an organisation's verification on the organisation's own page.
type Card struct {
	// Show is false for a personal organisation (its owner verifies as a
	// person) and where the feature is not wired.
	Show   bool
	OrgID  int64
	Status string
	// Reason is why it was rejected or reopened.
	Reason string
	// CanSubmit: the reader may submit (or submit again) now.
	CanSubmit bool
	// PayoutsWait: a provider organisation whose payouts wait for it.
	PayoutsWait bool
}

// Submission is what an organisation submitted, as it sees it again.
type Submission struct {
	ID int64
	// CreditCode is masked (9151**********1234) for the organisation's
	// page; the admin review shows it whole.
	CreditCode, OrgName, LegalRep string
	LicenceType                   string
	LicenceBytes                  int64
	SubmittedAt                   time.Time
	ReviewedAt                    *time.Time
	// Operator: an operator vouched for the organisation (no licence).
	Operator bool
}

// FormVM is GET /orgs/{id}/verification: the status, the last
// submission, the privacy notice and (for owners and admins) the form.
type FormVM struct {
	OrgID    int64
	OrgName  string
	OrgKind  string
	Personal bool
	Status   string
	Reason   string
	// Latest is the newest submission (nil: none).
	Latest    *Submission
	CanSubmit bool
	// Unavailable: no key to seal licences is configured; nothing can be
	// submitted.
	Unavailable bool
	// PayoutsWait: a provider organisation whose payouts wait for it.
	PayoutsWait bool
	Form        views.Form
	// MaxLicenceMiB is the largest licence file, in MiB.
	MaxLicenceMiB  int
	ConsentVersion string
}

// QueueRow is a submission waiting for review, on the admin's hub.
type QueueRow struct {
	ID, OrgID int64
	// OrgName is the organisation's name on the platform; RegisteredName
	// the name it submitted.
	OrgName, OrgKind, RegisteredName string
	CreditCode, LegalRep             string
	SubmittedAt                      time.Time
}

// Queue is the admin hub's queue of organisation verifications.
type Queue struct {
	Rows  []QueueRow
	Total int64
}

// ReviewVM is GET /admin/org-verifications/{id}: a submission in full.
type ReviewVM struct {
	ID, OrgID        int64
	OrgName, OrgKind string
	Status           string
	// CreditCode is whole here: the review checks it.
	CreditCode, RegisteredName, LegalRep string
	LicenceType                          string
	LicenceBytes                         int64
	HasLicence                           bool
	SubmitterName, SubmitterEmail        string
	ConsentVersion                       string
	SubmittedAt                          time.Time
	ConsentAt, ReviewedAt                *time.Time
	Reason                               string
	// Operator: an operator vouched for it (no licence, no form).
	Operator bool
	// Form is the reason's form, with its message after a refusal.
	Form views.Form
	// Unavailable: no key is configured, so the licence cannot be opened.
	Unavailable bool
	// LicenceDownload: the licence is saved, not opened in the browser (a
	// PDF, which the sandboxed answer cannot show).
	LicenceDownload bool
}

// PayoutHold is the provider earnings page's notice: payouts wait for
// the organisation's verification.
type PayoutHold struct {
	Held bool
	// VerifyURL is the organisation's verification page.
	VerifyURL string
	// Status is the verification's status (pending says it is in review).
	Status string
}

// HeldRow is a provider whose payable waits for its organisation's
// verification, on the admin's payouts page.
type HeldRow struct {
	ProviderName string
	OrgID        int64
	BalanceFen   int64
	// Pending are its recorded Stripe payouts whose transfers wait.
	Pending []HeldTransfer
}

// HeldTransfer is a recorded Stripe payout whose transfer waits for the
// organisation's verification.
type HeldTransfer struct {
	PayoutID, AmountFen int64
}
