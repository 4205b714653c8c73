package models_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/supply"
)

// seededNode seeds the demo market and returns its first demo node and
// that node's GPUs (in index order).
func seededNode(t *testing.T, db *models.DB) (models.Node, []models.GPU) {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	var n models.Node
	if err := db.R.Where("demo").Order("id").First(&n).Error; err != nil {
		t.Fatal(err)
	}
	var gs []models.GPU
	if err := db.R.Where("node_id = ?", n.ID).Order("idx").Find(&gs).Error; err != nil || len(gs) < 2 {
		t.Fatalf("node %d: %d GPUs, %v", n.ID, len(gs), err)
	}
	return n, gs
}

// testRental inserts a running rental of the offer on node n, with its
// own user and organisation, for tests that need a rental row.
func testRental(t *testing.T, db *models.DB, n models.Node) models.Rental {
	t.Helper()
	var o models.Offer
	if err := db.R.Where("node_id = ?", n.ID).First(&o).Error; err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	u := &models.User{Email: "renter-" + tag + "@example.test", Name: "renter", Lang: locales.ZH, PasswordHash: "x", CreatedAt: now}
	org := &models.Org{Kind: models.OrgTeam, Name: "team " + tag, Personal: true, Status: models.OrgActive, CreatedAt: now}
	if err := db.Tx(context.Background(), func(tx *gorm.DB) error {
		if err := models.InsertUser(tx, u); err != nil {
			return err
		}
		return models.InsertOrg(tx, org)
	}); err != nil {
		t.Fatal(err)
	}
	r := models.Rental{OrgID: org.ID, UserID: u.ID, OfferID: o.ID, ProviderID: o.ProviderID, NodeID: &n.ID, GPUs: 1,
		SLA: "standard", Term: "on_demand", Status: models.RentalRunning, SSHPublicKey: "ssh-ed25519 AAAA test", WorkspaceID: "ws-" + tag,
		PricePerGPUHourFen: o.PricePerGPUHourFen, RunningSince: &now, CreatedAt: now, UpdatedAt: now}
	if err := db.W.Create(&r).Error; err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNodeTokenHashes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		n, _ := seededNode(t, db)
		if found, err := supply.SetNodeRegTokenHash(ctx, db, n.ID, "reg-1"); err != nil || !found {
			t.Fatalf("registration token: found %v, %v", found, err)
		}
		if found, err := supply.SetNodeRegTokenHash(ctx, db, 1<<40, "reg-x"); err != nil || found {
			t.Errorf("registration token of a missing node: found %v, %v", found, err)
		}
		got, err := supply.NodeByRegTokenHash(db.R, "reg-1")
		if err != nil || got.ID != n.ID {
			t.Fatalf("by registration token: node %d, %v; want %d", got.ID, err, n.ID)
		}
		if _, err := supply.NodeByCredHash(db.R, "cred-1"); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("credential before the exchange: %v", err)
		}
		if err := supply.ExchangeRegToken(db.W, n.ID, "cred-1"); err != nil {
			t.Fatal(err)
		}
		if got, err := supply.NodeByCredHash(db.R, "cred-1"); err != nil || got.ID != n.ID {
			t.Errorf("by credential: node %d, %v; want %d", got.ID, err, n.ID)
		}
		if _, err := supply.NodeByRegTokenHash(db.R, "reg-1"); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("registration token still usable after the exchange: %v", err)
		}
		if found, err := supply.SetNodeCredHash(ctx, db, n.ID, "cred-2"); err != nil || !found {
			t.Fatalf("credential: found %v, %v", found, err)
		}
		if found, err := supply.SetNodeCredHash(ctx, db, 1<<40, "cred-x"); err != nil || found {
			t.Errorf("credential of a missing node: found %v, %v", found, err)
		}
		if _, err := supply.NodeByCredHash(db.R, "cred-1"); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("replaced credential still accepted: %v", err)
		}
		if got, err := supply.NodeByCredHash(db.R, "cred-2"); err != nil || got.ID != n.ID {
			t.Errorf("by new credential: node %d, %v", got.ID, err)
		}
	})
}

