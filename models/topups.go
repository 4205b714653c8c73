package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/apperr"
)

// Top-up methods and statuses.
const (
	MethodStripe = "stripe"
	MethodBank   = "bank_transfer"

	TopupPending = "pending"
	TopupPaid    = "paid"
	TopupFailed  = "failed"
	TopupFlagged = "flagged"
)

// Topup is a request to add money to an organisation's wallet.
type Topup struct {
	ID                int64
	OrgID             int64
	UserID            int64
	AmountFen         int64
	Method            string
	Status            string
	Reference         string
	CheckoutSessionID *string
	PaymentIntentID   *string
	ReceivedFen       *int64
	RefundedFen       int64
	Note              string
	ConfirmedBy       *int64
	CreatedAt         time.Time
	PaidAt            *time.Time
}

// StripeEvent is a processed Stripe event.
type StripeEvent struct {
	ID         string `gorm:"primaryKey"`
	Type       string
	TopupID    *int64
	Flagged    bool
	Note       string
	ReceivedAt time.Time
}

// Refund is money paid back out of a wallet.
type Refund struct {
	ID             int64
	OrgID          int64
	UserID         int64
	TopupID        *int64
	AmountFen      int64
	Method         string
	Status         string
	StripeRefundID *string
	CreatedAt      time.Time
	DoneAt         *time.Time
}

// InsertTopup creates a top-up in tx.
func InsertTopup(tx *gorm.DB, t *Topup) error { return tx.Create(t).Error }

// TopupByID returns a top-up, or ENOTFOUND.
func (db *DB) TopupByID(ctx context.Context, id int64) (*Topup, error) {
	return topupWhere(db.W.WithContext(ctx), "id = ?", id)
}

// TopupForUpdate reads a top-up in tx (locking it on PostgreSQL).
func TopupForUpdate(tx *gorm.DB, cond string, arg any) (*Topup, error) {
	if tx.Dialector.Name() == "postgres" {
		tx = tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return topupWhere(tx, cond, arg)
}

func topupWhere(tx *gorm.DB, cond string, arg any) (*Topup, error) {
	var t Topup
	err := tx.Where(cond, arg).First(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("top-up")
	}
	return &t, err
}

// TopupsOf returns an organisation's top-ups, newest first.
func (db *DB) TopupsOf(ctx context.Context, orgID int64, limit int) ([]Topup, error) {
	var ts []Topup
	err := db.W.WithContext(ctx).Where("org_id = ?", orgID).Order("id DESC").Limit(limit).Find(&ts).Error
	return ts, err
}

// PendingBankTopups returns bank transfers waiting for an admin, oldest first.
func (db *DB) PendingBankTopups(ctx context.Context) ([]Topup, error) {
	var ts []Topup
	err := db.W.WithContext(ctx).Where("method = ? AND status = ?", MethodBank, TopupPending).Order("id").Find(&ts).Error
	return ts, err
}

// FlaggedStripeEvents returns events an admin must look at.
func (db *DB) FlaggedStripeEvents(ctx context.Context) ([]StripeEvent, error) {
	var es []StripeEvent
	err := db.W.WithContext(ctx).Where("flagged").Order("received_at DESC").Limit(100).Find(&es).Error
	return es, err
}

// RefundsOf returns an organisation's refunds, newest first.
func (db *DB) RefundsOf(ctx context.Context, orgID int64) ([]Refund, error) {
	var rs []Refund
	err := db.W.WithContext(ctx).Where("org_id = ?", orgID).Order("id DESC").Find(&rs).Error
	return rs, err
}

// PendingRefunds returns refunds an admin must finish: bank refunds to
// pay out and Stripe refunds that failed, oldest first.
func (db *DB) PendingRefunds(ctx context.Context) ([]Refund, error) {
	var rs []Refund
	err := db.W.WithContext(ctx).Where("status = ?", "pending").Order("id").Find(&rs).Error
	return rs, err
}
