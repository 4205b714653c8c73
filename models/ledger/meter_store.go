package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/models"
	"suanli/pricing"
)

// ClaimMeterInterval moves a running rental's billed-until second in tx
// from prev to to, adding fen to what it was billed and setting the new
// sub-fen carry (and, when stop is not empty, why it must stop), only if
// it is still running and billed up to prev. It reports whether it did:
// of two meter passes that race (a job rescued while the first still
// runs, a stop during a pass), exactly one bills an interval.
func ClaimMeterInterval(tx *gorm.DB, rentalID int64, prev, to time.Time, fen, carry int64, stop string, now time.Time) (bool, error) {
	up := map[string]any{"billed_until": to, "carry_num": carry, "billed_fen": gorm.Expr("billed_fen + ?", fen), "updated_at": now}
	if stop != "" {
		up["stop_reason"] = stop
	}
	res := tx.Model(&models.Rental{}).Where("id = ? AND status = ? AND billed_until = ?", rentalID, models.RentalRunning, prev).Updates(up)
	if res.Error != nil {
		return false, res.Error
	}
	return res.RowsAffected > 0, nil
}

// MeterClaim is one rental's interval for ClaimMeterIntervals: as
// ClaimMeterInterval's parameters.
type MeterClaim struct {
	RentalID   int64
	Prev, To   time.Time
	Carry, Fen int64
	Stop       string
}

// meterClaimChunk is how many claims one statement carries (six bind
// parameters each, well under SQLite's limit).
const meterClaimChunk = 1000

// ClaimMeterIntervals claims many rentals' intervals in tx as
// ClaimMeterInterval does one, in one statement per 1,000 (a statement
// per rental was most of a meter pass's time on PostgreSQL). ok is false
// as soon as some rental was not claimed (another pass or a stop got it
// first); the caller then rolls the transaction back.
func ClaimMeterIntervals(tx *gorm.DB, cs []MeterClaim, now time.Time) (ok bool, err error) {
	// PostgreSQL types VALUES from the first row; its bind parameters
	// need casts, which SQLite does not have.
	cast := func(p, typ string) string {
		if tx.Dialector.Name() == "postgres" {
			return p + "::" + typ
		}
		return p
	}
	for i := 0; i < len(cs); i += meterClaimChunk {
		part := cs[i:min(i+meterClaimChunk, len(cs))]
		var sb strings.Builder
		args := make([]any, 0, len(part)*6+3)
		sb.WriteString("WITH v(id, prev, upto, carry, fen, stop) AS (VALUES ")
		for j, c := range part {
			if j > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(" + cast("?", "bigint") + ", " + cast("?", "timestamptz") + ", " + cast("?", "timestamptz") + ", " +
				cast("?", "bigint") + ", " + cast("?", "bigint") + ", " + cast("?", "text") + ")")
			args = append(args, c.RentalID, c.Prev, c.To, c.Carry, c.Fen, c.Stop)
		}
		sb.WriteString(`) UPDATE rentals SET billed_until = v.upto, carry_num = v.carry, billed_fen = rentals.billed_fen + v.fen,
			stop_reason = CASE WHEN v.stop = '' THEN rentals.stop_reason ELSE v.stop END, updated_at = ` + cast("?", "timestamptz") + `
			FROM v WHERE rentals.id = v.id AND rentals.status = ` + cast("?", "text") + ` AND rentals.billed_until = v.prev RETURNING rentals.id`)
		args = append(args, now, models.RentalRunning)
		var got []int64
		if err := tx.Raw(sb.String(), args...).Scan(&got).Error; err != nil {
			return false, err
		}
		if len(got) != len(part) {
			return false, nil
		}
	}
	return true, nil
}

// RunningOnDemandIDs returns up to limit ids after afterID of running
// on-demand rentals, by id. It reads on the write handle: a meter pass
// sees what the previous batch committed.
func RunningOnDemandIDs(ctx context.Context, db *models.DB, afterID int64, limit int) ([]int64, error) {
	var ids []int64
	err := db.W.WithContext(ctx).Model(&models.Rental{}).Where("status = ? AND term = ? AND id > ?", models.RentalRunning, pricing.OnDemand, afterID).
		Order("id").Limit(limit).Pluck("id", &ids).Error
	return ids, err
}

// RunningOnDemandBetween returns, in tx, the running on-demand rentals
// with ids from fromID to toID, by id.
func RunningOnDemandBetween(tx *gorm.DB, fromID, toID int64) ([]models.Rental, error) {
	var rs []models.Rental
	err := tx.Where("id BETWEEN ? AND ? AND status = ? AND term = ?", fromID, toID, models.RentalRunning, pricing.OnDemand).
		Order("id").Find(&rs).Error
	return rs, err
}

