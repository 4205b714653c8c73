package models_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/supply"
)

func TestOpenBenchmarkTask(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		n, _ := seededNode(t, db)
		now := time.Now().UTC().Truncate(time.Second)
		if _, err := supply.OpenBenchmarkTask(db.R, n.ID, now.Add(-time.Hour)); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Fatalf("none out: %v", err)
		}
		add := func(key, kind, status string, at time.Time) models.AgentTask {
			t.Helper()
			row := models.AgentTask{NodeID: n.ID, Kind: kind, IdemKey: key, Payload: "{}", Status: status, CreatedAt: at}
			if err := supply.InsertAgentTask(db.W, &row); err != nil {
				t.Fatal(err)
			}
			return row
		}
		add("done", agent.TaskBenchmark, models.TaskDone, now)
		add("old", agent.TaskBenchmark, models.TaskSent, now.Add(-2*time.Hour))
		r := testRental(t, db, n)
		v := models.AgentTask{NodeID: n.ID, RentalID: &r.ID, Kind: agent.TaskVerify, IdemKey: "verify", Payload: "{}", Status: models.TaskQueued, CreatedAt: now}
		if err := supply.InsertAgentTask(db.W, &v); err != nil {
			t.Fatal(err)
		}
		if got, err := supply.OpenBenchmarkTask(db.R, n.ID, now.Add(-time.Hour)); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("done, old and other kinds count as open: %+v, %v", got, err)
		}
		a := add("a", agent.TaskBenchmark, models.TaskSent, now.Add(-30*time.Minute))
		b := add("b", agent.TaskBenchmark, models.TaskQueued, now.Add(-40*time.Minute))
		got, err := supply.OpenBenchmarkTask(db.R, n.ID, now.Add(-time.Hour))
		if err != nil || got.ID != b.ID {
			t.Errorf("open: task %d, %v; want the newest, %d (not %d)", got.ID, err, b.ID, a.ID)
		}
		if _, err := supply.OpenBenchmarkTask(db.R, n.ID+1, now.Add(-time.Hour)); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("another node's: %v", err)
		}
	})
}

func TestIdleHealthyGPUUUIDs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		n, gs := seededNode(t, db)
		now := time.Now().UTC()
		var want []string
		for i, g := range gs {
			health := models.GPUHealthy
			if i == 1 {
				health = models.GPUFailing
			}
			if err := supply.RecordGPUReading(db.W, g.ID, supply.GPUReading{UUID: g.UUID, Health: health, Telemetry: "{}", CheckedAt: now}); err != nil {
				t.Fatal(err)
			}
			state := models.GPUFree
			if i == 0 {
				state = models.GPUBusy
			}
			if err := db.SetGPUState(ctx, g.UUID, state); err != nil {
				t.Fatal(err)
			}
			if i > 1 {
				want = append(want, g.UUID)
			}
		}
		got, err := supply.IdleHealthyGPUUUIDs(db.R, n.ID)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("idle healthy: %v (%v), want %v", got, err, want)
		}
	})
}

func TestGPUModelRecordBySlug(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		m, err := supply.GPUModelRecordBySlug(db.R, "h100-sxm")
		if err != nil || m.Slug != "h100-sxm" || m.Name == "" || m.BF16TFLOPS <= 0 {
			t.Errorf("h100-sxm: %+v, %v", m, err)
		}
		if _, err := supply.GPUModelRecordBySlug(db.R, "no-such-gpu"); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("unknown model: %v", err)
		}
	})
}

func TestNodesDueForBenchmark(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		n, gs := seededNode(t, db)
		now := time.Now().UTC().Truncate(time.Second)
		weekAgo, dayAgo := now.Add(-7*24*time.Hour), now.Add(-24*time.Hour)
		// Seeded nodes were never heard from: none is due.
		if due, err := supply.NodesDueForBenchmark(ctx, db, weekAgo, dayAgo); err != nil || len(due) != 0 {
			t.Fatalf("seeded: %+v, %v", due, err)
		}
		if err := supply.RecordNodeHeartbeat(db.W, n.ID, supply.NodeHeartbeat{At: now, Health: models.NodeHealthy, AgentInfo: "{}"}); err != nil {
			t.Fatal(err)
		}
		if due, _ := supply.NodesDueForBenchmark(ctx, db, weekAgo, dayAgo); len(due) != 0 {
			t.Errorf("no healthy GPU yet: %+v", due)
		}
		g := gs[len(gs)-1]
		if err := supply.RecordGPUReading(db.W, g.ID, supply.GPUReading{UUID: g.UUID, Health: models.GPUHealthy, Telemetry: "{}", CheckedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := db.SetGPUState(ctx, g.UUID, models.GPUFree); err != nil {
			t.Fatal(err)
		}
		due, err := supply.NodesDueForBenchmark(ctx, db, weekAgo, dayAgo)
		if err != nil || len(due) != 1 || due[0].ID != n.ID || due[0].LatestReportID != nil {
			t.Fatalf("due: %+v, %v", due, err)
		}
		// A report newer than a week: not due; older: due again, for its weekly run.
		rep := &models.BenchmarkReport{NodeID: n.ID, GPUModel: n.GPUModel, GPUs: 1, Trigger: models.BenchVerified, Nominal: "{}", Report: "{}",
			MeasuredAt: now.Add(-time.Hour), CreatedAt: now}
		if err := supply.InsertReport(db.W, rep); err != nil {
			t.Fatal(err)
		}
		if due, _ := supply.NodesDueForBenchmark(ctx, db, weekAgo, dayAgo); len(due) != 0 {
			t.Errorf("fresh report: %+v", due)
		}
		if due, _ := supply.NodesDueForBenchmark(ctx, db, now, dayAgo); len(due) != 1 || due[0].LatestReportID == nil || *due[0].LatestReportID != rep.ID {
			t.Errorf("stale report: %+v, want latest %d", due, rep.ID)
		}
		// A benchmark sent within the retry window holds the node back.
		task := models.AgentTask{NodeID: n.ID, Kind: agent.TaskBenchmark, IdemKey: "bench", Payload: "{}", Status: models.TaskDone, CreatedAt: now.Add(-time.Hour)}
		if err := supply.InsertAgentTask(db.W, &task); err != nil {
			t.Fatal(err)
		}
		if due, _ := supply.NodesDueForBenchmark(ctx, db, now, dayAgo); len(due) != 0 {
			t.Errorf("benchmark sent an hour ago: %+v", due)
		}
		if due, _ := supply.NodesDueForBenchmark(ctx, db, now, now.Add(-time.Minute)); len(due) != 1 {
			t.Errorf("benchmark sent before the window: %+v", due)
		}
	})
}

func TestFailAgentTaskResult(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		n, _ := seededNode(t, db)
		ok := true
		row := models.AgentTask{NodeID: n.ID, Kind: agent.TaskBenchmark, IdemKey: "b", Payload: "{}", Status: models.TaskDone, OK: &ok, CreatedAt: time.Now().UTC()}
		if err := supply.InsertAgentTask(db.W, &row); err != nil {
			t.Fatal(err)
		}
		if err := supply.FailAgentTaskResult(db.W, row.ID); err != nil {
			t.Fatal(err)
		}
		var got models.AgentTask
		if err := db.R.First(&got, row.ID).Error; err != nil || got.OK == nil || *got.OK {
			t.Errorf("after failing: ok %v, %v", got.OK, err)
		}
	})
}
