package rentals

import (
	"context"

	"gorm.io/gorm"

	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/volumes"
)

// rentalVolume reads the rental's volume in tx (nil without one).
func rentalVolume(tx *gorm.DB, r *models.Rental) (*models.Volume, error) {
	if r.VolumeID == nil {
		return nil, nil
	}
	v, err := rentalstore.ReadVolume(tx, *r.VolumeID)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// RentalVolume returns the rental's volume (nil without one).
func (s *Service) RentalVolume(ctx context.Context, r *models.Rental) (*models.Volume, error) {
	if r.VolumeID == nil {
		return nil, nil
	}
	return rentalstore.VolumeByID(ctx, s.DB, *r.VolumeID)
}

// Volumes is the volume service on the rental service's database
// (listing, making, billing and deleting volumes).
func (s *Service) Volumes() *volumes.Service {
	return &volumes.Service{DB: s.DB, Hub: s.Hub, KeepDays: s.VolumeKeepDays, BaseURL: s.BaseURL}
}
