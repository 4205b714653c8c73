package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/apperr"
	"suanli/locales"
	"suanli/models"
)

// Ledger account kinds.
const (
	AccWallet          = "wallet"
	AccProviderPayable = "provider_payable"
	AccPlatformRevenue = "platform_revenue"
	AccPaymentClearing = "payment_clearing"
	AccBankClearing    = "bank_clearing"
	AccPromoCredit     = "promo_credit"
	AccSLACredit       = "sla_credit"
	// AccProviderUnearned holds, per provider, what renters prepaid for
	// week and month terms and the provider has not yet earned: a term's
	// price moves from here to the payable (and the commission to platform
	// revenue) as the term runs, so a payout never pays a term in advance.
	AccProviderUnearned = "provider_unearned"
	// AccProviderReceivable is what a provider owes the platform (a
	// negative balance): the part of an SLA credit or a refund that its
	// payable could not cover, because that money was already paid out.
	// The next payout offsets it before paying anything.
	AccProviderReceivable = "provider_receivable"
)

// signRule is the sign an account kind's balance must keep.
type signRule int

const (
	anySign signRule = iota
	nonNegative
	nonPositive
)

// balanceSign says which kinds of account may never cross zero: a wallet,
// a provider's payable and its unearned term money are owed money and
// never negative; promotional credit and a provider's receivable are
// sources and never positive. Clearing accounts and the platform's revenue
// (the platform's own result) move both ways. Post refuses a leg that would break the rule, and LedgerCheck
// reports any balance that does.
var balanceSign = map[string]signRule{
	AccWallet:             nonNegative,
	AccProviderPayable:    nonNegative,
	AccProviderUnearned:   nonNegative,
	AccPromoCredit:        nonPositive,
	AccProviderReceivable: nonPositive,
}

// ErrBalanceSign is returned when a posting would take an account other
// than a wallet across zero (a provider's payable below zero, say): the
// caller must split the debit (see the provider receivable), so it is a
// bug, never a user's error.
var ErrBalanceSign = errors.New("ledger: the posting would take an account across zero")

// LedgerKinds are the kinds of ledger transactions, for filters and labels.
// (owed_moved is written only by migration 00011: a payable left below
// zero by an earlier version, moved to the receivable.)
var LedgerKinds = []string{"topup", "refund", "promo_credit", "trial_credit", "sla_credit", "charge", "rental_refund", "payout", "payout_return", "term_earned", "receivable_offset", "owed_moved"}

// LedgerAccount is one account of the double-entry ledger.
type LedgerAccount struct {
	ID         int64
	Kind       string
	OrgID      int64
	BalanceFen int64
	CreatedAt  time.Time
}

// LedgerTxn is one balanced money movement.
type LedgerTxn struct {
	ID   int64
	Kind string
	Memo string // English, as the API and the CSV show it
	// MemoMsg is Memo as a message, for the reader's language (zero: Memo
	// is shown as it is: a reference, or what an admin typed).
	MemoMsg   locales.Msg `gorm:"column:memo_msg"`
	IdemKey   *string
	TopupID   *int64
	RentalID  *int64
	CreatedBy *int64
	CreatedAt time.Time
}

// LedgerEntry is one leg of a transaction.
type LedgerEntry struct {
	ID        int64
	TxnID     int64
	AccountID int64
	AmountFen int64
	CreatedAt time.Time
}

// Leg is an entry to post: an account by kind and organisation, and a
// signed amount (a wallet credit is positive).
type Leg struct {
	Kind      string
	OrgID     int64
	AmountFen int64
}

// ErrInsufficientFunds is returned when a posting would take a wallet below zero.
var ErrInsufficientFunds = &apperr.Error{Code: apperr.ECONFLICT, Message: "insufficient balance", Key: "err.insufficient"}

// ErrDuplicate is returned when a once-only transaction was already posted.
var ErrDuplicate = errors.New("ledger: already posted")

// Post records a balanced transaction in tx. It is the one place money
// moves: it refuses legs that do not sum to zero, zero legs and fewer than
// two legs; keeps cached balances in step; refuses to take a wallet
// below zero (ErrInsufficientFunds) and any other account across the
// zero its kind must keep (ErrBalanceSign, see balanceSign). A txn with
// an IdemKey already used returns ErrDuplicate and posts nothing.
func Post(tx *gorm.DB, txn *LedgerTxn, legs ...Leg) error {
	if err := checkLegs(legs); err != nil {
		return err
	}
	// A nested transaction is a savepoint: a refused posting leaves
	// nothing behind, even when the caller's transaction goes on.
	return tx.Transaction(func(tx *gorm.DB) error { return post(tx, txn, legs) })
}

