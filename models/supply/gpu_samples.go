package supply

import (
	"context"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/models"
)

// The queries of rented GPUs' telemetry history (table gpu_samples).

// InsertGPUSample adds a telemetry sample of a GPU, in tx.
func InsertGPUSample(tx *gorm.DB, s *models.GPUSample) error {
	return tx.Create(s).Error
}

// NotifyGPUsSampled tells the change feed that the GPUs ids have new
// samples (topic gpu, migration 00036), once the transaction that
// inserted them has committed. On SQLite a trigger on gpu_samples did so
// in that transaction (a change_log row each), and this does nothing.
// On PostgreSQL a NOTIFY inside the heartbeat's transaction would make
// its commit hold the server-wide notification lock through its WAL
// flush, so every sampling heartbeat would commit one after another;
// here the notifications go in a transaction of their own whose commit
// does not wait for its flush (suanli_notify_gpus, migration 00036), so
// the lock is held only for the commit itself.
func NotifyGPUsSampled(ctx context.Context, db *models.DB, ids []int64) error {
	if db.Dialect != "postgres" || len(ids) == 0 {
		return nil
	}
	lit := make([]string, len(ids))
	for i, id := range ids {
		lit[i] = strconv.FormatInt(id, 10)
	}
	// An array literal: gorm would spread a slice into a list.
	return db.W.WithContext(ctx).Exec("SELECT suanli_notify_gpus(?::bigint[])", "{"+strings.Join(lit, ",")+"}").Error
}

// PruneGPUSamples deletes the samples taken before before and returns
// how many.
func PruneGPUSamples(ctx context.Context, db *models.DB, before time.Time) (int64, error) {
	res := db.W.WithContext(ctx).Where("at < ?", before).Delete(&models.GPUSample{})
	return res.RowsAffected, res.Error
}

// RentalGPUSamples returns the samples of the rental's GPUs gpuIDs taken
// since since while the rental held them, by GPU and then in time order.
func RentalGPUSamples(ctx context.Context, db *models.DB, rentalID int64, gpuIDs []int64, since time.Time) ([]models.GPUSample, error) {
	var out []models.GPUSample
	if len(gpuIDs) == 0 {
		return out, nil
	}
	err := db.R.WithContext(ctx).Raw(`SELECT s.* FROM gpu_samples s JOIN rental_gpus rg ON rg.gpu_id = s.gpu_id
		WHERE rg.rental_id = ? AND s.gpu_id IN ? AND s.at >= ? AND s.at >= rg.attached_at AND (rg.released_at IS NULL OR s.at <= rg.released_at)
		ORDER BY s.gpu_id, s.at`, rentalID, gpuIDs, since).Scan(&out).Error
	return out, err
}
