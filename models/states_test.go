package models_test

import (
	"context"
	"testing"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
)

// The transition tables allow the moves the use cases make and refuse
// the ones no flow may make.
func TestStateTransitionTables(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"rental pending → provisioning", models.RentalPending.CanMoveTo(models.RentalProvisioning)},
		{"rental running → stopping", models.RentalRunning.CanMoveTo(models.RentalStopping)},
		{"rental stopped → provisioning (a change restarts it)", models.RentalStopped.CanMoveTo(models.RentalProvisioning)},
		{"node draining → active", models.NodeDraining.CanMoveTo(models.NodeActive)},
		{"GPU free → busy", models.GPUFree.CanMoveTo(models.GPUBusy)},
		{"GPU busy → unhealthy", models.GPUBusy.CanMoveTo(models.GPUUnhealthy)},
	} {
		if !c.ok {
			t.Errorf("%s: refused", c.name)
		}
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"rental failed → running", models.RentalFailed.CanMoveTo(models.RentalRunning)},
		{"rental stopping → running", models.RentalStopping.CanMoveTo(models.RentalRunning)},
		{"rental pending → running (skipping the checks)", models.RentalPending.CanMoveTo(models.RentalRunning)},
		{"node removed → active", models.NodeRemoved.CanMoveTo(models.NodeActive)},
		{"GPU unhealthy → busy", models.GPUUnhealthy.CanMoveTo(models.GPUBusy)},
	} {
		if c.ok {
			t.Errorf("%s: allowed", c.name)
		}
	}
	for _, s := range models.RentalStatuses {
		// An interrupted rental stops at once: it then no longer resumes.
		want := s == models.RentalPending || s == models.RentalProvisioning || s == models.RentalRunning || s == models.RentalMigrating ||
			s == models.RentalInterrupted
		if got := s.CanStop(); got != want {
			t.Errorf("%s.CanStop() = %v, want %v", s, got, want)
		}
	}
}

// An operator cannot mark an unhealthy GPU busy: it must pass its checks
// (or be set free) first.
func TestSetGPUStateFollowsTheTable(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		var g models.GPU
		if err := db.R.Order("id").First(&g).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.SetGPUState(ctx, g.UUID, models.GPUUnhealthy); err != nil {
			t.Fatal(err)
		}
		if err := db.SetGPUState(ctx, g.UUID, models.GPUBusy); apperr.Code(err) != apperr.ECONFLICT {
			t.Fatalf("unhealthy → busy: %v, want ECONFLICT", err)
		}
		if err := db.R.First(&g, g.ID).Error; err != nil || g.State != models.GPUUnhealthy {
			t.Fatalf("after the refusal the GPU is %s (%v), want unhealthy", g.State, err)
		}
		if err := db.SetGPUState(ctx, g.UUID, models.GPUFree); err != nil {
			t.Fatal(err)
		}
		if err := db.SetGPUState(ctx, g.UUID, models.GPUState("lost")); apperr.Code(err) != apperr.EINVALID {
			t.Fatalf("unknown state: %v, want EINVALID", err)
		}
	})
}