func post(tx *gorm.DB, txn *LedgerTxn, legs []Leg) error {
	if txn.IdemKey != nil {
		var n int64
		if err := tx.Model(&LedgerTxn{}).Where("idem_key = ?", *txn.IdemKey).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return ErrDuplicate
		}
	}
	if err := tx.Create(txn).Error; err != nil {
		if IsUniqueViolation(err) {
			return ErrDuplicate
		}
		return err
	}
	ids := make([]int64, len(legs))
	for i, l := range legs {
		acc, err := ensureAccount(tx, l.Kind, l.OrgID, txn.CreatedAt)
		if err != nil {
			return err
		}
		ids[i] = acc.ID
	}
	// Balances change in the order of their accounts' ids, as a meter
	// batch locks them (see applyBalances): two transactions that share
	// accounts then never wait for each other in a cycle.
	order := make([]int, len(legs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	for _, i := range order {
		l := legs[i]
		q := tx.Model(&LedgerAccount{}).Where("id = ?", ids[i])
		switch balanceSign[l.Kind] {
		case nonNegative:
			if l.AmountFen < 0 {
				q = q.Where("balance_fen + ? >= 0", l.AmountFen)
			}
		case nonPositive:
			if l.AmountFen > 0 {
				q = q.Where("balance_fen + ? <= 0", l.AmountFen)
			}
		}
		res := q.Update("balance_fen", gorm.Expr("balance_fen + ?", l.AmountFen))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			if l.Kind == AccWallet {
				return ErrInsufficientFunds
			}
			return fmt.Errorf("%w: %s account of %d by %d fen", ErrBalanceSign, l.Kind, l.OrgID, l.AmountFen)
		}
	}
	for i, l := range legs {
		if err := tx.Create(&LedgerEntry{TxnID: txn.ID, AccountID: ids[i], AmountFen: l.AmountFen, CreatedAt: txn.CreatedAt}).Error; err != nil {
			return err
		}
	}
	return nil
}

// checkLegs refuses fewer than two legs, zero legs, and legs that do not
// sum to zero.
func checkLegs(legs []Leg) error {
	if len(legs) < 2 {
		return fmt.Errorf("ledger: a transaction needs two legs, got %d", len(legs))
	}
	var sum int64
	for _, l := range legs {
		if l.AmountFen == 0 {
			return errors.New("ledger: zero leg")
		}
		sum += l.AmountFen
	}
	if sum != 0 {
		return fmt.Errorf("ledger: legs sum to %d fen, not zero", sum)
	}
	return nil
}

// Posting is one transaction for PostMany.
type Posting struct {
	Txn  *LedgerTxn
	Legs []Leg
}

// PostMany records many balanced transactions in tx with the same rules
// as Post, in a fixed handful of statements whatever their number (see
// rows): the meter bills a hundred thousand rentals per pass, and a
// statement per leg would not keep up. Transactions with an IdemKey are
// not accepted here (use Post). Balances change once per account by the
// sum of its legs; a wallet that would go below zero fails the whole
// batch with ErrInsufficientFunds, any other account that would cross
// its zero (balanceSign) with ErrBalanceSign.
func PostMany(tx *gorm.DB, ps []Posting) error {
	if len(ps) == 0 {
		return nil
	}
	delta := map[accountKey]int64{}
	for _, p := range ps {
		if err := checkLegs(p.Legs); err != nil {
			return err
		}
		if p.Txn.IdemKey != nil {
			return errors.New("ledger: PostMany takes no once-only transactions")
		}
		if p.Txn.CreatedAt.IsZero() {
			p.Txn.CreatedAt = models.Now(tx).UTC()
		}
		for _, l := range p.Legs {
			delta[accountKey{l.Kind, l.OrgID}] += l.AmountFen
		}
	}
	ids, err := accountIDs(tx, slices.Collect(maps.Keys(delta)), ps[0].Txn.CreatedAt)
	if err != nil {
		return err
	}
	if err := insertTxns(tx, ps); err != nil {
		return err
	}
	entries := newRows("txn_id bigint", "account_id bigint", "amount_fen bigint", "created_at timestamptz")
	for _, p := range ps {
		for _, l := range p.Legs {
			entries.add(p.Txn.ID, ids[accountKey{l.Kind, l.OrgID}], l.AmountFen, p.Txn.CreatedAt)
		}
	}
	if err := entries.each(tx, func(with string, args []any) error {
		return tx.Exec(with+`INSERT INTO ledger_entries (txn_id, account_id, amount_fen, created_at)
			SELECT txn_id, account_id, amount_fen, created_at FROM v`, args...).Error
	}); err != nil {
		return err
	}
	// Last: the balances of shared accounts (the platform's revenue, a
	// provider's payable) stay locked until commit, and concurrent
	// batches wait for each other only this long.
	return applyBalances(tx, ids, delta)
}