func TestRecordNodeHeartbeatAndModel(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		n, _ := seededNode(t, db)
		now := time.Now().UTC().Truncate(time.Second)
		hb := supply.NodeHeartbeat{At: now, Health: models.NodeNoNVML, Simulated: true, AgentInfo: `{"version":"1"}`, PingURL: "https://node.example/ping"}
		if err := supply.RecordNodeHeartbeat(db.W, n.ID, hb); err != nil {
			t.Fatal(err)
		}
		got, err := supply.NodeByIDTx(db.R, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastHeartbeatAt == nil || !got.LastHeartbeatAt.Equal(now) || got.Health != models.NodeNoNVML || !got.Simulated ||
			got.AgentInfo != hb.AgentInfo || got.PingURL != hb.PingURL {
			t.Errorf("after heartbeat: %+v", got)
		}
		// Zero values are written too: a node that stops simulating says so.
		hb.Simulated, hb.Health, hb.PingURL = false, models.NodeHealthy, ""
		if err := supply.RecordNodeHeartbeat(db.W, n.ID, hb); err != nil {
			t.Fatal(err)
		}
		if got, _ = supply.NodeByIDTx(db.R, n.ID); got.Simulated || got.Health != models.NodeHealthy || got.PingURL != "" {
			t.Errorf("after second heartbeat: simulated %v, health %s, ping %q", got.Simulated, got.Health, got.PingURL)
		}
		if err := supply.SetNodeGPUModel(db.W, n.ID, "h200-sxm"); err != nil {
			t.Fatal(err)
		}
		if got, _ = supply.NodeByIDTx(db.R, n.ID); got.GPUModel != "h200-sxm" {
			t.Errorf("model %q, want h200-sxm", got.GPUModel)
		}
		if _, err := supply.NodeByIDTx(db.R, 1<<40); !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Errorf("missing node: %v", err)
		}
	})
}

func TestGPUReadings(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		n, seeded := seededNode(t, db)
		gs, err := supply.GPUsOfNode(db.R, n.ID)
		if err != nil || len(gs) != len(seeded) {
			t.Fatalf("%d GPUs (%v), want %d", len(gs), err, len(seeded))
		}
		for i, g := range gs {
			if g.Idx != i || g.NodeID != n.ID {
				t.Errorf("GPU %d: index %d of node %d", i, g.Idx, g.NodeID)
			}
		}
		now := time.Now().UTC().Truncate(time.Second)
		added := models.GPU{NodeID: n.ID, Idx: len(gs), UUID: "GPU-added", GPUModel: n.GPUModel, State: models.GPUUnhealthy,
			Health: models.GPUFailing, Reasons: "xid 79", Telemetry: "{}", CheckedAt: &now}
		if err := supply.InsertGPU(db.W, &added); err != nil || added.ID == 0 {
			t.Fatalf("insert: id %d, %v", added.ID, err)
		}
		again := added
		again.ID, again.Idx = 0, len(gs)+1
		if err := supply.InsertGPU(db.W, &again); !ledger.IsUniqueViolation(err) {
			t.Errorf("a UUID twice: %v, want a unique violation", err)
		}
		msg := locales.Lines(locales.M("check.not_reported"))
		r := supply.GPUReading{UUID: "GPU-renamed", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "0000:17:00.0", MemoryMiB: 81559,
			Health: models.GPUHealthy, Reasons: "", ReasonsMsg: msg, Telemetry: `{"temperature_c":40}`, CheckedAt: now}
		if err := supply.RecordGPUReading(db.W, added.ID, r); err != nil {
			t.Fatal(err)
		}
		gs, _ = supply.GPUsOfNode(db.R, n.ID)
		got := gs[len(gs)-1]
		if got.ID != added.ID || got.UUID != r.UUID || got.Name != r.Name || got.PCIBusID != r.PCIBusID || got.MemoryMiB != r.MemoryMiB ||
			got.Health != models.GPUHealthy || got.Reasons != "" || got.ReasonsMsg.Key != msg.Key || got.Telemetry != r.Telemetry ||
			got.CheckedAt == nil || !got.CheckedAt.Equal(now) {
			t.Errorf("after reading: %+v", got)
		}
		if got.State != models.GPUUnhealthy {
			t.Errorf("a reading changed the state to %s", got.State)
		}
		if err := supply.RecordGPUReading(db.W, added.ID, supply.GPUReading{UUID: gs[0].UUID, Telemetry: "{}", CheckedAt: now}); !ledger.IsUniqueViolation(err) {
			t.Errorf("another GPU's UUID: %v, want a unique violation", err)
		}
		later := now.Add(time.Minute)
		if err := supply.MarkGPUMissing(db.W, added.ID, "gone", msg, later); err != nil {
			t.Fatal(err)
		}
		gs, _ = supply.GPUsOfNode(db.R, n.ID)
		if got := gs[len(gs)-1]; got.Health != models.GPUMissing || got.Reasons != "gone" || got.CheckedAt == nil || !got.CheckedAt.Equal(later) || got.UUID != r.UUID {
			t.Errorf("after missing: %+v", got)
		}
	})
}

