package models

import (
	"time"

	"gorm.io/gorm"
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
		return bumpOffersVersion(tx)
	}
	return nil
}
