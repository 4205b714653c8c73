package rentalstore

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"suanli/models"
)

// InsertRegistryAuth stores a rental's sealed registry credential in tx.
func InsertRegistryAuth(tx *gorm.DB, a *models.RentalRegistryAuth) error { return tx.Create(a).Error }

// RegistryAuthOf reads, in tx, the rental's registry credential; found
// is false when it has none.
func RegistryAuthOf(tx *gorm.DB, rentalID int64) (a models.RentalRegistryAuth, found bool, err error) {
	err = tx.Where("rental_id = ?", rentalID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return a, false, nil
	}
	return a, err == nil, err
}

// RegistryUsername returns the username of the rental's registry
// credential ("" when it has none): all that is ever shown of it.
func RegistryUsername(ctx context.Context, db *models.DB, rentalID int64) (string, error) {
	var names []string
	err := db.R.WithContext(ctx).Model(&models.RentalRegistryAuth{}).Where("rental_id = ?", rentalID).Pluck("username", &names).Error
	if err != nil || len(names) == 0 {
		return "", err
	}
	return names[0], nil
}

// DeleteRegistryAuth forgets, in tx, the rental's registry credential.
func DeleteRegistryAuth(tx *gorm.DB, rentalID int64) error {
	return tx.Where("rental_id = ?", rentalID).Delete(&models.RentalRegistryAuth{}).Error
}
