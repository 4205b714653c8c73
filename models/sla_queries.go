package models

import "gorm.io/gorm"

// RentalByIDTx reads a rental in tx, without locking it (see
// RentalForUpdate); gorm.ErrRecordNotFound when there is none.
func RentalByIDTx(tx *gorm.DB, id int64) (Rental, error) {
	var r Rental
	err := tx.First(&r, id).Error
	return r, err
}

// LedgerTxnIDByKey returns the id of the ledger transaction posted with
// the once-only key, in tx; gorm.ErrRecordNotFound when none was.
func LedgerTxnIDByKey(tx *gorm.DB, key string) (int64, error) {
	var t LedgerTxn
	err := tx.Where("idem_key = ?", key).First(&t).Error
	return t.ID, err
}
