package supply

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/locales"
	"suanli/models"
)

// RefreshNodeAvailability recomputes, in tx, the available GPUs of the
// offers on one node from its GPUs' states, and bumps the offers version
// when any changed, so the offer list shows a rental or a failure at once.
func RefreshNodeAvailability(tx *gorm.DB, nodeID int64, now time.Time) error {
	res := tx.Exec(`UPDATE offers SET available_gpus = (SELECT COUNT(*) FROM gpus g
			JOIN nodes n ON n.id = g.node_id
			WHERE g.node_id = offers.node_id AND g.gpu_model = offers.gpu_model AND g.state = 'free' AND n.health <> 'silent'),
		updated_at = ?
		WHERE node_id = ? AND available_gpus <> (SELECT COUNT(*) FROM gpus g
			JOIN nodes n ON n.id = g.node_id
			WHERE g.node_id = offers.node_id AND g.gpu_model = offers.gpu_model AND g.state = 'free' AND n.health <> 'silent')`, now, nodeID)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected > 0 {
		return models.OffersChanged(tx, models.OfferScope{Nodes: []int64{nodeID}})
	}
	return nil
}

// EnsureIncident makes sure, in tx, that an incident of the kind is open for
// the node (gpuID 0: the node itself) and returns its id: the open one if
// there is one; else the last one if it closed less than reopenWithin
// before now, opened again (a verdict that flips back and forth is one
// outage, from its first failure to its last recovery, not a row per
// flip); else a new one. msg, when given, is reasons as a message (stored
// on a new incident).
func EnsureIncident(tx *gorm.DB, nodeID, gpuID int64, kind, reasons string, now time.Time, reopenWithin time.Duration, msg ...locales.Msg) (int64, error) {
	var inc models.Incident
	err := tx.Where("node_id = ? AND gpu_id = ? AND kind = ? AND closed_at IS NULL", nodeID, gpuID, kind).First(&inc).Error
	if err == nil {
		return inc.ID, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, err
	}
	if reopenWithin > 0 {
		err := tx.Where("node_id = ? AND gpu_id = ? AND kind = ? AND closed_at >= ?", nodeID, gpuID, kind, now.Add(-reopenWithin)).
			Order("closed_at DESC, id DESC").First(&inc).Error
		if err == nil {
			return inc.ID, tx.Model(&models.Incident{}).Where("id = ?", inc.ID).Update("closed_at", nil).Error
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return 0, err
		}
	}
	inc = models.Incident{NodeID: nodeID, GPUID: gpuID, Kind: kind, Reasons: reasons, OpenedAt: now}
	if len(msg) > 0 {
		inc.ReasonsMsg = msg[0]
	}
	return inc.ID, tx.Create(&inc).Error
}

// CloseIncidents closes, in tx, the node's (GPU's) open incidents of the kind.
func CloseIncidents(tx *gorm.DB, nodeID, gpuID int64, kind string, now time.Time) error {
	return tx.Model(&models.Incident{}).Where("node_id = ? AND gpu_id = ? AND kind = ? AND closed_at IS NULL", nodeID, gpuID, kind).
		Update("closed_at", now).Error
}

// NodeName returns the node's name in tx: "" if it has none, is gone or
// cannot be read (it labels a message, which must not fail for it).
func NodeName(tx *gorm.DB, id int64) string {
	var name string
	if err := tx.Model(&models.Node{}).Where("id = ?", id).Pluck("name", &name).Error; err != nil {
		return ""
	}
	return name
}

// RecentPingURLs returns the ping endpoints of a datacentre's nodes heard
// from since the time given and not silent, most recent heartbeat first
// (at most limit, repeats included).
func RecentPingURLs(ctx context.Context, db *models.DB, datacenterID int64, since time.Time, limit int) ([]string, error) {
	var raw []string
	err := db.R.WithContext(ctx).Model(&models.Node{}).
		Where("datacenter_id = ? AND ping_url <> '' AND health <> ? AND last_heartbeat_at >= ?", datacenterID, models.NodeSilent, since).
		Order("last_heartbeat_at DESC, id").Limit(limit).Pluck("ping_url", &raw).Error
	return raw, err
}
