package migrations_test

import (
	"context"
	"path/filepath"
	"testing"

	"suanli/dbtest"
	"suanli/migrations"
	"suanli/models"
	"suanli/models/ledger"
)

// A database from before 00009 may hold a provider payable below zero (a
// refund after a payout). Upgrading moves it to the provider's receivable
// in a balanced transaction, so the ledger check is clean, the next payout
// offsets it, and the database refuses a negative payable from then on.
func TestUpgradeMovesANegativePayableToTheReceivable(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			loc := filepath.Join(t.TempDir(), "old.db")
			if dialect == "postgres" {
				loc = dbtest.PostgresURL(t)
			}
			db, err := models.Open(ctx, dialect, loc)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := migrations.UpTo(ctx, dialect, db.SQL, 10); err != nil {
				t.Fatal(err)
			}
			// Provider 7: refunded ¥88 after its ¥88 was paid out. Provider 9
			// already owed ¥1 and is ¥3 below zero. Provider 8 is fine.
			now := db.Now().UTC()
			accounts := []ledger.LedgerAccount{
				{Kind: ledger.AccProviderPayable, OrgID: 7, BalanceFen: -8800},
				{Kind: ledger.AccProviderPayable, OrgID: 8, BalanceFen: 500},
				{Kind: ledger.AccProviderPayable, OrgID: 9, BalanceFen: -300},
				{Kind: ledger.AccProviderReceivable, OrgID: 9, BalanceFen: -100},
				{Kind: ledger.AccPlatformRevenue, BalanceFen: 8700},
			}
			for i := range accounts {
				accounts[i].CreatedAt = now
			}
			if err := db.W.Create(&accounts).Error; err != nil {
				t.Fatal(err)
			}
			txn := ledger.LedgerTxn{Kind: "rental_refund", CreatedAt: now}
			if err := db.W.Create(&txn).Error; err != nil {
				t.Fatal(err)
			}
			for _, a := range accounts {
				if err := db.W.Create(&ledger.LedgerEntry{TxnID: txn.ID, AccountID: a.ID, AmountFen: a.BalanceFen, CreatedAt: now}).Error; err != nil {
					t.Fatal(err)
				}
			}
			if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) == 0 {
				t.Fatalf("before the upgrade the check finds nothing: %v %v", problems, err)
			}

			if _, err := migrations.Up(ctx, dialect, db.SQL); err != nil {
				t.Fatal(err)
			}
			if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) != 0 {
				t.Fatalf("after the upgrade: %v %v", problems, err)
			}
			want := map[[2]any]int64{
				{ledger.AccProviderPayable, int64(7)}: 0, {ledger.AccProviderReceivable, int64(7)}: -8800,
				{ledger.AccProviderPayable, int64(8)}: 500,
				{ledger.AccProviderPayable, int64(9)}: 0, {ledger.AccProviderReceivable, int64(9)}: -400,
			}
			for k, fen := range want {
				var a ledger.LedgerAccount
				if err := db.W.Where("kind = ? AND org_id = ?", k[0], k[1]).First(&a).Error; err != nil {
					t.Fatalf("%v: %v", k, err)
				}
				if a.BalanceFen != fen {
					t.Errorf("%v: %d, want %d", k, a.BalanceFen, fen)
				}
			}
			var n int64
			db.W.Model(&ledger.LedgerAccount{}).Where("kind = ? AND org_id = ?", ledger.AccProviderReceivable, 8).Count(&n)
			if n != 0 {
				t.Errorf("a provider that owed nothing got a receivable")
			}
			var moved []ledger.LedgerTxn
			db.W.Where("kind = ?", "owed_moved").Order("id").Find(&moved)
			if len(moved) != 2 || moved[0].MemoMsg.Key != "memo.owed_moved" {
				t.Errorf("moved: %+v", moved)
			}
			if err := db.W.Exec("UPDATE ledger_accounts SET balance_fen = -1 WHERE id = ?", accounts[1].ID).Error; err == nil {
				t.Error("the database took a payable below zero")
			}
		})
	}
}
