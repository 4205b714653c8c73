// Package invoicepages holds the VAT invoice views (发票): an
// organisation's invoices page with the form that asks for one, and the
// platform admins' queue and invoice page with the forms that issue,
// reject, void (作废) and reverse (红冲) one.
package invoicepages

import (
	"time"

	"suanli/views"
)

// Row is one invoice as the pages list it.
type Row struct {
	ID    int64
	OrgID int64
	// Kind is normal (普票) or special (专票).
	Kind        string
	Title       string
	TaxpayerID  string
	Address     string
	Phone       string
	Bank        string
	BankAccount string
	Email       string
	Remark      string
	AmountFen   int64
	// Status is requested, issued, voided, reversed, cancelled or rejected.
	Status string
	// Number, IssueDate, RedNumber: the tax system's, "" until set.
	Number    string
	IssueDate string
	RedNumber string
	// Date is the issue date, or the day it was asked for.
	Date   string
	Reason string
	// FileType is pdf or ofd once issued; FileSize its bytes.
	FileType  string
	FileSize  int64
	CreatedAt time.Time
	// HasFile: the file can be downloaded (issued, voided or reversed).
	HasFile bool
	// CanCancel: the reader may withdraw it (it is requested, and the
	// reader asked for it or administers the organisation).
	CanCancel bool
}

// StatusKey is the message key of the invoice's status.
func (r Row) StatusKey() string { return "invoice.status." + r.Status }

// KindKey is the message key of the invoice's kind.
func (r Row) KindKey() string { return "invoice.kind." + r.Kind }

// ChipClass is the status chip's class, in the rental chips' colours:
// requested on its way, issued running, rejected and voided failed,
// reversed amber, cancelled stopped.
func (r Row) ChipClass() string {
	switch r.Status {
	case "requested":
		return "badge chip status-pending"
	case "issued":
		return "badge chip status-running"
	case "rejected", "voided":
		return "badge chip status-failed"
	case "reversed":
		return "badge chip status-interrupted"
	}
	return "badge chip status-stopped"
}

// PageVM is an organisation's invoices page.
type PageVM struct {
	OrgID   int64
	OrgName string
	// InvoiceableFen is what may still be invoiced.
	InvoiceableFen int64
	// CanRequest: the reader may ask for invoices (the organisation's
	// admins).
	CanRequest bool
	// Form is the request form: kind, title, taxpayer_id, address, phone,
	// bank, bank_account, email, remark, amount (yuan).
	Form     views.Form
	Invoices []Row
	// Month is the CSV form's month (YYYY-MM), this month by default.
	Month string
}

// AdminRow is an invoice in the platform admins' queue.
type AdminRow struct {
	Row
	OrgName string
}

// AdminListVM is the platform admins' invoice queue.
type AdminListVM struct {
	Rows []AdminRow
	// Waiting is how many are requested; Total how many there are.
	Waiting, Total int64
	// Page of Pages; PrevURL and NextURL are "" at the ends.
	Page, Pages      int
	PrevURL, NextURL string
	// Month is the CSV form's month (YYYY-MM), this month by default.
	Month string
}

// AdminShowVM is one invoice for a platform admin, with the forms its
// status allows.
type AdminShowVM struct {
	Invoice AdminRow
	// RequesterName and RequesterEmail say who asked for it.
	RequesterName, RequesterEmail string
	// The forms: issue (number, issue_date, file), reject (reason), void
	// (reason), reverse (red_number, reason).
	Issue, Reject, Void, Reverse views.Form
	// MaxFileMiB is the largest file the issue form takes.
	MaxFileMiB int
}

// CanIssue reports whether the invoice waits to be issued (or rejected).
func (vm AdminShowVM) CanIssue() bool { return vm.Invoice.Status == "requested" }

// CanEnd reports whether the invoice may be voided or reversed.
func (vm AdminShowVM) CanEnd() bool { return vm.Invoice.Status == "issued" }

// fileLabel is a file type as people write it.
func fileLabel(typ string) string {
	switch typ {
	case "pdf":
		return "PDF"
	case "ofd":
		return "OFD"
	}
	return typ
}
