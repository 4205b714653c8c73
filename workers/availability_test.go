package workers_test

import (
	"context"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/listing"
	"suanli/workers"
)

// The availability job runs through the real queue on both databases and
// brings offers in line with their GPUs' states.
func TestAvailabilityJobRunsOnTheQueue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		rows, _, err := listing.All(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		target := rows[0]
		var gpu models.GPU
		if err := db.R.Where("node_id = ? AND state = ?", target.NodeID, models.GPUFree).First(&gpu).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.SetGPUState(ctx, gpu.UUID, models.GPUUnhealthy); err != nil {
			t.Fatal(err)
		}
		v0, _ := db.OffersVersion(ctx)

		q, err := workers.New(db, workers.Options{Work: true, AvailabilityEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer q.Stop(ctx)
		// RunOnStart inserts the job at once; wait until the offer changed.
		deadline := time.After(30 * time.Second)
		for {
			var o models.Offer
			if err := db.R.First(&o, target.ID).Error; err != nil {
				t.Fatal(err)
			}
			if o.AvailableGPUs == target.AvailableGPUs-1 {
				break
			}
			select {
			case <-deadline:
				t.Fatalf("available GPUs still %d, want %d", o.AvailableGPUs, target.AvailableGPUs-1)
			case <-time.After(50 * time.Millisecond):
			}
		}
		if v1, _ := db.OffersVersion(ctx); v1 <= v0 {
			t.Errorf("offers version did not move (%d → %d): the index would not reload", v0, v1)
		}
	})
}