// accountKey names an account: its kind and organisation.
type accountKey struct {
	kind string
	org  int64
}

// accountIDs returns the ids of the accounts in tx, creating those that
// do not exist yet: one statement when they all do (as a meter pass's
// wallets and payables mostly do), three otherwise.
func accountIDs(tx *gorm.DB, keys []accountKey, now time.Time) (map[accountKey]int64, error) {
	ids := make(map[accountKey]int64, len(keys))
	read := func(keys []accountKey) error {
		v := newRows("kind text", "org_id bigint")
		for _, k := range keys {
			v.add(k.kind, k.org)
		}
		return v.each(tx, func(with string, args []any) error {
			// A lookup per key, whatever the planner guesses of v's size (a
			// join let PostgreSQL hash every account, or loop over all of
			// them for each key, once it planned for ten).
			var got []struct {
				ID    *int64
				Kind  string
				OrgID int64
			}
			if err := tx.Raw(with+`SELECT (SELECT a.id FROM ledger_accounts a WHERE a.kind = v.kind AND a.org_id = v.org_id) AS id,
				v.kind, v.org_id FROM v`, args...).Scan(&got).Error; err != nil {
				return err
			}
			for _, a := range got {
				if a.ID != nil {
					ids[accountKey{a.Kind, a.OrgID}] = *a.ID
				}
			}
			return nil
		})
	}
	if err := read(keys); err != nil || len(ids) == len(keys) {
		return ids, err
	}
	var missing []accountKey
	v := newRows("kind text", "org_id bigint")
	for _, k := range keys {
		if _, ok := ids[k]; !ok {
			missing = append(missing, k)
			v.add(k.kind, k.org)
		}
	}
	// WHERE true: SQLite's grammar needs it before ON CONFLICT.
	if err := v.each(tx, func(with string, args []any) error {
		return tx.Exec(with+`INSERT INTO ledger_accounts (kind, org_id, balance_fen, created_at) SELECT kind, org_id, 0, ? FROM v WHERE true
			ON CONFLICT (kind, org_id) DO NOTHING`, append(args, now)...).Error
	}); err != nil {
		return nil, err
	}
	if err := read(missing); err != nil {
		return nil, err
	}
	if len(ids) != len(keys) {
		return nil, fmt.Errorf("ledger: %d of %d accounts missing after creating them", len(keys)-len(ids), len(keys))
	}
	return ids, nil
}

// insertTxns inserts the postings' transactions in tx and sets their ids.
func insertTxns(tx *gorm.DB, ps []Posting) error {
	v := newRows("n bigint", "kind text", "memo text", "memo_msg text", "topup_id bigint", "rental_id bigint", "created_by bigint", "created_at timestamptz")
	for i, p := range ps {
		t := p.Txn
		v.add(int64(i), t.Kind, t.Memo, t.MemoMsg.JSON(), t.TopupID, t.RentalID, t.CreatedBy, t.CreatedAt)
	}
	next := 0
	return v.each(tx, func(with string, args []any) error {
		var ids []int64
		if err := tx.Raw(with+`INSERT INTO ledger_txns (kind, memo, memo_msg, topup_id, rental_id, created_by, created_at)
			SELECT kind, memo, memo_msg, topup_id, rental_id, created_by, created_at FROM v ORDER BY n RETURNING id`, args...).Scan(&ids).Error; err != nil {
			return err
		}
		// The rows are inserted in the order of n and take their ids from a
		// sequence in that order, whatever order RETURNING lists them in.
		slices.Sort(ids)
		for _, id := range ids {
			if next == len(ps) {
				return errors.New("ledger: more transactions inserted than posted")
			}
			ps[next].Txn.ID = id
			next++
		}
		return nil
	})
}

