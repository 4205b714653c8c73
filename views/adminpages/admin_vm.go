// Package adminpages renders the platform admin console (/admin/...):
// the hub with its queues, users, organisations, payouts, the mail
// outbox, River's jobs and the audit log, from plain view models that
// handlers/admin builds.
package adminpages

import (
	"regexp"
	"strings"
	"time"

	"suanli/locales"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/orgverifypages"
)

// The console's pages, named for its tab bar.
const (
	AdminTabHome    = "home"
	AdminTabUsers   = "users"
	AdminTabOrgs    = "orgs"
	AdminTabPayouts = "payouts"
	AdminTabOutbox  = "outbox"
	AdminTabJobs    = "jobs"
	AdminTabAudit   = "audit"
	// AdminTabInvoices is the invoice queue (views/invoicepages).
	AdminTabInvoices = "invoices"
	// AdminTabSMS is the SMS outbox (views/identitypages).
	AdminTabSMS = "sms"
)

// adminTabs lists the tab bar: tab, route name, message key.
var adminTabs = [][3]string{
	{AdminTabHome, routenames.AdminHome, "admin.tab.home"},
	{AdminTabUsers, routenames.AdminUsers, "admin.tab.users"},
	{AdminTabOrgs, routenames.AdminOrgs, "admin.tab.orgs"},
	{AdminTabPayouts, routenames.AdminPayouts, "admin.tab.payouts"},
	{AdminTabOutbox, routenames.AdminOutbox, "admin.tab.outbox"},
	{AdminTabJobs, routenames.AdminJobs, "admin.tab.jobs"},
	{AdminTabAudit, routenames.AdminAudit, "admin.tab.audit"},
	{AdminTabInvoices, routenames.AdminInvoices, "invoice.admin.tab"},
	{AdminTabSMS, routenames.AdminSMS, "realname.admin.tab_sms"},
}

// AdminCounts are the sizes of the console's queues, shown on the hub.
type AdminCounts struct {
	Verify     int
	BankTopups int
	Refunds    int
	Flagged    int
	Incidents  int64
	Payouts    int64
}

// AdminVM is the console hub's view model: the queues.
type AdminVM struct {
	Counts AdminCounts
	// Pending are the labs and providers to verify, oldest first;
	// Providers holds the providers' profiles by organisation id.
	Pending   []Org
	Providers map[int64]ProviderProfile
	// Applicants are the pending organisations' owners, by organisation id.
	Applicants map[int64]Applicant
	// Bank transfers to confirm, refunds to pay, flagged payment events.
	BankTopups  []Topup
	BankRefunds []Refund
	Flagged     []StripeEvent
	// Incidents are the open incidents, oldest first.
	Incidents []Incident
	// Payouts are bank payouts waiting for their bank reference.
	Payouts []Payout
	// OrgNames names the organisations the queues mention.
	OrgNames map[int64]string
	// OrgVerify is the queue of organisation verifications (企业认证).
	OrgVerify orgverifypages.Queue
}

// Org is an organisation as the hub's review cards and the organisations
// page show it.
type Org struct {
	ID   int64
	Kind string // team, lab or provider
	Name string
	// Personal marks a user's own one-person organisation.
	Personal bool
	// Status is the review status (active, pending, approved, rejected).
	Status string
	// Institution, Supervisor and EmailDomain are a lab's application.
	Institution, Supervisor, EmailDomain string
	// SuspendedAt is set while a platform admin has suspended it.
	SuspendedAt *time.Time
}

// Applicant is a pending organisation's owner: the account and, for a
// lab, the institutional address and whether its link was opened.
type Applicant struct {
	Name, Email string
	// Verified: the account's email address is confirmed.
	Verified    bool
	EduEmail    string
	ConfirmedAt *time.Time
}

// ProviderProfile is a provider's onboarding profile: licence, contact,
// and the bank account bank-transfer payouts go to.
type ProviderProfile struct {
	LicenceNo                                string
	ContactName, ContactPhone, ContactEmail  string
	BankName, BankAccountName, BankAccountNo string
}

// Topup is a bank transfer waiting for an admin to confirm it arrived.
type Topup struct {
	ID, OrgID int64
	Reference string
	AmountFen int64
}

// Refund is a refund to pay out (bank) or to retry (Stripe).
type Refund struct {
	ID, OrgID int64
	AmountFen int64
	Method    string
}

