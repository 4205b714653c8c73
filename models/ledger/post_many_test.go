package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
)

// fund credits each organisation's wallet with fen (promotional credit).
func fund(t *testing.T, db *models.DB, fen int64, orgs ...int64) {
	t.Helper()
	for _, o := range orgs {
		err := db.Tx(context.Background(), func(tx *gorm.DB) error {
			return ledger.Post(tx, &ledger.LedgerTxn{Kind: "promo_credit", Memo: "test funding", CreatedAt: time.Now().UTC()},
				ledger.Leg{Kind: ledger.AccWallet, OrgID: o, AmountFen: fen}, ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -fen})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// balanced fails the test on any problem LedgerCheck finds.
func balanced(t *testing.T, db *models.DB) {
	t.Helper()
	problems, err := ledger.LedgerCheck(context.Background(), db)
	if err != nil || len(problems) > 0 {
		t.Fatalf("ledger: %v %v", err, problems[:min(len(problems), 5)])
	}
}

// TestPostMany posts more transactions than one SQLite statement holds,
// to accounts some of which do not exist yet, and checks each of them
// against what was posted: every transaction sums to zero, carries its
// own legs, rental, creator and memo, and every balance is the sum of
// its entries.
func TestPostMany(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		const orgs, providers, n = 50, 7, 4_000
		var wallets []int64
		for o := range int64(orgs) {
			wallets = append(wallets, 1+o)
		}
		fund(t, db, 10_000, wallets...)
		now := time.Now().UTC().Truncate(time.Second)
		user := int64(77)
		posts := make([]ledger.Posting, n)
		debits := map[int64]int64{}
		for i := range posts {
			rental := int64(1000 + i)
			org, provider := wallets[i%orgs], int64(5000+i%providers)
			fen, commission := int64(3+i%5), int64(i%2)
			legs := []ledger.Leg{{Kind: ledger.AccWallet, OrgID: org, AmountFen: -fen},
				{Kind: ledger.AccProviderPayable, OrgID: provider, AmountFen: fen - commission}}
			if commission > 0 {
				legs = append(legs, ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: commission})
			}
			posts[i] = ledger.Posting{Legs: legs, Txn: &ledger.LedgerTxn{Kind: "charge", Memo: fmt.Sprintf("rental #%d \"quoted\" \\ {1,2}", rental),
				MemoMsg: locales.M("memo.rental", rental), RentalID: &rental, CreatedBy: &user, CreatedAt: now}}
			debits[org] += fen
		}
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return ledger.PostMany(tx, posts) }); err != nil {
			t.Fatal(err)
		}

		var txns []ledger.LedgerTxn
		if err := db.R.Where("kind = ?", "charge").Order("id").Find(&txns).Error; err != nil {
			t.Fatal(err)
		}
		if len(txns) != n {
			t.Fatalf("%d transactions stored, want %d", len(txns), n)
		}
		type leg struct {
			kind string
			org  int64
			fen  int64
		}
		var entries []struct {
			TxnID     int64
			Kind      string
			OrgID     int64
			AmountFen int64
		}
		if err := db.R.Raw(`SELECT e.txn_id, a.kind, a.org_id, e.amount_fen FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id
			JOIN ledger_txns t ON t.id = e.txn_id WHERE t.kind = 'charge'`).Scan(&entries).Error; err != nil {
			t.Fatal(err)
		}
		legs := map[int64]map[leg]int{}
		sums := map[int64]int64{}
		for _, e := range entries {
			if legs[e.TxnID] == nil {
				legs[e.TxnID] = map[leg]int{}
			}
			legs[e.TxnID][leg{e.Kind, e.OrgID, e.AmountFen}]++
			sums[e.TxnID] += e.AmountFen
		}
		for i, got := range txns {
			p := posts[i]
			if got.ID != p.Txn.ID || *got.RentalID != *p.Txn.RentalID || got.Memo != p.Txn.Memo || *got.CreatedBy != user ||
				got.MemoMsg.JSON() != p.Txn.MemoMsg.JSON() || !got.CreatedAt.Equal(now) {
				t.Fatalf("transaction %d stored as %+v, posted as %+v", i, got, *p.Txn)
			}
			if sums[got.ID] != 0 {
				t.Errorf("transaction %d sums to %d", got.ID, sums[got.ID])
			}
			want := map[leg]int{}
			for _, l := range p.Legs {
				want[leg{l.Kind, l.OrgID, l.AmountFen}]++
			}
			if fmt.Sprint(want) != fmt.Sprint(legs[got.ID]) {
				t.Fatalf("transaction %d has the entries %v, posted %v", got.ID, legs[got.ID], want)
			}
		}
		for _, o := range wallets {
			if bal, err := ledger.AccountBalance(ctx, db, ledger.AccWallet, o); err != nil || bal != 10_000-debits[o] {
				t.Errorf("wallet of %d: %d %v, want %d", o, bal, err, 10_000-debits[o])
			}
		}
		balanced(t, db)
	})
}

