package models_test

import (
	"context"
	"testing"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/listing"
)

func TestRefreshAvailabilityFollowsGPUStates(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		if n, err := db.RefreshAvailability(ctx); err != nil || n != 0 {
			t.Fatalf("seeded figures must already be right: changed %d, %v", n, err)
		}
		rows, _, _ := listing.All(ctx, db)
		a, b := rows[0], rows[1]
		var gpus []models.GPU
		db.R.Where("node_id = ?", a.NodeID).Order("idx").Find(&gpus)
		for _, g := range gpus {
			if err := db.SetGPUState(ctx, g.UUID, models.GPUFree); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.SetGPUState(ctx, gpus[0].UUID, models.GPUUnhealthy); err != nil {
			t.Fatal(err)
		}
		// Offer b's node loses every GPU (fallen off the bus, say).
		if err := db.W.Where("node_id = ?", b.NodeID).Delete(&models.GPU{}).Error; err != nil {
			t.Fatal(err)
		}
		v0, _ := db.OffersVersion(ctx)
		n, err := db.RefreshAvailability(ctx)
		if err != nil || n != 2 {
			t.Fatalf("changed %d (%v), want 2", n, err)
		}
		var gotA, gotB models.Offer
		db.R.First(&gotA, a.ID)
		if gotA.AvailableGPUs != len(gpus)-1 {
			t.Errorf("offer a: %d free, want %d", gotA.AvailableGPUs, len(gpus)-1)
		}
		db.R.First(&gotB, b.ID)
		if gotB.AvailableGPUs != 0 {
			t.Errorf("offer b without GPUs: %d free", gotB.AvailableGPUs)
		}
		if v1, _ := db.OffersVersion(ctx); v1 != v0+1 {
			t.Errorf("version %d → %d, want one bump", v0, v1)
		}
		if err := db.SetGPUState(ctx, gpus[0].UUID, "melted"); err == nil {
			t.Error("unknown state accepted")
		}
		if err := db.SetGPUState(ctx, "GPU-nope", models.GPUFree); err == nil {
			t.Error("unknown GPU accepted")
		}
	})
}
