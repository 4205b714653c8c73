package ledger

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// PayableProvider is a verified provider with its payable balance.
type PayableProvider struct {
	models.Provider
	BalanceFen int64
}

// PayableProviders returns the providers a monthly payout run pays: those
// whose organisation is an approved provider and not suspended (a
// suspended provider's money waits in its payable account), with a
// positive payable balance. Demo and synthetic providers have no
// organisation and are never paid.
func PayableProviders(ctx context.Context, db *models.DB) ([]PayableProvider, error) {
	var out []PayableProvider
	err := db.W.WithContext(ctx).Raw(`SELECT p.*, a.balance_fen FROM providers p
		JOIN orgs o ON o.id = p.org_id
		JOIN ledger_accounts a ON a.kind = ? AND a.org_id = p.id
		WHERE o.kind = ? AND o.status = ? AND o.suspended_at IS NULL AND a.balance_fen > 0
		ORDER BY p.id`, AccProviderPayable, models.OrgProvider, models.OrgApproved).Scan(&out).Error
	return out, err
}

// LockPayable returns a provider's payable balance in tx, locking its
// account row on PostgreSQL (SQLite has one writer) so that the balance
// read is the balance a payout takes. No account is a zero balance.
func LockPayable(tx *gorm.DB, providerID int64) (int64, error) {
	return LockBalance(tx, AccProviderPayable, providerID)
}

// LockBalance returns the balance of an account in tx, locking its row on
// PostgreSQL, so that a debit computed from it cannot be overtaken by
// another. No account is a zero balance.
func LockBalance(tx *gorm.DB, kind string, orgID int64) (int64, error) {
	var a LedgerAccount
	err := models.LockRow(tx).Where("kind = ? AND org_id = ?", kind, orgID).First(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, nil
	}
	return a.BalanceFen, err
}

// AccountBalance returns an account's balance (0 without an account).
func AccountBalance(ctx context.Context, db *models.DB, kind string, orgID int64) (int64, error) {
	var a LedgerAccount
	err := db.W.WithContext(ctx).Where("kind = ? AND org_id = ?", kind, orgID).First(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, nil
	}
	return a.BalanceFen, err
}

// PayableBalance returns a provider's payable balance (0 without an account).
func PayableBalance(ctx context.Context, db *models.DB, providerID int64) (int64, error) {
	return AccountBalance(ctx, db, AccProviderPayable, providerID)
}

// InsertPayout records a payout in tx; created is false when the
// provider already has one for the period (the unique key decides, so
// two runs at once record one). The insert runs in a savepoint so that a
// refused one leaves the caller's transaction usable on PostgreSQL.
func InsertPayout(tx *gorm.DB, p *models.Payout) (created bool, err error) {
	var n int64
	if err := tx.Model(&models.Payout{}).Where("provider_id = ? AND period = ?", p.ProviderID, p.Period).Count(&n).Error; err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	err = tx.Transaction(func(tx *gorm.DB) error { return tx.Create(p).Error })
	if err != nil && IsUniqueViolation(err) {
		return false, nil
	}
	return err == nil, err
}

// PayoutForUpdate returns a payout in tx, locked on PostgreSQL, or ENOTFOUND.
func PayoutForUpdate(tx *gorm.DB, id int64) (*models.Payout, error) {
	var p models.Payout
	err := models.LockRow(tx).First(&p, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("payout")
	}
	return &p, err
}

// PayoutByID returns a payout, or ENOTFOUND.
func PayoutByID(ctx context.Context, db *models.DB, id int64) (*models.Payout, error) {
	return PayoutForUpdate(db.W.WithContext(ctx).Session(&gorm.Session{}), id)
}

// UpdatePayout sets fields of a payout in tx, only while it has the status
// from; changed is false when it no longer has it (another admin or run
// got there first).
func UpdatePayout(tx *gorm.DB, id int64, from string, fields map[string]any) (changed bool, err error) {
	res := tx.Model(&models.Payout{}).Where("id = ? AND status = ?", id, from).Updates(fields)
	return res.RowsAffected == 1, res.Error
}

// PendingStripePayouts returns Stripe payouts not yet transferred: a run
// cut short between recording a payout and Stripe's answer leaves them,
// and the next run sends them (with the same idempotency key).
func PendingStripePayouts(ctx context.Context, db *models.DB) ([]models.Payout, error) {
	var out []models.Payout
	err := db.W.WithContext(ctx).Where("method = ? AND status = ?", models.PayoutStripe, models.PayoutPending).Order("id").Find(&out).Error
	return out, err
}

// PayoutRow is a payout with its provider's names, for lists.
type PayoutRow struct {
	models.Payout
	ProviderNameZH string `gorm:"column:provider_name_zh"`
	ProviderNameEN string `gorm:"column:provider_name_en"`
}

// ProviderName returns the provider's name in the language.
func (r PayoutRow) ProviderName(lang string) string {
	if lang == "en" && r.ProviderNameEN != "" {
		return r.ProviderNameEN
	}
	return r.ProviderNameZH
}

// PayoutFilter narrows the payout list; zero values match everything.
type PayoutFilter struct {
	Status     string
	Method     string
	ProviderID int64
	Period     string
	Page       int
	PerPage    int
}

// Payouts returns one page of payouts, newest first, and how many match.
func Payouts(ctx context.Context, db *models.DB, f PayoutFilter) ([]PayoutRow, int64, error) {
	q := db.R.WithContext(ctx).Table("payouts").Joins("JOIN providers ON providers.id = payouts.provider_id")
	if f.Status != "" {
		q = q.Where("payouts.status = ?", f.Status)
	}
	if f.Method != "" {
		q = q.Where("payouts.method = ?", f.Method)
	}
	if f.ProviderID != 0 {
		q = q.Where("payouts.provider_id = ?", f.ProviderID)
	}
	if f.Period != "" {
		q = q.Where("payouts.period = ?", f.Period)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	page, per := models.ClampPage(f.Page, f.PerPage, 500)
	var out []PayoutRow
	err := q.Select("payouts.*, providers.name_zh AS provider_name_zh, providers.name_en AS provider_name_en").
		Order("payouts.created_at DESC, payouts.id DESC").Offset((page - 1) * per).Limit(per).Scan(&out).Error
	return out, total, err
}

// PayoutsOfProvider returns a provider's payouts, newest period first.
func PayoutsOfProvider(ctx context.Context, db *models.DB, providerID int64) ([]models.Payout, error) {
	var out []models.Payout
	err := db.R.WithContext(ctx).Where("provider_id = ?", providerID).Order("period DESC, id DESC").Find(&out).Error
	return out, err
}

// SetProviderConnect stores a provider's Stripe Connect account and its
// capabilities in tx.
func SetProviderConnect(tx *gorm.DB, providerID int64, accountID string, charges, payouts bool) error {
	return tx.Model(&models.Provider{}).Where("id = ?", providerID).Updates(map[string]any{
		"stripe_account_id": accountID, "stripe_charges_enabled": charges, "stripe_payouts_enabled": payouts,
	}).Error
}