// applyBalances changes the accounts' balances in tx by their deltas, in
// one statement (per SQLite chunk), refusing a change that would take an
// account across the zero its kind keeps (balanceSign): a wallet with
// ErrInsufficientFunds, any other account with ErrBalanceSign.
func applyBalances(tx *gorm.DB, ids map[accountKey]int64, delta map[accountKey]int64) error {
	v := newRows("id bigint", "d bigint", "s bigint")
	for k, d := range delta {
		if d != 0 {
			v.add(ids[k], d, int64(balanceSign[k.kind]))
		}
	}
	// On PostgreSQL the accounts are locked first, in the order of their
	// ids (as Post changes them): batches and postings that share accounts
	// never wait for each other in a cycle. The update locks only rows the
	// locked query has locked already. FOR NO KEY UPDATE, as the update
	// itself takes: it does not wait for the key-share locks that other
	// transactions' new entries hold on their accounts.
	pg := tx.Dialector.Name() == "postgres"
	done := map[int64]bool{}
	err := v.each(tx, func(with string, args []any) error {
		lock, locked := "", ""
		if pg {
			// The ids as an array too, so that the accounts are found
			// through their key (joined to v alone, PostgreSQL reads them
			// all).
			lock = `, locked AS MATERIALIZED (SELECT a.id FROM ledger_accounts a WHERE a.id = ANY(?::bigint[]) ORDER BY a.id FOR NO KEY UPDATE) `
			locked = "AND ledger_accounts.id = ANY(?::bigint[]) AND ledger_accounts.id IN (SELECT id FROM locked)"
			args = append(args, args[0], args[0])
		}
		var got []int64
		// s is the account's sign rule: a change that would cross the
		// zero its kind keeps is left out, which fails the batch.
		err := tx.Raw(with+lock+fmt.Sprintf(`UPDATE %s SET balance_fen = ledger_accounts.balance_fen + v.d FROM v
			WHERE ledger_accounts.id = v.id %s
			AND (v.s <> %d OR v.d >= 0 OR ledger_accounts.balance_fen + v.d >= 0)
			AND (v.s <> %d OR v.d <= 0 OR ledger_accounts.balance_fen + v.d <= 0)
			RETURNING ledger_accounts.id`, updateTarget(tx, "ledger_accounts"), locked, nonNegative, nonPositive), args...).Scan(&got).Error
		for _, id := range got {
			done[id] = true
		}
		return err
	})
	if err != nil || len(done) == v.n {
		return err
	}
	for k, d := range delta {
		if d != 0 && !done[ids[k]] && k.kind != AccWallet {
			return fmt.Errorf("%w: %s account of %d by %d fen", ErrBalanceSign, k.kind, k.org, d)
		}
	}
	return ErrInsufficientFunds
}

// IsUniqueViolation reports whether err is a unique-constraint violation
// on either database.
func IsUniqueViolation(err error) bool {
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint") || strings.Contains(s, "duplicate key") || strings.Contains(s, "23505")
}

// ensureAccount returns the account of a kind for an organisation, creating it.
func ensureAccount(tx *gorm.DB, kind string, orgID int64, now time.Time) (*LedgerAccount, error) {
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&LedgerAccount{Kind: kind, OrgID: orgID, CreatedAt: now}).Error; err != nil {
		return nil, err
	}
	var a LedgerAccount
	err := tx.Where("kind = ? AND org_id = ?", kind, orgID).First(&a).Error
	return &a, err
}

// WalletBalance returns an organisation's wallet balance (0 without an account).
func WalletBalance(ctx context.Context, db *models.DB, orgID int64) (int64, error) {
	var a LedgerAccount
	err := db.W.WithContext(ctx).Where("kind = ? AND org_id = ?", AccWallet, orgID).First(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, nil
	}
	return a.BalanceFen, err
}

// LedgerLine is one wallet entry with its transaction.
type LedgerLine struct {
	EntryID   int64       `json:"id"`
	TxnID     int64       `json:"txn_id"`
	Kind      string      `json:"kind"`
	Memo      string      `json:"memo"`
	MemoMsg   locales.Msg `json:"-"`
	AmountFen int64       `json:"amount_fen"`
	TopupID   *int64      `json:"topup_id"`
	CreatedAt time.Time   `json:"created_at"`
}

