package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/models"
	"suanli/models/supply"
	"suanli/workers"
)

// The purge job deletes GPU telemetry samples older than their
// retention and keeps the rest.
func TestPurgeDropsOldGPUSamples(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		var g models.GPU
		if err := db.R.Order("id").First(&g).Error; err != nil {
			t.Fatal(err)
		}
		now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
		db.Now = func() time.Time { return now }
		for _, age := range []time.Duration{fleet.SampleRetention + time.Minute, fleet.SampleRetention - time.Minute, time.Minute} {
			if err := supply.InsertGPUSample(db.W, &models.GPUSample{GPUID: g.ID, At: now.Add(-age), UtilPct: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := (&workers.PurgeWorker{DB: db}).Work(ctx, &river.Job[workers.PurgeArgs]{}); err != nil {
			t.Fatal(err)
		}
		var left []models.GPUSample
		if err := db.R.Where("gpu_id = ?", g.ID).Order("at").Find(&left).Error; err != nil {
			t.Fatal(err)
		}
		if len(left) != 2 || !left[0].At.Equal(now.Add(-fleet.SampleRetention+time.Minute)) {
			t.Errorf("after the purge: %+v, want the 2 samples within %s", left, fleet.SampleRetention)
		}
	})
}
