package rentalstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// InsertPortShare stores a new share link.
func InsertPortShare(ctx context.Context, db *models.DB, s *models.PortShare) error {
	return db.W.WithContext(ctx).Create(s).Error
}

// PortShareByHash finds a share link by its token's hash (ENOTFOUND if
// none).
func PortShareByHash(ctx context.Context, db *models.DB, hash string) (models.PortShare, error) {
	var s models.PortShare
	err := db.R.WithContext(ctx).Where("token_hash = ?", hash).Take(&s).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return s, apperr.NotFound("share link")
	}
	return s, err
}

// LivePortShares are a rental's share links that still open their port
// at now, newest first.
func LivePortShares(ctx context.Context, db *models.DB, rentalID int64, now time.Time) ([]models.PortShare, error) {
	var out []models.PortShare
	err := db.R.WithContext(ctx).Where("rental_id = ? AND revoked_at IS NULL AND expires_at > ?", rentalID, now).
		Order("id DESC").Find(&out).Error
	return out, err
}

// RevokePortShare revokes a rental's share link; found is false when the
// rental has no such link that is not revoked already.
func RevokePortShare(ctx context.Context, db *models.DB, rentalID, shareID int64, now time.Time) (found bool, err error) {
	res := db.W.WithContext(ctx).Model(&models.PortShare{}).
		Where("id = ? AND rental_id = ? AND revoked_at IS NULL", shareID, rentalID).Update("revoked_at", now)
	return res.RowsAffected == 1, res.Error
}

// RevokeRentalPortShares revokes every share link of a rental (it ended).
func RevokeRentalPortShares(tx *gorm.DB, rentalID int64, now time.Time) error {
	return tx.Model(&models.PortShare{}).Where("rental_id = ? AND revoked_at IS NULL", rentalID).
		Update("revoked_at", now).Error
}