// StripeEvent is a flagged Stripe event.
type StripeEvent struct {
	ID, Type, Note string
	ReceivedAt     time.Time
}

// Incident is an open incident with its node and provider.
type Incident struct {
	ID       int64
	OpenedAt time.Time
	NodeID   int64
	NodeName string
	// ProviderName is in the reader's language.
	ProviderName string
	// GPUID is 0 for the whole node.
	GPUID int64
	Kind  string
	// Reasons is English; ReasonsMsg the same as a message (zero: none).
	Reasons    string
	ReasonsMsg locales.Msg
}

// Payout is one row of a payout list.
type Payout struct {
	ID int64
	// ProviderName is in the reader's language.
	ProviderName     string
	Period           string // YYYY-MM
	AmountFen        int64
	Method, Status   string
	BankReference    string
	StripeTransferID string
	Failure          string
	PaidAt           *time.Time
	// AwaitsBank is a pending bank payout: it gets the mark-paid and
	// mark-failed forms.
	AwaitsBank bool
}

// Pager is where a paginated list is: the page, how many pages, and the
// links to the neighbours ("" when there is none).
type Pager struct {
	Page, Pages int
	Total       int64
	PrevURL     string
	NextURL     string
}

// NewPager computes a pager for total items, per to a page, with url
// building the link to a page.
func NewPager(page, per int, total int64, url func(page int) string) Pager {
	if per <= 0 {
		per = 1
	}
	p := Pager{Page: max(page, 1), Total: total, Pages: int((total + int64(per) - 1) / int64(per))}
	if p.Pages < 1 {
		p.Pages = 1
	}
	if p.Page > 1 {
		p.PrevURL = url(min(p.Page-1, p.Pages))
	}
	if p.Page < p.Pages {
		p.NextURL = url(p.Page + 1)
	}
	return p
}

// AdminUsersVM is the users page: a search and one page of its results.
type AdminUsersVM struct {
	Q     string
	Users []User
	Pager Pager
	// Self is the admin looking (who may not suspend themselves).
	Self int64
	// Form is a refused suspension's values and messages, for the row ErrID.
	Form  views.Form
	ErrID int64
	// DefaultOrgsPerDay and MaxOrgsPerDay bound the organisations-per-day
	// field (empty: the default).
	DefaultOrgsPerDay, MaxOrgsPerDay string
}

// User is one row of the users page.
type User struct {
	ID          int64
	Email, Name string
	// PlatformAdmin and Verified are shown as badges.
	PlatformAdmin bool
	Verified      bool
	CreatedAt     time.Time
	// SuspendedAt is set while a platform admin has suspended the user.
	SuspendedAt *time.Time
	// OrgsPerDay is the user's own organisations-per-day limit, "" for
	// the default.
	OrgsPerDay string
}

// orphanErr returns a refused suspension's message when its row has no
// form on this page (not listed, or the admin's own), to show above the list.
func (vm AdminUsersVM) orphanErr() string {
	if vm.ErrID == 0 || vm.ErrID == vm.Self {
		return vm.Form.Err("reason")
	}
	for _, u := range vm.Users {
		if u.ID == vm.ErrID {
			return ""
		}
	}
	return vm.Form.Err("reason")
}

// AdminOrgsVM is the organisations page: a search and one page of its results.
type AdminOrgsVM struct {
	Q     string
	Orgs  []Org
	Pager Pager
	// Form is a refused suspension's values and messages, for the row ErrID.
	Form  views.Form
	ErrID int64
}

// orphanErr returns a refused suspension's message when its row is not on
// this page, to show above the list.
func (vm AdminOrgsVM) orphanErr() string {
	if vm.ErrID == 0 {
		return ""
	}
	for _, o := range vm.Orgs {
		if o.ID == vm.ErrID {
			return ""
		}
	}
	return vm.Form.Err("reason")
}

// AdminPayoutsVM is the payouts page: filtered by status, one page.
type AdminPayoutsVM struct {
	Status string
	// Statuses are the status filters ("" is all).
	Statuses []string
	Rows     []Payout
	Pager    Pager
	// RunPeriod is the month "run payouts" pays (YYYY-MM, the last one).
	RunPeriod string
	// Form is a refused mark-paid or mark-failed form, for the payout ErrID.
	Form  views.Form
	ErrID int64
	// Unavailable says the payouts service is not configured.
	Unavailable bool
	// Held are the providers a run does not pay until their organisation
	// is verified (企业认证), with their waiting payable.
	Held []orgverifypages.HeldRow
}