func TestGPUStateFollowsVerdicts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		n, gs := seededNode(t, db)
		state := func(id int64) models.GPUState {
			t.Helper()
			all, err := supply.GPUsOfNode(db.R, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range all {
				if g.ID == id {
					return g.State
				}
			}
			t.Fatalf("GPU %d gone", id)
			return ""
		}
		a, b := gs[0], gs[1]
		for _, g := range []models.GPU{a, b} {
			if err := db.SetGPUState(ctx, g.UUID, models.GPUFree); err != nil {
				t.Fatal(err)
			}
		}
		if err := supply.HoldFailingGPU(db.W, a.ID); err != nil {
			t.Fatal(err)
		}
		if s := state(a.ID); s != models.GPUUnhealthy {
			t.Errorf("failing free GPU: %s, want unhealthy", s)
		}
		if err := db.SetGPUState(ctx, b.UUID, models.GPUBusy); err != nil {
			t.Fatal(err)
		}
		if err := supply.HoldFailingGPU(db.W, b.ID); err != nil {
			t.Fatal(err)
		}
		if s := state(b.ID); s != models.GPUBusy {
			t.Errorf("failing busy GPU: %s, want busy until its rental moves", s)
		}
		if err := supply.ReleaseRecoveredGPU(db.W, b.ID); err != nil {
			t.Fatal(err)
		}
		if s := state(b.ID); s != models.GPUBusy {
			t.Errorf("release of a busy GPU: %s", s)
		}
		// A rental still holds a: it stays out of the free pool.
		r := testRental(t, db, n)
		hold := models.RentalGPU{RentalID: r.ID, GPUID: a.ID, NodeID: n.ID, AttachedAt: time.Now().UTC()}
		if err := db.W.Create(&hold).Error; err != nil {
			t.Fatal(err)
		}
		if err := supply.ReleaseRecoveredGPU(db.W, a.ID); err != nil {
			t.Fatal(err)
		}
		if s := state(a.ID); s != models.GPUUnhealthy {
			t.Errorf("recovered GPU a rental holds: %s, want unhealthy", s)
		}
		if err := db.W.Model(&hold).Update("released_at", time.Now().UTC()).Error; err != nil {
			t.Fatal(err)
		}
		if err := supply.ReleaseRecoveredGPU(db.W, a.ID); err != nil {
			t.Fatal(err)
		}
		if s := state(a.ID); s != models.GPUFree {
			t.Errorf("recovered GPU: %s, want free", s)
		}
	})
}

func TestOffersAwaitingNode(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		n, _ := seededNode(t, db)
		if os, err := supply.OffersAwaitingNode(db.R, n.ID); err != nil || len(os) != 0 {
			t.Fatalf("seeded offers awaiting: %d, %v", len(os), err)
		}
		var o models.Offer
		if err := db.R.Where("node_id = ?", n.ID).First(&o).Error; err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		if err := supply.SetOfferListing(db.W, o.ID, true, "waiting", now); err != nil {
			t.Fatal(err)
		}
		os, err := supply.OffersAwaitingNode(db.R, n.ID)
		if err != nil || len(os) != 1 || os[0].ID != o.ID || os[0].ListingNote != "waiting" || !os[0].UpdatedAt.Equal(now) {
			t.Fatalf("awaiting: %+v, %v", os, err)
		}
		if err := supply.SetOfferListing(db.W, o.ID, false, "", now); err != nil {
			t.Fatal(err)
		}
		if os, err := supply.OffersAwaitingNode(db.R, n.ID); err != nil || len(os) != 0 {
			t.Errorf("after listing: %d awaiting, %v", len(os), err)
		}
	})
}

