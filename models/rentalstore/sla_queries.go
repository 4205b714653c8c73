package rentalstore

import (
	"gorm.io/gorm"

	"suanli/models/ledger"
)

// LedgerTxnIDByKey returns the id of the ledger transaction posted with
// the once-only key, in tx; gorm.ErrRecordNotFound when none was.
func LedgerTxnIDByKey(tx *gorm.DB, key string) (int64, error) {
	var t ledger.LedgerTxn
	err := tx.Where("idem_key = ?", key).First(&t).Error
	return t.ID, err
}
