package workers_test

import (
	"context"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/workers"
)

// The SLA and uptime passes are registered and run at start on both
// databases: a node that has sent heartbeats gets its 30-day uptime.
func TestSLAAndUptimeJobsRunOnTheQueue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		var n models.Node
		if err := db.R.Order("id").First(&n).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Model(&n).Update("last_heartbeat_at", time.Now().UTC()).Error; err != nil {
			t.Fatal(err)
		}
		q, err := workers.New(db, workers.Options{Work: true, AvailabilityEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer q.Stop(ctx)
		deadline := time.After(30 * time.Second)
		for {
			var done int64
			db.R.Raw(`SELECT COUNT(*) FROM river_job WHERE kind IN ('settle_sla', 'refresh_uptime') AND state = 'completed'`).Scan(&done)
			var got models.Node
			db.R.First(&got, n.ID)
			if done == 2 && got.Uptime30dPct != nil {
				if *got.Uptime30dPct != 100 {
					t.Errorf("a node without incidents: uptime %v", *got.Uptime30dPct)
				}
				return
			}
			select {
			case <-deadline:
				t.Fatalf("jobs completed: %d; node uptime %v", done, got.Uptime30dPct)
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}
