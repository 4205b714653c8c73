package ledger

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// Refund statuses: a refund is pending until the money has left (Stripe
// took it, or an admin paid the bank transfer out), then done.
const (
	RefundPending = "pending"
	RefundDone    = "done"
)

// FailTopup marks a top-up failed with a note for its payer, outside any
// transaction: its Checkout session could not be created, so nothing can
// pay it.
func FailTopup(ctx context.Context, db *models.DB, topupID int64, note string) error {
	return db.W.WithContext(ctx).Model(&models.Topup{}).Where("id = ?", topupID).
		Updates(map[string]any{"status": models.TopupFailed, "note": note}).Error
}

// SetCheckoutSession records the Checkout session created for a top-up,
// which a webhook's session must then match.
func SetCheckoutSession(ctx context.Context, db *models.DB, topupID int64, sessionID string) error {
	return db.W.WithContext(ctx).Model(&models.Topup{}).Where("id = ?", topupID).Update("checkout_session_id", sessionID).Error
}

// LockTopup returns a top-up in tx, locked on PostgreSQL, or ENOTFOUND.
func LockTopup(tx *gorm.DB, id int64) (*models.Topup, error) {
	return models.TopupForUpdate(tx, "id = ?", id)
}

// LockTopupByPaymentIntent returns the top-up a payment intent paid, in
// tx and locked on PostgreSQL, or ENOTFOUND (a payment that is not ours).
func LockTopupByPaymentIntent(tx *gorm.DB, paymentIntentID string) (*models.Topup, error) {
	return models.TopupForUpdate(tx, "payment_intent_id = ?", paymentIntentID)
}

