package rentalstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/launchstore"
)

// InsertVolume creates a volume in tx.
func InsertVolume(tx *gorm.DB, v *models.Volume) error { return tx.Create(v).Error }

// VolumeForUpdate reads a volume in tx, locked against concurrent
// changes; a missing volume is ENOTFOUND.
func VolumeForUpdate(tx *gorm.DB, id int64) (models.Volume, error) {
	var v models.Volume
	err := models.LockRow(tx).First(&v, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return v, apperr.NotFound("volume")
	}
	return v, err
}

// ReadVolume reads a volume in tx without locking it; a missing one is
// ENOTFOUND.
func ReadVolume(tx *gorm.DB, id int64) (models.Volume, error) {
	var v models.Volume
	err := tx.First(&v, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return v, apperr.NotFound("volume")
	}
	return v, err
}

// VolumeByID returns a volume; a missing one is ENOTFOUND.
func VolumeByID(ctx context.Context, db *models.DB, id int64) (*models.Volume, error) {
	var v models.Volume
	err := db.R.WithContext(ctx).First(&v, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("volume")
	}
	return &v, err
}

// VolumesByIDs returns the volumes with the ids, by id.
func VolumesByIDs(ctx context.Context, db *models.DB, ids []int64) (map[int64]*models.Volume, error) {
	out := map[int64]*models.Volume{}
	if len(ids) == 0 {
		return out, nil
	}
	var vs []models.Volume
	if err := db.R.WithContext(ctx).Where("id IN ?", ids).Find(&vs).Error; err != nil {
		return nil, err
	}
	for i := range vs {
		out[vs[i].ID] = &vs[i]
	}
	return out, nil
}

// OrgVolumes lists an organisation's volumes that are not deleted,
// newest first.
func OrgVolumes(ctx context.Context, db *models.DB, orgID int64) ([]models.Volume, error) {
	var vs []models.Volume
	err := db.R.WithContext(ctx).Where("org_id = ? AND status <> ?", orgID, models.VolumeDeleted).Order("id DESC").Find(&vs).Error
	return vs, err
}