func TestAgentTaskQueue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		n, _ := seededNode(t, db)
		now := time.Now().UTC().Truncate(time.Second)
		if _, found, err := supply.AgentTaskIDByKey(db.R, "k1"); err != nil || found {
			t.Fatalf("before insert: found %v, %v", found, err)
		}
		add := func(key, kind string, rentalID *int64) models.AgentTask {
			t.Helper()
			row := models.AgentTask{NodeID: n.ID, RentalID: rentalID, Kind: kind, IdemKey: key, Payload: "{}", Status: models.TaskQueued, CreatedAt: now}
			if err := supply.InsertAgentTask(db.W, &row); err != nil || row.ID == 0 {
				t.Fatalf("insert %s: id %d, %v", key, row.ID, err)
			}
			return row
		}
		t1 := add("k1", agent.TaskBenchmark, nil)
		if id, found, err := supply.AgentTaskIDByKey(db.R, "k1"); err != nil || !found || id != t1.ID {
			t.Errorf("by key: %d %v %v, want %d", id, found, err, t1.ID)
		}
		if err := supply.SetAgentTaskPayload(db.W, t1.ID, `{"id":1}`); err != nil {
			t.Fatal(err)
		}
		t2 := add("k2", agent.TaskBenchmark, nil)
		due, err := supply.DueAgentTasks(ctx, db, n.ID, now.Add(-time.Minute), 20)
		if err != nil || len(due) != 2 || due[0].ID != t1.ID || due[1].ID != t2.ID || due[0].Payload != `{"id":1}` {
			t.Fatalf("due: %+v, %v", due, err)
		}
		if due, _ := supply.DueAgentTasks(ctx, db, n.ID, now.Add(-time.Minute), 1); len(due) != 1 || due[0].ID != t1.ID {
			t.Errorf("limit 1: %+v", due)
		}
		if taken, err := supply.MarkAgentTaskSent(db.W, t1.ID, n.ID, now.Add(-time.Minute), now); err != nil || !taken {
			t.Fatalf("send: %v %v", taken, err)
		}
		if taken, err := supply.MarkAgentTaskSent(db.W, t1.ID, n.ID, now.Add(-time.Minute), now); err != nil || taken {
			t.Errorf("second send of a task just sent: %v %v", taken, err)
		}
		if due, _ := supply.DueAgentTasks(ctx, db, n.ID, now.Add(-time.Minute), 20); len(due) != 1 || due[0].ID != t2.ID {
			t.Errorf("due after sending one: %+v", due)
		}
		// Sent without a result before resendBefore: due again.
		if due, _ := supply.DueAgentTasks(ctx, db, n.ID, now.Add(time.Minute), 20); len(due) != 2 {
			t.Errorf("due for resending: %+v", due)
		}
		if taken, err := supply.MarkAgentTaskSent(db.W, t1.ID, n.ID, now.Add(time.Minute), now.Add(time.Second)); err != nil || !taken {
			t.Errorf("resend: %v %v", taken, err)
		}
		if due, _ := supply.DueAgentTasks(ctx, db, n.ID+1, now.Add(time.Minute), 20); len(due) != 0 {
			t.Errorf("another node's due tasks: %+v", due)
		}

		r := testRental(t, db, n)
		verify := add("v", agent.TaskVerify, &r.ID)
		launch := add("l", agent.TaskLaunch, &r.ID)
		stop := add("s", agent.TaskStop, &r.ID)
		const result = `{"ok":false,"error":"withdrawn"}`
		if err := supply.ExpireAgentTasks(db.W, r.ID, n.ID, []string{agent.TaskVerify, agent.TaskLaunch}, result, now); err != nil {
			t.Fatal(err)
		}
		var rows []models.AgentTask
		db.R.Where("rental_id = ?", r.ID).Order("id").Find(&rows)
		for _, row := range rows {
			switch row.ID {
			case verify.ID, launch.ID:
				if row.Status != models.TaskDone || row.OK == nil || *row.OK || row.Result != result || row.DoneAt == nil {
					t.Errorf("expired %s: %+v", row.Kind, row)
				}
			case stop.ID:
				if row.Status != models.TaskQueued || row.OK != nil {
					t.Errorf("stop task touched: %+v", row)
				}
			}
		}
	})
}
