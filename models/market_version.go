package models

import (
	"context"

	"gorm.io/gorm"
)

// OffersVersion returns the counter that changes whenever anything the
// offer list shows changes; the in-memory offer index compares it to decide
// whether to reload.
func (db *DB) OffersVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.R.WithContext(ctx).Raw(`SELECT version FROM market_versions WHERE name = 'offers'`).Scan(&v).Error
	return v, err
}

// bumpOffersVersion must run inside the transaction that changes offers.
func bumpOffersVersion(tx *gorm.DB) error {
	return tx.Exec(`UPDATE market_versions SET version = version + 1 WHERE name = 'offers'`).Error
}

// BumpOffersVersion moves the offers version in tx, so that the in-memory
// offer index reloads: for changes to what offers show that do not touch
// the offers table (a node's latest benchmark report, say).
func BumpOffersVersion(tx *gorm.DB) error { return bumpOffersVersion(tx) }