// VolumeRental returns, in tx, the id of the rental the volume is
// attached to (not released, not failed), or 0.
func VolumeRental(tx *gorm.DB, volumeID int64) (int64, error) {
	var ids []int64
	err := tx.Model(&models.Rental{}).Where("volume_id = ? AND released_at IS NULL AND status <> ?", volumeID, models.RentalFailed).
		Limit(1).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// ActivateVolume starts billing a pending volume at at, in tx, and
// records the node it now lives on.
func ActivateVolume(tx *gorm.DB, id, nodeID int64, at time.Time) error {
	return tx.Model(&models.Volume{}).Where("id = ? AND status = ?", id, models.VolumePending).
		Updates(map[string]any{"status": models.VolumeActive, "billed_until": at, "node_id": nodeID}).Error
}

// SetVolumeNode records in tx the node a volume was last mounted on.
func SetVolumeNode(tx *gorm.DB, id, nodeID int64) error {
	return tx.Model(&models.Volume{}).Where("id = ?", id).Update("node_id", nodeID).Error
}

// SetVolumeDeleteAfter sets (or, with nil, clears) in tx when a volume
// whose rental is stopped is deleted, and resets its reminders.
func SetVolumeDeleteAfter(tx *gorm.DB, id int64, at *time.Time) error {
	return tx.Model(&models.Volume{}).Where("id = ?", id).Updates(map[string]any{"delete_after": at, "reminded_days": 0}).Error
}

// MarkVolumeDeleted marks a volume deleted at now with the reason, in
// tx, and reports whether this call did (a volume is deleted once).
func MarkVolumeDeleted(tx *gorm.DB, id int64, reason string, now time.Time) (bool, error) {
	res := tx.Model(&models.Volume{}).Where("id = ? AND status <> ?", id, models.VolumeDeleted).
		Updates(map[string]any{"status": models.VolumeDeleted, "deleted_at": now, "delete_reason": reason, "delete_after": nil})
	return res.RowsAffected == 1, res.Error
}

// ActiveVolumes returns, in tx, up to n active volumes with ids above
// afterID, by id: a storage meter batch.
func ActiveVolumes(tx *gorm.DB, afterID int64, n int) ([]models.Volume, error) {
	var vs []models.Volume
	err := tx.Where("status = ? AND id > ?", models.VolumeActive, afterID).Order("id").Limit(n).Find(&vs).Error
	return vs, err
}

// ClaimVolumeInterval moves a volume's billed-until second from prev to
// to in tx, adding fen and setting the carry, only if no other pass moved
// it first; it reports whether this one did.
func ClaimVolumeInterval(tx *gorm.DB, id int64, prev, to time.Time, fen, carry int64) (bool, error) {
	res := tx.Model(&models.Volume{}).Where("id = ? AND status = ? AND billed_until = ?", id, models.VolumeActive, prev).
		Updates(map[string]any{"billed_until": to, "carry_num": carry, "billed_fen": gorm.Expr("billed_fen + ?", fen)})
	return res.RowsAffected == 1, res.Error
}

// VolumesDueForDeletion lists the volumes whose delete_after has passed.
func VolumesDueForDeletion(ctx context.Context, db *models.DB, now time.Time) ([]models.Volume, error) {
	var vs []models.Volume
	err := db.R.WithContext(ctx).Where("status <> ? AND delete_after IS NOT NULL AND delete_after <= ?", models.VolumeDeleted, now).
		Order("id").Find(&vs).Error
	return vs, err
}

// VolumesToRemind lists the volumes to be deleted within days of now
// whose owners were not yet mailed that close to it.
func VolumesToRemind(ctx context.Context, db *models.DB, now time.Time, days int) ([]models.Volume, error) {
	var vs []models.Volume
	err := db.R.WithContext(ctx).Where("status = ? AND delete_after IS NOT NULL AND delete_after > ? AND delete_after <= ? AND (reminded_days = 0 OR reminded_days > ?)",
		models.VolumeActive, now, now.Add(time.Duration(days)*24*time.Hour), days).Order("id").Find(&vs).Error
	return vs, err
}

// MarkVolumeReminded records in tx that the owner was mailed days before
// deletion, once: it reports whether this call did.
func MarkVolumeReminded(tx *gorm.DB, id int64, days int) (bool, error) {
	res := tx.Model(&models.Volume{}).Where("id = ? AND (reminded_days = 0 OR reminded_days > ?)", id, days).Update("reminded_days", days)
	return res.RowsAffected == 1, res.Error
}

// SetRentalVolume attaches a volume to a rental in tx (the partial
// unique index refuses a volume already attached elsewhere).
func SetRentalVolume(tx *gorm.DB, rentalID, volumeID int64) error {
	return tx.Model(&models.Rental{}).Where("id = ?", rentalID).Update("volume_id", volumeID).Error
}

// ReleaseRental marks a stopped rental released in tx, forgetting its
// launch secrets (ForgetLaunchSecrets).
func ReleaseRental(tx *gorm.DB, id int64, now time.Time) error {
	if err := tx.Model(&models.Rental{}).Where("id = ? AND released_at IS NULL", id).Updates(map[string]any{"released_at": now, "updated_at": now}).Error; err != nil {
		return err
	}
	return ForgetLaunchSecrets(tx, id)
}

// ForgetLaunchSecrets forgets, in tx, what only a launch of the rental's
// container needs: its registry credential, its environment and its
// on-start script. Called where a rental can never launch again: its
// release, its failed provisioning, its volume deleted after the days a
// stopped rental keeps it. Its name and labels stay.
func ForgetLaunchSecrets(tx *gorm.DB, rentalID int64) error {
	if err := DeleteRegistryAuth(tx, rentalID); err != nil {
		return err
	}
	return launchstore.Forget(tx, rentalID)
}

// ActiveNodeOfDatacenter returns, in tx, an active node of the
// datacentre whose agent is healthy, preferring prefer: where a task on a
// shared volume can run. 0 when none.
func ActiveNodeOfDatacenter(tx *gorm.DB, datacenterID, prefer int64) (int64, error) {
	var ids []int64
	err := tx.Raw(`SELECT id FROM nodes WHERE datacenter_id = ? AND status = ? AND health = ?
		ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END, id LIMIT 1`, datacenterID, models.NodeActive, models.NodeHealthy, prefer).Scan(&ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// OfferStorage returns, in tx, the storage price of an offer (fen per
// GB-month) and the storage kind of its datacentre.
func OfferStorage(tx *gorm.DB, offerID int64) (priceFen int64, storage models.Storage, err error) {
	var row struct {
		Price   int64
		Storage string
	}
	err = tx.Raw(`SELECT o.storage_price_per_gb_month_fen AS price, d.storage AS storage
		FROM offers o JOIN datacenters d ON d.id = o.datacenter_id WHERE o.id = ?`, offerID).Scan(&row).Error
	return row.Price, models.Storage(row.Storage), err
}

// StartNodes returns, in tx, the nodes a stopped rental of the offer
// with a shared volume may start on: active and healthy, of the offer's
// provider, datacentre and GPU model, never one its launch excluded
// (rental_excluded_nodes); the offer's own node first.
func StartNodes(tx *gorm.DB, o *models.Offer, rentalID int64) ([]int64, error) {
	var ids []int64
	err := tx.Raw(`SELECT n.id FROM nodes n WHERE n.provider_id = ? AND n.datacenter_id = ? AND n.gpu_model = ?
		AND n.health = ? AND n.status = ?
		AND n.id NOT IN (SELECT node_id FROM rental_excluded_nodes WHERE rental_id = ?)
		ORDER BY CASE WHEN n.id = ? THEN 0 ELSE 1 END, n.id`, o.ProviderID, o.DatacenterID, o.GPUModel, models.NodeHealthy, models.NodeActive, rentalID, o.NodeID).
		Scan(&ids).Error
	return ids, err
}

// AttachedRentals returns, for each of the volumes attached to a rental
// (not released, not failed), that rental's id.
func AttachedRentals(ctx context.Context, db *models.DB, volumeIDs []int64) (map[int64]int64, error) {
	out := map[int64]int64{}
	if len(volumeIDs) == 0 {
		return out, nil
	}
	var rows []struct{ ID, VolumeID int64 }
	err := db.R.WithContext(ctx).Model(&models.Rental{}).Select("id, volume_id").
		Where("volume_id IN ? AND released_at IS NULL AND status <> ?", volumeIDs, models.RentalFailed).Scan(&rows).Error
	for _, r := range rows {
		out[r.VolumeID] = r.ID
	}
	return out, err
}

// SetVolumeLeftBy records in tx that the rental moved to another node
// without the local volume's files (nil: it mounts the volume again).
func SetVolumeLeftBy(tx *gorm.DB, volumeID int64, rentalID *int64) error {
	return tx.Model(&models.Volume{}).Where("id = ?", volumeID).Update("left_by_rental_id", rentalID).Error
}

// LeftVolume returns the newest active volume the rental left behind on
// another node (nil when none).
func LeftVolume(ctx context.Context, db *models.DB, rentalID int64) (*models.Volume, error) {
	return LeftVolumeTx(db.R.WithContext(ctx), rentalID)
}

// LeftVolumeTx is LeftVolume in tx.
func LeftVolumeTx(tx *gorm.DB, rentalID int64) (*models.Volume, error) {
	var vs []models.Volume
	err := tx.Where("left_by_rental_id = ? AND status = ?", rentalID, models.VolumeActive).Order("id DESC").Limit(1).Find(&vs).Error
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	return &vs[0], nil
}

// NodeUp reports, in tx, whether a node is active and its agent healthy
// (a container can start there now).
func NodeUp(tx *gorm.DB, nodeID int64) (bool, error) {
	var n int64
	err := tx.Model(&models.Node{}).Where("id = ? AND health = ? AND status = ?", nodeID, models.NodeHealthy, models.NodeActive).Count(&n).Error
	return n > 0, err
}
