package rentals

import (
	"context"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/volumes"
)

// one of sizeGB.
func attachVolume(tx *gorm.DB, r *models.Rental, o *models.Offer, volumeID int64, sizeGB int, now time.Time) (*models.Volume, error) {
	if volumeID == 0 {
		size, err := volumes.Size(sizeGB, o)
		if err != nil {
			return nil, err
		}
		v, err := volumes.New(tx, o, r.OrgID, r.UserID, size, "", r.WorkspaceID, now)
		if err != nil {
			return nil, err
		}
		if err := rentalstore.InsertVolume(tx, v); err != nil {
			return nil, err
		}
		return v, rentalstore.SetRentalVolume(tx, r.ID, v.ID)
	}
	v, err := rentalstore.VolumeForUpdate(tx, volumeID)
	if err != nil || v.OrgID != r.OrgID || v.Status != models.VolumeActive {
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return nil, err
		}
		return nil, apperr.Field("volume_id", "err.volume_unknown")
	}
	if v.DatacenterID != o.DatacenterID {
		return nil, apperr.Field("volume_id", "err.volume_datacenter")
	}
	if !v.Shared() && v.NodeID != nil && *v.NodeID != o.NodeID {
		return nil, apperr.Field("volume_id", "err.volume_node", *v.NodeID)
	}
	if other, err := rentalstore.VolumeRental(tx, v.ID); err != nil || other != 0 {
		if err != nil {
			return nil, err
		}
		return nil, apperr.Field("volume_id", "err.volume_in_use", other)
	}
	if err := rentalstore.SetVolumeDeleteAfter(tx, v.ID, nil); err != nil {
		return nil, err
	}
	if err := rentalstore.SetRentalVolume(tx, r.ID, v.ID); err != nil {
		if ledger.IsUniqueViolation(err) {
			return nil, apperr.Field("volume_id", "err.volume_in_use", 0)
		}
		return nil, err
	}
	// Mounted by another rental, it is no longer the left one's to start with.
	if err := rentalstore.SetVolumeLeftBy(tx, v.ID, nil); err != nil {
		return nil, err
	}
	return &v, nil
}

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