// TestPostManyRefuses: a batch that would take a wallet below zero or a
// payable across zero, or holds a once-only or unbalanced transaction,
// posts nothing.
func TestPostManyRefuses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		fund(t, db, 100, 1, 2)
		now := time.Now().UTC()
		charge := func(org, fen int64) ledger.Posting {
			return ledger.Posting{Txn: &ledger.LedgerTxn{Kind: "charge", Memo: "refused", CreatedAt: now},
				Legs: []ledger.Leg{{Kind: ledger.AccWallet, OrgID: org, AmountFen: -fen}, {Kind: ledger.AccPlatformRevenue, AmountFen: fen}}}
		}
		key := "once"
		once := charge(1, 1)
		once.Txn.IdemKey = &key
		unbalanced := charge(1, 1)
		unbalanced.Legs[0].AmountFen = -2
		for name, c := range map[string]struct {
			ps   []ledger.Posting
			want error
		}{
			"overdrawn wallet": {[]ledger.Posting{charge(1, 60), charge(2, 10), charge(1, 41)}, ledger.ErrInsufficientFunds},
			"payable below zero": {[]ledger.Posting{{Txn: &ledger.LedgerTxn{Kind: "charge", Memo: "refused", CreatedAt: now},
				Legs: []ledger.Leg{{Kind: ledger.AccProviderPayable, OrgID: 9, AmountFen: -1}, {Kind: ledger.AccPlatformRevenue, AmountFen: 1}}}},
				ledger.ErrBalanceSign},
			"once-only":  {[]ledger.Posting{charge(2, 1), once}, nil},
			"unbalanced": {[]ledger.Posting{charge(2, 1), unbalanced}, nil},
		} {
			err := db.Tx(ctx, func(tx *gorm.DB) error { return ledger.PostMany(tx, c.ps) })
			if err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", name, err, c.want)
			}
		}
		var n int64
		if err := db.R.Model(&ledger.LedgerTxn{}).Where("memo = ?", "refused").Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%d refused transactions stored (%v)", n, err)
		}
		for _, o := range []int64{1, 2} {
			if bal, _ := ledger.AccountBalance(ctx, db, ledger.AccWallet, o); bal != 100 {
				t.Errorf("wallet of %d holds %d after refusals, want 100", o, bal)
			}
		}
		balanced(t, db)
	})
}

// TestPostingsThatShareAccountsDoNotDeadlock: Post changes balances in
// the order of the accounts' ids, as PostMany locks them, so postings
// that list the same accounts in opposite orders, and batches beside
// them, never wait for each other in a cycle (on PostgreSQL, where they
// run at once; PostgreSQL would break such a cycle by failing one).
func TestPostingsThatShareAccountsDoNotDeadlock(t *testing.T) {
	db := dbtest.Postgres(t)
	ctx := context.Background()
	fund(t, db, 1_000_000, 1, 2)
	legs := []ledger.Leg{{Kind: ledger.AccWallet, OrgID: 1, AmountFen: -2}, {Kind: ledger.AccWallet, OrgID: 2, AmountFen: 1},
		{Kind: ledger.AccPlatformRevenue, AmountFen: 1}}
	reversed := []ledger.Leg{legs[2], legs[1], legs[0]}
	const workers, rounds = 6, 40
	errs := make(chan error, workers*rounds)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				errs <- db.Tx(ctx, func(tx *gorm.DB) error {
					txn := func() *ledger.LedgerTxn {
						return &ledger.LedgerTxn{Kind: "charge", Memo: "shared", CreatedAt: time.Now().UTC()}
					}
					switch w % 3 {
					case 0:
						return ledger.Post(tx, txn(), legs...)
					case 1:
						return ledger.Post(tx, txn(), reversed...)
					}
					return ledger.PostMany(tx, []ledger.Posting{{Txn: txn(), Legs: reversed}, {Txn: txn(), Legs: legs}})
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if bal, _ := ledger.AccountBalance(ctx, db, ledger.AccPlatformRevenue, 0); bal != workers*rounds*4/3 {
		t.Errorf("platform revenue %d, want %d", bal, workers*rounds*4/3)
	}
	balanced(t, db)
}
