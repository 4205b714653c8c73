package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
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
// ClaimMeterInterval's parameters, and for BillMeterBatch the charge to
// post if the claim is won (nil when nothing is charged).
type MeterClaim struct {
	RentalID   int64
	Prev, To   time.Time
	Carry, Fen int64
	Stop       string
	Charge     *Posting
}

// ClaimMeterIntervals claims many rentals' intervals in tx as
// ClaimMeterInterval does one, in one statement (see claimIntervals). ok
// is false when some rental was not claimed (another pass or a stop got
// it first).
func ClaimMeterIntervals(tx *gorm.DB, cs []MeterClaim, now time.Time) (ok bool, err error) {
	won, err := claimIntervals(tx, cs, now)
	return err == nil && len(won) == len(cs), err
}

// claimIntervals claims the intervals in tx, in one statement (one per
// chunk under SQLite's bind-parameter limit: a statement per rental was
// most of a meter pass's time on PostgreSQL), and returns the rentals
// whose claims it won.
func claimIntervals(tx *gorm.DB, cs []MeterClaim, now time.Time) (map[int64]bool, error) {
	v := newRows("id bigint", "prev timestamptz", "upto timestamptz", "carry bigint", "fen bigint", "stop text")
	for _, c := range cs {
		v.add(c.RentalID, c.Prev, c.To, c.Carry, c.Fen, c.Stop)
	}
	won := make(map[int64]bool, len(cs))
	err := v.each(tx, func(with string, args []any) error {
		// The guard is billed_until = prev: of two passes (or a pass and a
		// stop) that read the same second, the second's row no longer
		// matches once the first commits.
		q := with + "UPDATE " + updateTarget(tx, "rentals") + ` SET billed_until = v.upto, carry_num = v.carry, billed_fen = rentals.billed_fen + v.fen,
			stop_reason = CASE WHEN v.stop = '' THEN rentals.stop_reason ELSE v.stop END, updated_at = ?
			FROM v WHERE rentals.id = v.id AND rentals.status = ? AND rentals.billed_until = v.prev`
		args = append(args, now, models.RentalRunning)
		if tx.Dialector.Name() == "postgres" {
			// The ids again, as an array: joined to v alone, PostgreSQL
			// hashes the whole table for every batch.
			q += ` AND rentals.id = ANY(?::bigint[])`
			args = append(args, args[0])
		}
		var ids []int64
		err := tx.Raw(q+" RETURNING rentals.id", args...).Scan(&ids).Error
		for _, id := range ids {
			won[id] = true
		}
		return err
	})
	return won, err
}

// ErrMeterRaced is a meter batch whose charges would take a wallet below
// zero: the wallet was debited since the batch read its balance (a stop
// billed a rental of it meanwhile). The batch is rolled back and billed
// again, read afresh.
var ErrMeterRaced = errors.New("ledger: a wallet was debited since the meter batch read it")

// MeterRaced reports whether a meter batch failed for a race that billing
// it again resolves: ErrMeterRaced, or a deadlock PostgreSQL broke between
// two passes that claim the same rentals in different orders.
func MeterRaced(err error) bool {
	return errors.Is(err, ErrMeterRaced) || err != nil && strings.Contains(err.Error(), "SQLSTATE 40P01")
}

// BillMeterBatch claims a meter batch's intervals and posts the charges of
// the claims it won (PostMany) in tx, in a fixed handful of statements
// whatever the batch's size, and returns the rentals whose claims it won.
// The others were billed by another pass or a stop that got them first:
// dropping them, instead of failing the batch, keeps a batch of thousands
// of rentals from billing again and again while renters stop some.
func BillMeterBatch(tx *gorm.DB, cs []MeterClaim, now time.Time) (map[int64]bool, error) {
	won, err := claimIntervals(tx, cs, now)
	if err != nil {
		return nil, err
	}
	var ps []Posting
	for _, c := range cs {
		if won[c.RentalID] && c.Charge != nil {
			ps = append(ps, *c.Charge)
		}
	}
	err = PostMany(tx, ps)
	if errors.Is(err, ErrInsufficientFunds) {
		err = ErrMeterRaced
	}
	return won, err
}