// orphanErr returns a refused form's message when its payout is not on
// this page, to show above the list.
func (vm AdminPayoutsVM) orphanErr() string {
	if vm.ErrID == 0 {
		return ""
	}
	for _, r := range vm.Rows {
		if r.ID == vm.ErrID {
			return ""
		}
	}
	return views.Or(vm.Form.Err("bank_reference"), vm.Form.Err("reason"))
}

// AdminOutboxVM is the mail outbox, one page.
type AdminOutboxVM struct {
	Mails []Mail
	Pager Pager
	// BaseURL is the site's address as mails write it (no trailing slash):
	// links to it are made clickable.
	BaseURL string
}

// Mail is one message of the outbox.
type Mail struct {
	ToAddr, Subject, Body string
	CreatedAt             time.Time
	// SentAt is nil while the mail waits; LastError is the last failure.
	SentAt    *time.Time
	LastError string
}

// MailPart is a piece of an outbox mail's body: text, or (Href set) a link.
type MailPart struct {
	Text, Href string
}

var mailURL = regexp.MustCompile(`https?://[^\s<>"']+`)

// mailParts splits a mail's body into text and links. Only links to this
// site become clickable, and as paths, so that they open on whichever host
// the admin reads the outbox on (the demo's base URL is often not it); any
// other address stays text, since a mail can quote what a user typed.
func mailParts(body, base string) []MailPart {
	var parts []MailPart
	text := func(s string) {
		if s == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1].Href == "" {
			parts[n-1].Text += s
			return
		}
		parts = append(parts, MailPart{Text: s})
	}
	at := 0
	for _, m := range mailURL.FindAllStringIndex(body, -1) {
		u := strings.TrimRight(body[m[0]:m[1]], ".,;:!?)]}。，")
		end := m[0] + len(u)
		text(body[at:m[0]])
		at = end
		path, ok := strings.CutPrefix(u, base)
		// A path that a browser would read as another host ("//evil",
		// "/\evil") stays text: a mail may quote what a user typed.
		if base == "" || !ok || (path != "" && path[0] != '/' && path[0] != '?') ||
			strings.HasPrefix(path, "//") || strings.HasPrefix(path, "/\\") {
			text(u)
			continue
		}
		if path == "" || path[0] == '?' {
			path = "/" + path
		}
		parts = append(parts, MailPart{Text: u, Href: path})
	}
	text(body[at:])
	return parts
}

// AdminJobsVM is River's job queue: counts by kind and state, and the
// latest jobs that failed.
type AdminJobsVM struct {
	Kinds  []string
	States []string
	// Counts is by kind, then state.
	Counts map[string]map[string]int64
	Failed []FailedJob
}

// FailedJob is a job that failed at least once, with its latest error.
type FailedJob struct {
	ID                   int64
	Kind, State          string
	Attempt, MaxAttempts int
	ScheduledAt          time.Time
	FinalizedAt          *time.Time
	// LastError is the latest attempt's error; ErrorCount counts them all.
	LastError  string
	ErrorCount int
}

// Count returns the number of jobs of the kind in the state.
func (vm AdminJobsVM) Count(kind, state string) int64 { return vm.Counts[kind][state] }

// AdminAuditVM is the audit log page: the filter, one page of entries.
type AdminAuditVM struct {
	Filter  views.Form
	Entries []AuditEntry
	Pager   Pager
	// CSVURL exports the same filter.
	CSVURL string
}

// AuditEntry is one line of the audit log.
type AuditEntry struct {
	ID int64
	At time.Time
	// Actor names who acted: the user's email and id, or "#id" for a
	// user no longer found; "" is the system.
	Actor     string
	ActorIP   string
	Action    string
	Subject   string
	AmountFen *int64
	// Detail is English (or what a person typed); DetailMsg the same as
	// a message, for the reader's language (zero: Detail as it is).
	Detail    string
	DetailMsg locales.Msg
}

// actorLabel names an entry's actor: the system, or the user.
func actorLabel(vc views.Ctx, e AuditEntry) string {
	if e.Actor == "" {
		return vc.T("admin.audit.system")
	}
	return e.Actor
}

// fenOrDash formats an optional amount.
func fenOrDash(fen *int64) string {
	if fen == nil {
		return "—"
	}
	return views.Yuan(*fen)
}
