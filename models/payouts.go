package models

import (
	"time"

	"suanli/locales"
)

// Payout statuses and methods.
const (
	PayoutPending = "pending"
	PayoutPaid    = "paid"
	PayoutFailed  = "failed"

	PayoutStripe = "stripe"
	PayoutBank   = "bank_transfer"
)

// Payout is one month's payment of a provider's payable balance: a Stripe
// Connect transfer or a bank transfer an admin marks paid.
type Payout struct {
	ID               int64
	ProviderID       int64
	Period           string // YYYY-MM, Asia/Shanghai
	AmountFen        int64
	Method           string
	Status           string
	StripeTransferID string
	BankReference    string
	Failure          string
	TxnID            *int64
	PaidBy           *int64
	CreatedAt        time.Time
	PaidAt           *time.Time
}

// AuditEntry is one line of the append-only audit log: who did what to
// what, when and from where.
type AuditEntry struct {
	ID        int64
	At        time.Time
	ActorID   *int64 // nil: the system
	ActorIP   string `gorm:"column:actor_ip"`
	Action    string
	Subject   string
	AmountFen *int64
	Detail    string // English (the CSV's), or what a person typed
	// DetailMsg is Detail as a message, for the reader's language (zero:
	// Detail is shown as it is).
	DetailMsg locales.Msg `gorm:"column:detail_msg"`
}

// TableName is the audit table's name.
func (AuditEntry) TableName() string { return "audit_log" }
