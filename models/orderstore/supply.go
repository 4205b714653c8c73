package orderstore

import (
	"context"

	"suanli/models"
)

// FreeOffer is a listed offer with free GPUs, as the standing orders'
// pass matches it: only what its filters test.
type FreeOffer struct {
	ID           int64
	NodeID       int64
	DatacenterID int64
	GPUModel     string `gorm:"column:gpu_model"`
	MaxGPUs      int    `gorm:"column:max_gpus"`
	// AvailableGPUs are its node's free GPUs of its model (shared by the
	// node's offers of that model).
	AvailableGPUs                   int    `gorm:"column:available_gpus"`
	DiskGB                          int    `gorm:"column:disk_gb"`
	PricePerGPUHourFen              int64  `gorm:"column:price_per_gpu_hour_fen"`
	StudentDiscountPct              int    `gorm:"column:student_discount_pct"`
	InterruptibleFloorPerGPUHourFen *int64 `gorm:"column:interruptible_floor_per_gpu_hour_fen"`
	SLATiers                        string `gorm:"column:sla_tiers"`
	City                            string
}

// FreeOffers are the offers the public list shows (listed, on an active
// node, of an approved provider) of the GPU models given that have free
// GPUs, in one query.
func FreeOffers(ctx context.Context, db *models.DB, gpuModels []string) ([]FreeOffer, error) {
	var out []FreeOffer
	if len(gpuModels) == 0 {
		return out, nil
	}
	err := db.R.WithContext(ctx).Raw(`SELECT o.id, o.node_id, o.datacenter_id, o.gpu_model, o.max_gpus, o.available_gpus, o.disk_gb,
			o.price_per_gpu_hour_fen, o.student_discount_pct, o.interruptible_floor_per_gpu_hour_fen, o.sla_tiers, d.city
		FROM offers o JOIN datacenters d ON d.id = o.datacenter_id
		WHERE o.status = ? AND o.awaiting_node = ? AND o.available_gpus > 0 AND o.gpu_model IN ?
			AND o.node_id IN (SELECT id FROM nodes WHERE status = 'active')
			AND o.provider_id IN (SELECT p.id FROM providers p LEFT JOIN orgs g ON g.id = p.org_id
				WHERE p.org_id IS NULL OR (g.status = 'approved' AND g.suspended_at IS NULL))
		ORDER BY o.id`, models.OfferListed, false, gpuModels).Scan(&out).Error
	return out, err
}

// Latencies are the published round-trip times from the cities given to
// the datacentres given.
func Latencies(ctx context.Context, db *models.DB, datacenterIDs []int64, fromCities []string) ([]models.DatacenterLatency, error) {
	var out []models.DatacenterLatency
	if len(datacenterIDs) == 0 || len(fromCities) == 0 {
		return out, nil
	}
	err := db.R.WithContext(ctx).Where("datacenter_id IN ? AND from_city IN ?", datacenterIDs, fromCities).Find(&out).Error
	return out, err
}
