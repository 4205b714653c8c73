package rentals_test

import (
	"math"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/catalog"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
	"suanli/sla"
)

// nodeHost is a report of the node's stored GPUs, all healthy, with
// the names NVML gives GPUs of the node's model.
func nodeHost(t *testing.T, db *models.DB, nodeID int64) gpu.Host {
	t.Helper()
	var n models.Node
	if err := db.R.First(&n, nodeID).Error; err != nil {
		t.Fatal(err)
	}
	name := "NVIDIA " + catalog.GPUName(n.GPUModel)
	var gs []models.GPU
	if err := db.R.Where("node_id = ?", nodeID).Order("idx").Find(&gs).Error; err != nil || len(gs) == 0 {
		t.Fatalf("the node's GPUs: %d, %v", len(gs), err)
	}
	host := gpu.Host{Simulated: true}
	for _, g := range gs {
		host.GPUs = append(host.GPUs, gpu.Info{Index: g.Idx, UUID: g.UUID, Name: name, PCIBusID: g.PCIBusID, MemoryTotalMiB: uint64(g.MemoryMiB),
			Health: gpu.Verdict{Healthy: true}})
	}
	return host
}

// gpuIncidents counts a GPU's incidents of a kind, and the open ones.
func gpuIncidents(t *testing.T, db *models.DB, gpuID int64) (all, open int64) {
	t.Helper()
	q := db.R.Model(&models.Incident{}).Where("gpu_id = ? AND kind = ?", gpuID, models.IncidentGPUFailing)
	if err := q.Count(&all).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.R.Model(&models.Incident{}).Where("gpu_id = ? AND kind = ? AND closed_at IS NULL", gpuID, models.IncidentGPUFailing).Count(&open).Error; err != nil {
		t.Fatal(err)
	}
	return all, open
}

// A GPU whose verdict flips on every heartbeat opens one incident, which
// stays one (reopened) for as long as it keeps failing again within
// fleet.FlapWindow of recovering; a failure after a longer healthy
// spell is a new incident.
func TestFlappingGPUOpensOneIncident(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{InsertOnly: true})
		o := r.rtxOffer()
		cred, err := r.rentals.Fleet().IssueCredential(r.ctx, o.NodeID)
		if err != nil {
			t.Fatal(err)
		}
		host := nodeHost(t, db, o.NodeID)
		var flapper models.GPU
		if err := db.R.Where("node_id = ? AND idx = ?", o.NodeID, host.GPUs[0].Index).First(&flapper).Error; err != nil {
			t.Fatal(err)
		}
		beat := func(failing bool) {
			t.Helper()
			h := host
			h.GPUs = append([]gpu.Info(nil), host.GPUs...)
			if failing {
				h.GPUs[0].Health = gpu.Verdict{Healthy: false, Reasons: []string{"XID 79: fallen off the bus"},
					Checks: []gpu.Check{{Name: "xid", OK: false, Detail: "XID 79"}}}
			}
			if _, err := r.rentals.Fleet().Heartbeat(r.ctx, cred, agent.Heartbeat{AgentVersion: "test", Launcher: "simulated", Host: h}); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(fleet.HeartbeatEvery)
		}
		start := r.clock.Now()
		beat(false)
		const flips = 60
		for i := range flips {
			beat(i%2 == 0)
		}
		all, open := gpuIncidents(t, db, flapper.ID)
		holds(t, all == 1, "%d flips of the verdict opened %d incidents, want 1", flips, all)
		holds(t, open == 0, "the GPU passed its last check, yet %d incident(s) are open", open)

		beat(true)
		all, open = gpuIncidents(t, db, flapper.ID)
		holds(t, all == 1 && open == 1, "failing again: %d incidents, %d open; want the one reopened", all, open)
		var inc models.Incident
		if err := db.R.Where("gpu_id = ?", flapper.ID).First(&inc).Error; err != nil {
			t.Fatal(err)
		}
		holds(t, r.clock.Now().Sub(inc.OpenedAt) >= flips*fleet.HeartbeatEvery, "the incident opened at %v, not at the first failure", inc.OpenedAt)
		// As the SLA page says, the healthy beats between count as down: the
		// node's uptime is one GPU down throughout, from the first failure.
		var incs []models.Incident
		if err := db.R.Where("node_id = ?", o.NodeID).Find(&incs).Error; err != nil {
			t.Fatal(err)
		}
		now := r.clock.Now()
		want := 100 * (1 - now.Sub(inc.OpenedAt).Seconds()/now.Sub(start).Seconds()/float64(len(host.GPUs)))
		got := sla.NodeUptimePct(o.NodeID, len(host.GPUs), incs, start, now)
		holds(t, math.Abs(got-want) < 1e-9, "uptime %.6f%%, want %.6f%% (one GPU down since the first failure)", got, want)

		// Healthy for longer than the window: the next failure is news.
		beat(false)
		r.clock.Advance(fleet.FlapWindow + time.Minute)
		beat(true)
		all, open = gpuIncidents(t, db, flapper.ID)
		holds(t, all == 2 && open == 1, "a failure after %s healthy: %d incidents, %d open; want a second one", fleet.FlapWindow, all, open)
	})
}

