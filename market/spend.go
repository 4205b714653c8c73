package market

import (
	"context"
	"time"

	"suanli/apperr"
	"suanli/models"
	"suanli/pricing"
)

// ChargeKind is the ledger kind of money spent on rentals.
const ChargeKind = "charge"

// CheckSpend says whether spending amountFen more now stays within the
// organisation's limits: a lab's monthly budget (calendar month,
// Asia/Shanghai) and its cap per member, and any organisation's cap per
// rolling hour. Spending is the wallet's "charge" transactions; the
// member is the transaction's CreatedBy. Starting a rental and the meter
// call it before they charge.
func (w *Wallet) CheckSpend(ctx context.Context, org *models.Org, userID, amountFen int64, now time.Time) error {
	l := now.In(pricing.Shanghai)
	month := time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, pricing.Shanghai).UTC()
	if org.MonthlyBudgetFen != nil {
		spent, err := w.spent(ctx, org.ID, 0, month)
		if err != nil {
			return err
		}
		if spent+amountFen > *org.MonthlyBudgetFen {
			return limitErr("err.limit_budget", *org.MonthlyBudgetFen, spent)
		}
	}
	if org.MemberCapFen != nil {
		spent, err := w.spent(ctx, org.ID, userID, month)
		if err != nil {
			return err
		}
		if spent+amountFen > *org.MemberCapFen {
			return limitErr("err.limit_member", *org.MemberCapFen, spent)
		}
	}
	if org.HourlyCapFen != nil {
		spent, err := w.spent(ctx, org.ID, 0, now.Add(-time.Hour).UTC())
		if err != nil {
			return err
		}
		if spent+amountFen > *org.HourlyCapFen {
			return limitErr("err.limit_hourly", *org.HourlyCapFen, spent)
		}
	}
	return nil
}

func limitErr(key string, limit, spent int64) error {
	return &apperr.Error{Code: apperr.EFORBIDDEN, Message: "spending limit reached", Key: key,
		Args: []any{FenToYuanString(limit), FenToYuanString(spent)}}
}

// spent sums the organisation's charges since the time (one member's, if userID ≠ 0).
func (w *Wallet) spent(ctx context.Context, orgID, userID int64, since time.Time) (int64, error) {
	q := w.DB.W.WithContext(ctx).Table("ledger_entries e").
		Joins("JOIN ledger_txns t ON t.id = e.txn_id").
		Joins("JOIN ledger_accounts a ON a.id = e.account_id").
		Where("a.kind = ? AND a.org_id = ? AND t.kind = ? AND t.created_at >= ?", models.AccWallet, orgID, ChargeKind, since)
	if userID != 0 {
		q = q.Where("t.created_by = ?", userID)
	}
	var debit int64
	err := q.Select("COALESCE(SUM(-e.amount_fen), 0)").Scan(&debit).Error
	return debit, err
}
