package supply

import (
	"gorm.io/gorm"

	"suanli/models"
)

// MoveGPUIndex sets the index a node's GPU is enumerated at, in tx. A GPU
// is identified by its UUID; its index shifts when a GPU before it stops
// enumerating. Indexes are unique per node, so a caller moving several
// GPUs first parks each on a free index (see ParkedGPUIndex).
func MoveGPUIndex(tx *gorm.DB, gpuID int64, idx int) error {
	return tx.Model(&models.GPU{}).Where("id = ?", gpuID).Update("idx", idx).Error
}

// ParkedGPUIndex is an index no GPU is enumerated at and no other GPU is
// parked on: where a GPU waits while its node's indexes are reshuffled.
func ParkedGPUIndex(gpuID int64) int { return -1 - int(gpuID) }

// NodeGPUByUUID returns the GPU of a node with the UUID, in tx
// (gorm.ErrRecordNotFound when the node has none).
func NodeGPUByUUID(tx *gorm.DB, nodeID int64, uuid string) (models.GPU, error) {
	var g models.GPU
	err := tx.Where("node_id = ? AND uuid = ?", nodeID, uuid).First(&g).Error
	return g, err
}