// InsertStripeEvent records a webhook event in tx; created is false when
// the event id is already recorded, by an earlier delivery or (the unique
// key decides) a concurrent one. A refused insert aborts the transaction
// on PostgreSQL, so on false the caller must end it, as a duplicate
// changes nothing anyway.
func InsertStripeEvent(tx *gorm.DB, ev *models.StripeEvent) (created bool, err error) {
	var n int64
	if err := tx.Model(&models.StripeEvent{}).Where("id = ?", ev.ID).Count(&n).Error; err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	if err := tx.Create(ev).Error; err != nil {
		if IsUniqueViolation(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// SetStripeEventTopup links a recorded event to the top-up it is about.
func SetStripeEventTopup(tx *gorm.DB, eventID string, topupID int64) error {
	return tx.Model(&models.StripeEvent{}).Where("id = ?", eventID).Update("topup_id", topupID).Error
}

// FlagStripeEvent marks a recorded event for an admin, with why.
func FlagStripeEvent(tx *gorm.DB, eventID, note string) error {
	return tx.Model(&models.StripeEvent{}).Where("id = ?", eventID).Updates(map[string]any{"flagged": true, "note": note}).Error
}

// FlagTopup marks a top-up flagged for an admin, with why; the wallet
// flags only pending ones, so a paid top-up keeps its status.
func FlagTopup(tx *gorm.DB, topupID int64, note string) error {
	return tx.Model(&models.Topup{}).Where("id = ?", topupID).Updates(map[string]any{"status": models.TopupFlagged, "note": note}).Error
}

// FailPendingTopup marks a top-up failed in tx if it is still pending (a
// payment that failed after the top-up was paid or flagged changes nothing).
func FailPendingTopup(tx *gorm.DB, topupID int64) error {
	return tx.Model(&models.Topup{}).Where("id = ? AND status = ?", topupID, models.TopupPending).Update("status", models.TopupFailed).Error
}

// MarkTopupPaid records in tx that a top-up was paid: when, how much
// arrived, and, when known, the payment intent ("" for none) and the
// admin who confirmed it (nil for a webhook).
func MarkTopupPaid(tx *gorm.DB, topupID, receivedFen int64, paymentIntentID string, by *int64, at time.Time) error {
	updates := map[string]any{"status": models.TopupPaid, "paid_at": at, "received_fen": receivedFen}
	if paymentIntentID != "" {
		updates["payment_intent_id"] = paymentIntentID
	}
	if by != nil {
		updates["confirmed_by"] = *by
	}
	return tx.Model(&models.Topup{}).Where("id = ?", topupID).Updates(updates).Error
}

// WalletCreditsOfKinds sums what ledger transactions of the kinds (such as
// promotional credits) put into an organisation's wallet.
func WalletCreditsOfKinds(ctx context.Context, db *models.DB, orgID int64, txnKinds []string) (int64, error) {
	var fen int64
	err := db.W.WithContext(ctx).Raw(`SELECT COALESCE(SUM(e.amount_fen), 0) FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
		JOIN ledger_accounts a ON a.id = e.account_id WHERE a.kind = ? AND a.org_id = ? AND t.kind IN ?`,
		AccWallet, orgID, txnKinds).Scan(&fen).Error
	return fen, err
}

// PaidNotRefunded sums what an organisation's paid top-ups brought in and
// has not been refunded.
func PaidNotRefunded(ctx context.Context, db *models.DB, orgID int64) (int64, error) {
	var fen int64
	err := db.W.WithContext(ctx).Raw(`SELECT COALESCE(SUM(received_fen - refunded_fen), 0) FROM topups WHERE org_id = ? AND status = ?`,
		orgID, models.TopupPaid).Scan(&fen).Error
	return fen, err
}

// RefundableTopups returns an organisation's paid top-ups with money left
// to refund, newest first, locked on PostgreSQL (SQLite has one writer)
// so that two refund requests at once cannot both take the same money.
func RefundableTopups(tx *gorm.DB, orgID int64) ([]models.Topup, error) {
	var ts []models.Topup
	err := models.LockRow(tx).Where("org_id = ? AND status = ? AND received_fen > refunded_fen", orgID, models.TopupPaid).Order("id DESC").Find(&ts).Error
	return ts, err
}

// InsertRefund records a refund in tx.
func InsertRefund(tx *gorm.DB, r *models.Refund) error { return tx.Create(r).Error }

// AddTopupRefunded adds fen to what has been refunded of a top-up, in tx.
func AddTopupRefunded(tx *gorm.DB, topupID, fen int64) error {
	return tx.Model(&models.Topup{}).Where("id = ?", topupID).Update("refunded_fen", gorm.Expr("refunded_fen + ?", fen)).Error
}

// RefundPaidAtStripe records in tx that Stripe took a refund, under its
// Stripe id.
func RefundPaidAtStripe(tx *gorm.DB, refundID int64, stripeRefundID string, at time.Time) error {
	return tx.Model(&models.Refund{}).Where("id = ?", refundID).
		Updates(map[string]any{"status": RefundDone, "stripe_refund_id": stripeRefundID, "done_at": at}).Error
}

// PendingRefund returns a refund that is still pending, or ENOTFOUND
// (also for one already done).
func PendingRefund(ctx context.Context, db *models.DB, id int64) (*models.Refund, error) {
	var r models.Refund
	err := db.W.WithContext(ctx).Where("id = ? AND status = ?", id, RefundPending).First(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("pending refund")
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// FinishPendingRefund marks a refund done in tx if it is still pending;
// changed is false when another admin got there first.
func FinishPendingRefund(tx *gorm.DB, id int64, at time.Time) (changed bool, err error) {
	res := tx.Model(&models.Refund{}).Where("id = ? AND status = ?", id, RefundPending).
		Updates(map[string]any{"status": RefundDone, "done_at": at})
	return res.RowsAffected > 0, res.Error
}

// WalletDebitsSince sums what ledger transactions of the kind (such as
// rental charges) took from an organisation's wallet since the time, in
// tx; userID ≠ 0 counts only the transactions that member made.
func WalletDebitsSince(tx *gorm.DB, orgID int64, txnKind string, userID int64, since time.Time) (int64, error) {
	q := tx.Table("ledger_entries e").
		Joins("JOIN ledger_txns t ON t.id = e.txn_id").
		Joins("JOIN ledger_accounts a ON a.id = e.account_id").
		Where("a.kind = ? AND a.org_id = ? AND t.kind = ? AND t.created_at >= ?", AccWallet, orgID, txnKind, since)
	if userID != 0 {
		q = q.Where("t.created_by = ?", userID)
	}
	var debit int64
	err := q.Select("COALESCE(SUM(-e.amount_fen), 0)").Scan(&debit).Error
	return debit, err
}
