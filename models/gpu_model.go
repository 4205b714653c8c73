package models

import (
	"context"

	"gorm.io/gorm/clause"

	"suanli/catalog"
)

// SyncCatalog makes the gpu_models table equal to the catalogue compiled
// into the binary (insert or update; a model is never deleted because
// offers refer to it). Every database has the catalogue, demo or not.
func (db *DB) SyncCatalog(ctx context.Context) error {
	var recs []GPUModelRecord
	for _, m := range catalog.GPUModels() {
		recs = append(recs, GPUModelRecord{
			Slug: m.Slug, Name: m.Name, Arch: m.Arch, FormFactor: m.FormFactor,
			VRAMGB: m.VRAMGB, MemBWGBps: m.MemBWGBps,
			BF16TFLOPS: m.BF16TFLOPS, FP16TFLOPS: m.FP16TFLOPS, FP32TFLOPS: m.FP32TFLOPS,
			TDPW: m.TDPW, NVLinkGBps: m.NVLinkGBps, NVMLNameContains: m.NVMLNameContains,
			Confirmed: m.Confirmed, Source: m.Source,
		})
	}
	return db.W.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "slug"}},
		UpdateAll: true,
	}).Create(&recs).Error
}
