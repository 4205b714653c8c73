package fleet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"suanli/agent"
	"suanli/apperr"
	"suanli/catalog"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
)

// GPUs are matched by UUID: a GPU that stops enumerating (the indexes
// after it shift) or slots the agent cannot read leave the other GPUs
// healthy and rentable, and the heartbeat is accepted.
func TestHeartbeatMatchesGPUsByUUID(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		db.Now = func() time.Time { return at }
		var n models.Node
		if err := db.R.Where("demo").Order("id").First(&n).Error; err != nil {
			t.Fatal(err)
		}
		var stored []models.GPU
		if err := db.R.Where("node_id = ?", n.ID).Order("idx").Find(&stored).Error; err != nil || len(stored) < 6 {
			t.Fatalf("the node's GPUs: %d %v", len(stored), err)
		}
		uuids := make([]string, len(stored))
		for i, g := range stored {
			uuids[i] = g.UUID
		}
		m, _ := catalog.GPUModelBySlug(n.GPUModel)
		name := "NVIDIA " + m.NVMLNameContains
		healthy := func(i int, uuid string) gpu.Info {
			return gpu.Info{Index: i, UUID: uuid, Name: name, MemoryTotalMiB: uint64(stored[0].MemoryMiB),
				Health: gpu.Verdict{Healthy: true, Checks: []gpu.Check{{Name: gpu.CheckPresent, OK: true}}}}
		}
		missing := func(i int, uuid string) gpu.Info {
			g := gpu.Info{Index: i, UUID: uuid, Name: name, Unreadable: gpu.IsUnreadableSlot(uuid)}
			g.Health = gpu.Verdict{Reasons: []string{"GPU missing: NVML says ERROR_GPU_IS_LOST"},
				Checks: []gpu.Check{{Name: gpu.CheckPresent, Detail: "GPU missing: NVML says ERROR_GPU_IS_LOST"}}}
			return g
		}
		f := &fleet.Fleet{DB: db, Hub: fleet.NewHub()}
		cred, err := f.IssueCredential(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		beat := func(gs ...gpu.Info) error {
			at = at.Add(5 * time.Second)
			_, err := f.Heartbeat(ctx, cred, agent.Heartbeat{AgentVersion: "test", Launcher: "docker",
				Host: gpu.Host{Simulated: true, DriverVersion: "550.54.15", GPUs: gs}})
			return err
		}
		all := func() []gpu.Info {
			var gs []gpu.Info
			for i, u := range uuids {
				gs = append(gs, healthy(i, u))
			}
			return gs
		}
		// state reads every GPU of the node by UUID.
		state := func() map[string]models.GPU {
			var gs []models.GPU
			if err := db.R.Where("node_id = ?", n.ID).Find(&gs).Error; err != nil {
				t.Fatal(err)
			}
			out := map[string]models.GPU{}
			for _, g := range gs {
				out[g.UUID] = g
			}
			if len(out) != len(uuids) {
				t.Fatalf("the node has %d GPUs, want %d: %+v", len(out), len(uuids), gs)
			}
			return out
		}
		expect := func(what string, gone ...int) {
			t.Helper()
			st := state()
			for i, u := range uuids {
				g := st[u]
				lost := false
				for _, x := range gone {
					lost = lost || x == i
				}
				switch {
				case lost && g.Health != models.GPUMissing:
					t.Errorf("%s: GPU %d (%s) is %s, want missing", what, i, u, g.Health)
				case !lost && (g.Health != models.GPUHealthy || g.State == models.GPUUnhealthy):
					t.Errorf("%s: GPU %d (%s) is %s/%s (%s), want healthy and rentable", what, i, u, g.Health, g.State, g.Reasons)
				}
			}
		}
		if err := beat(all()...); err != nil {
			t.Fatal(err)
		}
		expect("all read")

		// An agent started while two GPUs answer GPU_IS_LOST and
		// NO_PERMISSION: it reports two unreadable slots.
		gs := all()
		gs[2], gs[5] = missing(2, gpu.UnreadableSlot(2)), missing(5, gpu.UnreadableSlot(5))
		if err := beat(gs...); err != nil {
			t.Fatalf("two unreadable slots: %v", err)
		}
		expect("two unreadable slots", 2, 5)
		// So does an agent from before placeholders, with UUID "".
		gs[2].UUID, gs[5].UUID = "", ""
		if err := beat(gs...); err != nil {
			t.Fatalf("two GPUs with UUID \"\": %v", err)
		}
		expect("two GPUs without UUIDs", 2, 5)
		if err := beat(all()...); err != nil {
			t.Fatal(err)
		}
		expect("read again")

		// GPU 2 stops enumerating: the GPUs after it are enumerated one
		// index lower, and GPU 2 is reported missing at its old index.
		gs = nil
		for i, u := range uuids {
			switch {
			case i < 2:
				gs = append(gs, healthy(i, u))
			case i > 2:
				gs = append(gs, healthy(i-1, u))
			}
		}
		gs = append(gs, missing(2, uuids[2]))
		if err := beat(gs...); err != nil {
			t.Fatalf("indexes shifted: %v", err)
		}
		expect("GPU 2 gone", 2)
		st := state()
		if st[uuids[3]].Idx != 2 || st[uuids[len(uuids)-1]].Idx != len(uuids)-2 {
			t.Errorf("shifted GPUs at %d and %d, want 2 and %d", st[uuids[3]].Idx, st[uuids[len(uuids)-1]].Idx, len(uuids)-2)
		}
		// Once it is back (a reset), every GPU is at its index again.
		if err := beat(all()...); err != nil {
			t.Fatal(err)
		}
		expect("GPU 2 back")
		for i, u := range uuids {
			if g := state()[u]; g.Idx != i {
				t.Errorf("GPU %s at index %d, want %d", u, g.Idx, i)
			}
		}

		// A report naming one GPU twice is still a conflict.
		gs = all()
		gs[1].UUID = gs[0].UUID
		var ae *apperr.Error
		if err := beat(gs...); !errors.As(err, &ae) || ae.Code != apperr.ECONFLICT {
			t.Errorf("one UUID twice: %v, want a conflict", err)
		}
	})
}
