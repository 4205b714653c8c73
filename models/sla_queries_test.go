package models_test

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
)

func TestLedgerTxnIDByKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := ledger.Leg{Kind: ledger.AccWallet, OrgID: 7, AmountFen: 100}
		p := ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -100}
		if _, err := rentalstore.LedgerTxnIDByKey(db.R, "sla/r1/2026-01"); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Fatalf("before posting: %v", err)
		}
		key := "sla/r1/2026-01"
		if err := post(db, &key, w, p); err != nil {
			t.Fatal(err)
		}
		other := "sla/r1/2026-02"
		if err := post(db, &other, w, p); err != nil {
			t.Fatal(err)
		}
		var want ledger.LedgerTxn
		if err := db.R.Where("idem_key = ?", key).First(&want).Error; err != nil {
			t.Fatal(err)
		}
		if id, err := rentalstore.LedgerTxnIDByKey(db.R, key); err != nil || id != want.ID {
			t.Errorf("by key: %d, %v; want %d", id, err, want.ID)
		}
	})
}
