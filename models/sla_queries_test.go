package models_test

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/models"
)

func TestLedgerTxnIDByKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := models.Leg{Kind: models.AccWallet, OrgID: 7, AmountFen: 100}
		p := models.Leg{Kind: models.AccPromoCredit, AmountFen: -100}
		if _, err := models.LedgerTxnIDByKey(db.R, "sla/r1/2026-01"); !errors.Is(err, gorm.ErrRecordNotFound) {
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
		var want models.LedgerTxn
		if err := db.R.Where("idem_key = ?", key).First(&want).Error; err != nil {
			t.Fatal(err)
		}
		if id, err := models.LedgerTxnIDByKey(db.R, key); err != nil || id != want.ID {
			t.Errorf("by key: %d, %v; want %d", id, err, want.ID)
		}
	})
}