// WalletBalances returns, in tx, the wallet balances of the
// organisations, by organisation (one without a wallet is absent).
func WalletBalances(tx *gorm.DB, orgIDs []int64) (map[int64]int64, error) {
	var accs []LedgerAccount
	if err := tx.Select("org_id", "balance_fen").Where("kind = ? AND org_id IN ?", AccWallet, orgIDs).Find(&accs).Error; err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(accs))
	for _, a := range accs {
		out[a.OrgID] = a.BalanceFen
	}
	return out, nil
}

// OrgWalletBalance returns, in tx, an organisation's wallet balance (0
// without a wallet).
func OrgWalletBalance(tx *gorm.DB, orgID int64) (int64, error) {
	var bal int64
	err := tx.Model(&LedgerAccount{}).Where("kind = ? AND org_id = ?", AccWallet, orgID).Select("balance_fen").Scan(&bal).Error
	return bal, err
}

// OrgsWithSpendLimits returns, in tx, those of the organisations that have
// a spending limit (a monthly budget, a member cap or an hourly cap), by
// id: only they need their headroom read.
func OrgsWithSpendLimits(tx *gorm.DB, orgIDs []int64) (map[int64]*models.Org, error) {
	var os []models.Org
	if err := tx.Where("id IN ? AND (monthly_budget_fen IS NOT NULL OR member_cap_fen IS NOT NULL OR hourly_cap_fen IS NOT NULL)", orgIDs).
		Find(&os).Error; err != nil {
		return nil, err
	}
	out := make(map[int64]*models.Org, len(os))
	for i := range os {
		out[os[i].ID] = &os[i]
	}
	return out, nil
}

// MarkLowBalanceMailed records in tx that the rental's renter was mailed
// about a low balance, and reports whether this call did (once per
// rental, however many passes race).
func MarkLowBalanceMailed(tx *gorm.DB, rentalID int64) (bool, error) {
	res := tx.Model(&models.Rental{}).Where("id = ? AND NOT low_balance_mailed", rentalID).Update("low_balance_mailed", true)
	return res.RowsAffected > 0, res.Error
}

// SetRentalBilledFen records in tx what a rental has been billed in all.
func SetRentalBilledFen(tx *gorm.DB, rentalID, fen int64) error {
	return tx.Model(&models.Rental{}).Where("id = ?", rentalID).Update("billed_fen", fen).Error
}

// ClearRentalMoney records in tx that a rental cost nothing and earned
// its provider nothing (its charges were refunded).
func ClearRentalMoney(tx *gorm.DB, rentalID int64) error {
	return tx.Model(&models.Rental{}).Where("id = ?", rentalID).Updates(map[string]any{"billed_fen": 0, "earned_fen": 0}).Error
}

// RentalAccountSum is what a rental's ledger transactions moved on one
// account, in all.
type RentalAccountSum struct {
	Kind  string
	OrgID int64
	Fen   int64
}

// RentalAccountSums returns, in tx, what a rental's ledger transactions
// moved on each account, summed per account.
func RentalAccountSums(tx *gorm.DB, rentalID int64) ([]RentalAccountSum, error) {
	var sums []RentalAccountSum
	err := tx.Raw(`SELECT a.kind AS kind, a.org_id AS org_id, SUM(e.amount_fen) AS fen FROM ledger_entries e
		JOIN ledger_txns t ON t.id = e.txn_id JOIN ledger_accounts a ON a.id = e.account_id
		WHERE t.rental_id = ? GROUP BY a.kind, a.org_id`, rentalID).Scan(&sums).Error
	return sums, err
}

// TermKey is the idempotency key of a term rental's n-th payment.
func TermKey(rentalID int64, n int) string { return fmt.Sprintf("term/r%d/%d", rentalID, n) }

// TermsPaid counts, in tx, the term payments posted for a rental (see
// TermKey; a free rental's refund leaves them counted).
func TermsPaid(tx *gorm.DB, rentalID int64) (int64, error) {
	var n int64
	err := tx.Model(&LedgerTxn{}).Where("rental_id = ? AND idem_key LIKE ?", rentalID, fmt.Sprintf("term/r%d/%%", rentalID)).Count(&n).Error
	return n, err
}

// SetRentalEndsAt records in tx when a term rental's term ends.
func SetRentalEndsAt(tx *gorm.DB, rentalID int64, end time.Time) error {
	return tx.Model(&models.Rental{}).Where("id = ?", rentalID).Update("ends_at", end).Error
}
