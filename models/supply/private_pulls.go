package supply

import (
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/models"
)

// MarkPrivatePull records, in tx, that the node is asked to pull from the
// repository repo (images.RepositoryOf) with a renter's registry
// credentials.
func MarkPrivatePull(tx *gorm.DB, nodeID int64, repo string, now time.Time) error {
	return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "node_id"}, {Name: "reference"}}, DoUpdates: clause.AssignmentColumns([]string{"pulled_at"})}).
		Create(&models.NodePrivatePull{NodeID: nodeID, Reference: repo, PulledAt: now}).Error
}

// PrivatePulled reports, in tx, whether the node ever pulled from the
// repository repo with a renter's registry credentials.
func PrivatePulled(tx *gorm.DB, nodeID int64, repo string) (bool, error) {
	var n int64
	err := tx.Model(&models.NodePrivatePull{}).Where("node_id = ? AND reference = ?", nodeID, repo).Count(&n).Error
	return n > 0, err
}
