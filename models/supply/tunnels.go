package supply

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/models"
)

// SetTunnelHolder records that the replica at url holds node's tunnel
// from now (replacing whichever held it before: the agent dials again
// after losing its connection, and its newest tunnel is the live one).
func SetTunnelHolder(ctx context.Context, db *models.DB, nodeID int64, url string, now time.Time) error {
	return db.W.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "node_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"replica_url", "connected_at"}),
	}).Create(&models.TunnelHolder{NodeID: nodeID, ReplicaURL: url, ConnectedAt: now}).Error
}

// ClearTunnelHolder forgets that the replica at url holds node's tunnel,
// unless a newer connection (to any replica) recorded itself after since.
func ClearTunnelHolder(ctx context.Context, db *models.DB, nodeID int64, url string, since time.Time) error {
	return db.W.WithContext(ctx).Where("node_id = ? AND replica_url = ? AND connected_at <= ?", nodeID, url, since).
		Delete(&models.TunnelHolder{}).Error
}

// TunnelHolderOf is the URL of the replica holding node's tunnel; found
// is false when none is recorded.
func TunnelHolderOf(ctx context.Context, db *models.DB, nodeID int64) (url string, found bool, err error) {
	var h models.TunnelHolder
	err = db.R.WithContext(ctx).Where("node_id = ?", nodeID).Take(&h).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", false, nil
	}
	return h.ReplicaURL, err == nil, err
}

// ClearTunnelHoldersOf forgets every tunnel the replica at url held (at
// its start: a replica that died held them in memory only).
func ClearTunnelHoldersOf(ctx context.Context, db *models.DB, url string) error {
	return db.W.WithContext(ctx).Where("replica_url = ?", url).Delete(&models.TunnelHolder{}).Error
}