// A node reports at most fleet.MaxNodeGPUs GPUs, at indexes below it; a
// report beyond that is refused (bad input) and stores nothing.
func TestHeartbeatGPUCountIsBounded(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{InsertOnly: true})
		o := r.rtxOffer()
		cred, err := r.rentals.Fleet().IssueCredential(r.ctx, o.NodeID)
		if err != nil {
			t.Fatal(err)
		}
		var before int64
		db.R.Model(&models.GPU{}).Count(&before)
		host := nodeHost(t, db, o.NodeID)

		many := gpu.Host{Simulated: true}
		for i := range fleet.MaxNodeGPUs + 1 {
			many.GPUs = append(many.GPUs, gpu.Info{Index: i, UUID: "GPU-flood-" + string(rune('a'+i%26)) + string(rune('a'+i/26)),
				Name: host.GPUs[0].Name, Health: gpu.Verdict{Healthy: i%2 == 0}})
		}
		farIndex := gpu.Host{Simulated: true, GPUs: append(append([]gpu.Info(nil), host.GPUs...), gpu.Info{Index: fleet.MaxNodeGPUs, UUID: "GPU-far",
			Name: host.GPUs[0].Name, Health: gpu.Verdict{Healthy: true}})}
		negative := gpu.Host{Simulated: true, GPUs: []gpu.Info{{Index: -1, UUID: "GPU-neg", Name: host.GPUs[0].Name, Health: gpu.Verdict{Healthy: true}}}}
		for name, h := range map[string]gpu.Host{"65 GPUs": many, "index 64": farIndex, "index -1": negative} {
			_, err := r.rentals.Fleet().Heartbeat(r.ctx, cred, agent.Heartbeat{AgentVersion: "test", Launcher: "simulated", Host: h})
			if apperr.Code(err) != apperr.EINVALID {
				t.Errorf("%s: %v, want invalid", name, err)
			}
		}
		var n models.Node
		if err := db.R.First(&n, o.NodeID).Error; err != nil {
			t.Fatal(err)
		}
		var after, incidents int64
		db.R.Model(&models.GPU{}).Count(&after)
		db.R.Model(&models.Incident{}).Where("node_id = ?", o.NodeID).Count(&incidents)
		holds(t, n.LastHeartbeatAt == nil && after == before && incidents == 0,
			"refused reports stored something: heartbeat at %v, %d GPUs (was %d), %d incidents", n.LastHeartbeatAt, after, before, incidents)

		// The node's own inventory is taken.
		if _, err := r.rentals.Fleet().Heartbeat(r.ctx, cred, agent.Heartbeat{AgentVersion: "test", Launcher: "simulated", Host: host}); err != nil {
			t.Fatal(err)
		}
	})
}

// holds fails the test now when cond is false.
func holds(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}

// The same holds for a node's silence, as the SLA page says: silent again
// within fleet.FlapWindow of its heartbeat coming back reopens the
// incident; silent after longer opens another.
func TestNodeSilentAgainSoonReopensItsIncident(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{InsertOnly: true, SilentAfter: 30 * time.Second})
		o := r.rtxOffer()
		cred, err := r.rentals.Fleet().IssueCredential(r.ctx, o.NodeID)
		if err != nil {
			t.Fatal(err)
		}
		host := nodeHost(t, db, o.NodeID)
		beat := func() {
			t.Helper()
			if _, err := r.rentals.Fleet().Heartbeat(r.ctx, cred, agent.Heartbeat{AgentVersion: "test", Launcher: "simulated", Host: host}); err != nil {
				t.Fatal(err)
			}
		}
		silence := func() {
			t.Helper()
			r.clock.Advance(31 * time.Second)
			if _, err := r.rentals.Watch(r.ctx); err != nil {
				t.Fatal(err)
			}
		}
		count := func() (all, open int64) {
			t.Helper()
			q := func() *gorm.DB {
				return db.R.Model(&models.Incident{}).Where("node_id = ? AND kind = ?", o.NodeID, models.IncidentNodeSilent)
			}
			if err := q().Count(&all).Error; err != nil {
				t.Fatal(err)
			}
			if err := q().Where("closed_at IS NULL").Count(&open).Error; err != nil {
				t.Fatal(err)
			}
			return all, open
		}
		beat()
		silence()
		all, open := count()
		holds(t, all == 1 && open == 1, "silent: %d incidents, %d open; want 1 open", all, open)
		beat()
		all, open = count()
		holds(t, all == 1 && open == 0, "heard again: %d incidents, %d open; want it closed", all, open)
		silence()
		all, open = count()
		holds(t, all == 1 && open == 1, "silent again %s later: %d incidents, %d open; want the one reopened", 31*time.Second, all, open)

		beat()
		r.clock.Advance(fleet.FlapWindow)
		beat()
		silence()
		all, open = count()
		holds(t, all == 2 && open == 1, "silent after %s heard: %d incidents, %d open; want a second one", fleet.FlapWindow, all, open)
	})
}
