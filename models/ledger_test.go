package models_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
)

func post(db *models.DB, key *string, legs ...ledger.Leg) error {
	return db.Tx(context.Background(), func(tx *gorm.DB) error {
		return ledger.Post(tx, &ledger.LedgerTxn{Kind: "test", IdemKey: key, CreatedAt: time.Now().UTC()}, legs...)
	})
}

func TestPostRefusesWhatDoesNotBalance(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		w := func(n int64) ledger.Leg { return ledger.Leg{Kind: ledger.AccWallet, OrgID: 7, AmountFen: n} }
		p := func(n int64) ledger.Leg { return ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: n} }
		if err := post(db, nil, w(100), p(-99)); err == nil {
			t.Error("unbalanced transaction posted")
		}
		if err := post(db, nil, w(100)); err == nil {
			t.Error("one-legged transaction posted")
		}
		if err := post(db, nil, w(0), p(0)); err == nil {
			t.Error("zero legs posted")
		}
		if err := post(db, nil, w(100), p(-100)); err != nil {
			t.Fatal(err)
		}
		// A wallet never goes below zero; the failed posting leaves nothing.
		if err := post(db, nil, w(-101), p(101)); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Errorf("overdraw: %v", err)
		}
		key := "once"
		if err := post(db, &key, w(50), p(-50)); err != nil {
			t.Fatal(err)
		}
		if err := post(db, &key, w(50), p(-50)); !errors.Is(err, ledger.ErrDuplicate) {
			t.Errorf("second once-only posting: %v", err)
		}
		if bal, _ := ledger.WalletBalance(ctx, db, 7); bal != 150 {
			t.Errorf("balance %d, want 150", bal)
		}
		if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
			t.Errorf("ledger check: %v %v", problems, err)
		}
	})
}

// 100 postings at once against one wallet, credits and debits mixed: the
// balance is the sum, no debit overdraws, every transaction balances and
// the cached balance equals the sum of the entries.
func TestConcurrentPostings(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := post(db, nil, ledger.Leg{Kind: ledger.AccWallet, OrgID: 1, AmountFen: 1000}, ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -1000}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var want int64 = 1000
		errs := 0
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				amt := int64(i%7 + 1)
				if i%3 == 0 {
					amt = -amt // a charge
				}
				err := post(db, nil, ledger.Leg{Kind: ledger.AccWallet, OrgID: 1, AmountFen: amt}, ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: -amt})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs++
					t.Errorf("posting %d: %v", i, err)
					return
				}
				want += amt
			}(i)
		}
		wg.Wait()
		bal, err := ledger.WalletBalance(ctx, db, 1)
		if err != nil || bal != want || errs != 0 {
			t.Errorf("balance %d (%v), want %d; %d errors", bal, err, want, errs)
		}
		var n int64
		db.R.Model(&ledger.LedgerTxn{}).Count(&n)
		if n != 101 {
			t.Errorf("%d transactions, want 101", n)
		}
		if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
			t.Errorf("ledger check: %v %v", problems, err)
		}
	})
}

// Each account kind keeps its sign: Post refuses a leg that would take a
// provider's payable, its unearned term money or a wallet below zero, or
// promotional credit or a receivable above it, and changes nothing; the
// platform's revenue and the clearing accounts move both ways. The ledger
// check reports a balance outside its kind's sign however it got there.
func TestEveryAccountKindKeepsItsSign(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		leg := func(kind string, org, n int64) ledger.Leg { return ledger.Leg{Kind: kind, OrgID: org, AmountFen: n} }
		rev := func(n int64) ledger.Leg { return leg(ledger.AccPlatformRevenue, 0, n) }
		for _, c := range []struct {
			name string
			legs []ledger.Leg
		}{
			{"payable below zero", []ledger.Leg{leg(ledger.AccProviderPayable, 3, -1), rev(1)}},
			{"unearned below zero", []ledger.Leg{leg(ledger.AccProviderUnearned, 3, -1), rev(1)}},
			{"receivable above zero", []ledger.Leg{leg(ledger.AccProviderReceivable, 3, 1), rev(-1)}},
			{"promotional credit above zero", []ledger.Leg{leg(ledger.AccPromoCredit, 0, 1), rev(-1)}},
		} {
			if err := post(db, nil, c.legs...); !errors.Is(err, ledger.ErrBalanceSign) {
				t.Errorf("%s: %v, want ErrBalanceSign", c.name, err)
			}
		}
		var n int64
		db.R.Model(&ledger.LedgerEntry{}).Count(&n)
		if n != 0 {
			t.Fatalf("refused postings left %d entries", n)
		}
		// Within their signs the same accounts move; revenue goes negative.
		if err := post(db, nil, leg(ledger.AccProviderReceivable, 3, -500), rev(-100), leg(ledger.AccProviderPayable, 3, 600)); err != nil {
			t.Fatal(err)
		}
		if err := post(db, nil, leg(ledger.AccProviderPayable, 3, -600), leg(ledger.AccPaymentClearing, 0, 600)); err != nil {
			t.Fatal(err)
		}
		if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
			t.Fatalf("ledger check: %v %v", problems, err)
		}
		// A balance written around Post (and its entries, so they agree).
		if err := post(db, nil, leg(ledger.AccPromoCredit, 0, -40), leg(ledger.AccWallet, 9, 40)); err != nil {
			t.Fatal(err)
		}
		db.W.Exec("UPDATE ledger_accounts SET balance_fen = 40 WHERE kind = ?", ledger.AccPromoCredit)
		db.W.Exec("UPDATE ledger_entries SET amount_fen = 40 WHERE amount_fen = -40")
		problems, err := ledger.LedgerCheck(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p, "promo_credit") && strings.Contains(p, "outside its kind's sign")
		}
		if !found {
			t.Errorf("the check did not report a positive promotional credit: %v", problems)
		}
	})
}
