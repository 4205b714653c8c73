package audit

import (
	"context"

	"gorm.io/gorm"

	"suanli/locales"
	"suanli/models"
)

// The audit log records every money movement made by a person or a
// payment event, every role or permission change and every verification:
// who (the actor in the context, or the system), when, what, and from
// which address. It is written in the same transaction as the change, so
// an entry exists exactly when the change does. Per-second metering
// charges are not audited: they are the bulk of all postings and the
// ledger itself is their record.

// Actions, dotted names grouped by what they concern.
const (
	PayoutCreated = "payout.created"
	PayoutPaid    = "payout.paid"
	PayoutFailed  = "payout.failed"
	// PayoutOffset: a payout run offset what a provider owed the
	// platform against its payable.
	PayoutOffset   = "payout.offset"
	TopupConfirmed = "topup.confirmed"
	RefundAsked    = "refund.requested"
	RefundPaid     = "refund.paid"
	OrgApproved    = "org.approved"
	OrgRejected    = "org.rejected"
	MemberInvited  = "member.invited"
	// InviteRevoked: a pending invitation was revoked.
	InviteRevoked = "member.invite_revoked"
	MemberRemoved = "member.removed"
	RoleChanged   = "role.changed"
	// OrgsPerDay: an admin set how many organisations a user may
	// create per day.
	OrgsPerDay     = "user.orgs_per_day"
	WalletCredit   = "wallet.credit"
	SLACredit      = "sla.credit"
	ConnectOnboard = "connect.onboarded"
	// GPUXIDsCleared: an operator cleared the critical XIDs a node's
	// agent keeps for one of its GPUs.
	GPUXIDsCleared = "gpu.xids_cleared"
	// Real-name verification of individuals (package identity): started
	// (name, ID number and phone given, an SMS code sent), verified (the
	// code confirmed, or an operator's account), rejected by an admin,
	// and every full read of a sealed ID number (who read whose).
	RealNameSubmitted = "realname.submitted"
	RealNameVerified  = "realname.verified"
	RealNameRejected  = "realname.rejected"
	RealNameIDRead    = "realname.id_read"
	// RealNameWithdrawn: the user withdrew their consent and their
	// verification's personal information was deleted.
	RealNameWithdrawn = "realname.withdrawn"
	// Organisation verification (企业认证): a submission, a platform
	// admin's decision on it (or reopening a verified one), and every
	// full read of a business licence by the admin review.
	OrgVerifySubmitted = "orgverify.submitted"
	OrgVerifyApproved  = "orgverify.approved"
	OrgVerifyRejected  = "orgverify.rejected"
	OrgVerifyReset     = "orgverify.reset"
	OrgLicenceRead     = "orgverify.licence_read"
	// Invoices (package invoices): asked for, withdrawn by the
	// organisation, issued or rejected by an admin, voided (作废) or
	// reversed by a red-letter invoice (红冲).
	InvoiceRequested = "invoice.requested"
	InvoiceCancelled = "invoice.cancelled"
	InvoiceIssued    = "invoice.issued"
	InvoiceRejected  = "invoice.rejected"
	InvoiceVoided    = "invoice.voided"
	InvoiceReversed  = "invoice.reversed"
)

// WithActor returns ctx carrying the signed-in user and their address; the
// web middleware sets it on every request with a user.
func WithActor(ctx context.Context, userID int64, ip string) context.Context {
	return models.WithActor(ctx, userID, ip)
}

// AsSystem returns ctx with no actor: what a webhook or a worker does is
// the system's, whoever the request carrying it claims to be.
func AsSystem(ctx context.Context) context.Context {
	return models.WithActor(ctx, 0, "")
}

// Record appends an entry to the audit log inside tx. The actor and address
// come from ctx; with none the entry is the system's. amountFen is nil for
// changes that move no money. detail is in English (the CSV's) or what a
// person typed; msg, when given, is the same as a message, so that the
// audit page says it in the reader's language. The entry's time is the
// transaction's clock (models.Now).
func Record(ctx context.Context, tx *gorm.DB, action, subject string, amountFen *int64, detail string, msg ...locales.Msg) error {
	return models.AppendAudit(ctx, tx, models.Now(tx), action, subject, amountFen, detail, msg...)
}

// Fen returns a pointer to amount, for Record's amountFen.
func Fen(amount int64) *int64 { return &amount }
