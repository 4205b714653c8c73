package volumes

import (
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
)

// Attach gives a new rental its volume in tx: an existing one of the
// organisation (volumeID), which must be free and in the offer's
// datacentre (on local storage, on the offer's node), or a new pending
// one of sizeGB.
func Attach(tx *gorm.DB, r *models.Rental, o *models.Offer, volumeID int64, sizeGB int, now time.Time) (*models.Volume, error) {
	if volumeID == 0 {
		size, err := Size(sizeGB, o)
		if err != nil {
			return nil, err
		}
		v, err := New(tx, o, r.OrgID, r.UserID, size, "", r.WorkspaceID, now)
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