// metered selects the running on-demand rentals, as the partial index
// rentals_metered (migration 00032) does: in literals, which SQLite needs
// to use a partial index.
var metered = fmt.Sprintf("status = '%s' AND term = '%s'", models.RentalRunning, pricing.OnDemand)

// meteredRentals is the rentals table for the meter's reads: on SQLite
// through rentals_metered by name, since its planner (without
// statistics) prefers rentals_status and reads every running rental for
// each batch.
func meteredRentals(tx *gorm.DB) *gorm.DB {
	if tx.Dialector.Name() == "sqlite" {
		return tx.Table("rentals INDEXED BY rentals_metered")
	}
	return tx.Table("rentals")
}

// OrgRange is the organisations, by id from From to To, whose running
// on-demand rentals one meter batch bills.
type OrgRange struct{ From, To int64 }

// MeterRanges cuts the organisation ids into ranges that hold about size
// running on-demand rentals each, in one statement. An organisation is
// never cut, so that each wallet and spending limit is charged by one
// batch only, and batches that run at once never touch the same wallet.
// The ranges cover every id (the last one is open), so an organisation
// whose first rental started since is billed too.
func MeterRanges(ctx context.Context, db *models.DB, size int) ([]OrgRange, error) {
	var orgs []struct {
		OrgID int64
		N     int
	}
	// A plan only (each batch reads its rentals in its transaction): it
	// reads through the read pool, leaving SQLite's one writer free.
	if err := meteredRentals(db.R.WithContext(ctx)).Select("org_id, COUNT(*) AS n").
		Where(metered).Group("org_id").Order("org_id").Scan(&orgs).Error; err != nil {
		return nil, err
	}
	var out []OrgRange
	from, n := int64(math.MinInt64), 0
	for i, o := range orgs {
		if n += o.N; n >= size && i < len(orgs)-1 {
			out = append(out, OrgRange{from, o.OrgID})
			from, n = o.OrgID+1, 0
		}
	}
	if len(orgs) > 0 {
		out = append(out, OrgRange{from, math.MaxInt64})
	}
	return out, nil
}

// MeterBatch is what a meter batch reads in its transaction: the running
// on-demand rentals of its organisations by organisation and id (only the
// meterColumns), their wallets' balances by organisation, and those of
// them with spending limits (see OrgsWithSpendLimits).
type MeterBatch struct {
	Rentals  []models.Rental
	Balances map[int64]int64
	Limited  map[int64]*models.Org
}

// meterColumns are the rentals' columns a meter batch reads: what the
// meter computes a charge from (the rate, the billing state), posts it
// with (the renter, the provider) and mails a renter about. Scanning
// every column of a hundred thousand rentals was a good part of a pass.
var meterColumns = []string{"id", "org_id", "user_id", "provider_id", "status", "term", "gpus", "price_per_gpu_hour_fen",
	"offpeak_pct", "student_pct", "sla_surcharge_pct", "no_gpu", "no_gpu_price_per_hour_fen", "free", "running_since",
	"billed_until", "carry_num", "billed_fen", "downtime_secs", "min_billed_s", "stop_reason", "low_balance_mailed"}

// ReadMeterBatch reads, in tx, the meter batch of the organisations in g.
func ReadMeterBatch(tx *gorm.DB, g OrgRange) (b MeterBatch, err error) {
	// By organisation (each one's rentals by id, the order they are
	// charged in), the order of the index: nothing to sort.
	if err = meteredRentals(tx).Select(meterColumns).Where("org_id BETWEEN ? AND ? AND "+metered, g.From, g.To).Order("org_id, id").
		Find(&b.Rentals).Error; err != nil || len(b.Rentals) == 0 {
		return b, err
	}
	var orgs []int64
	for _, r := range b.Rentals {
		if len(orgs) == 0 || orgs[len(orgs)-1] != r.OrgID {
			orgs = append(orgs, r.OrgID)
		}
	}
	if b.Balances, err = WalletBalances(tx, orgs); err != nil {
		return b, err
	}
	b.Limited, err = OrgsWithSpendLimits(tx, orgs)
	return b, err
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