// WalletLedger returns an organisation's wallet entries, newest first.
func WalletLedger(ctx context.Context, db *models.DB, orgID int64, f models.LedgerFilter) ([]LedgerLine, error) {
	q := walletLedgerQuery(ctx, db, orgID, f).
		Select("e.id AS entry_id, e.txn_id, t.kind, t.memo, t.memo_msg, e.amount_fen, t.topup_id, e.created_at").Order("e.id DESC")
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	if f.Offset > 0 {
		q = q.Offset(f.Offset)
	}
	var out []LedgerLine
	err := q.Scan(&out).Error
	return out, err
}

// walletLedgerQuery selects the wallet entries f matches (WalletLedger,
// CountWalletLedger). It reads through the read pool: on SQLite the writer
// is one connection, and a ledger page and its count should not queue
// behind the meter's writes (WAL readers see every committed entry).
func walletLedgerQuery(ctx context.Context, db *models.DB, orgID int64, f models.LedgerFilter) *gorm.DB {
	q := db.R.WithContext(ctx).Table("ledger_entries e").
		Joins("JOIN ledger_txns t ON t.id = e.txn_id").
		Joins("JOIN ledger_accounts a ON a.id = e.account_id").
		Where("a.kind = ? AND a.org_id = ?", AccWallet, orgID)
	if f.Kind != "" {
		q = q.Where("t.kind = ?", f.Kind)
	}
	if !f.From.IsZero() {
		q = q.Where("e.created_at >= ?", f.From)
	}
	if !f.To.IsZero() {
		q = q.Where("e.created_at < ?", f.To)
	}
	return q
}

// LedgerCheck verifies the whole ledger: every transaction sums to zero,
// every cached balance equals the sum of its entries, and no account has
// a balance outside the sign its kind keeps (balanceSign: a provider's
// payable below zero, say). It returns the problems found (none when
// healthy).
func LedgerCheck(ctx context.Context, db *models.DB) ([]string, error) {
	var problems []string
	var bad []struct {
		TxnID int64
		Sum   int64
	}
	if err := db.W.WithContext(ctx).Raw(`SELECT txn_id, SUM(amount_fen) AS sum FROM ledger_entries GROUP BY txn_id HAVING SUM(amount_fen) <> 0`).Scan(&bad).Error; err != nil {
		return nil, err
	}
	for _, b := range bad {
		problems = append(problems, fmt.Sprintf("transaction %d sums to %d", b.TxnID, b.Sum))
	}
	var drift []struct {
		ID      int64
		Balance int64
		Sum     int64
	}
	if err := db.W.WithContext(ctx).Raw(`SELECT a.id, a.balance_fen AS balance, COALESCE(SUM(e.amount_fen), 0) AS sum
		FROM ledger_accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id
		GROUP BY a.id, a.balance_fen HAVING a.balance_fen <> COALESCE(SUM(e.amount_fen), 0)`).Scan(&drift).Error; err != nil {
		return nil, err
	}
	for _, d := range drift {
		problems = append(problems, fmt.Sprintf("account %d caches %d but its entries sum to %d", d.ID, d.Balance, d.Sum))
	}
	var neg, pos []string
	for kind, rule := range balanceSign {
		switch rule {
		case nonNegative:
			neg = append(neg, kind)
		case nonPositive:
			pos = append(pos, kind)
		}
	}
	var wrong []LedgerAccount
	if err := db.W.WithContext(ctx).Where("(kind IN ? AND balance_fen < 0) OR (kind IN ? AND balance_fen > 0)", neg, pos).
		Order("id").Find(&wrong).Error; err != nil {
		return nil, err
	}
	for _, a := range wrong {
		problems = append(problems, fmt.Sprintf("account %d (%s of %d) has a balance of %d fen, outside its kind's sign", a.ID, a.Kind, a.OrgID, a.BalanceFen))
	}
	return problems, nil
}

// CountWalletLedger counts the wallet entries f matches (f.Limit and
// f.Offset aside).
func CountWalletLedger(ctx context.Context, db *models.DB, orgID int64, f models.LedgerFilter) (int64, error) {
	var n int64
	err := walletLedgerQuery(ctx, db, orgID, f).Count(&n).Error
	return n, err
}
