package rentals_test

import (
	"math"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/sla"
)

// A node's 30-day uptime counts its silence whole and a failing GPU as its
// share of the node, without counting both at once.
func TestNodeUptimeFromIncidents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newSLAFixture(t, db)
		now := sh(2026, 12, 1, 12, 0)
		*f.now = now
		var nodes []models.Node
		if err := db.R.Where("datacenter_id = (SELECT datacenter_id FROM nodes WHERE id = ?)", f.offer.NodeID).Order("id").Find(&nodes).Error; err != nil {
			t.Fatal(err)
		}
		a := nodes[0]
		var gpus []models.GPU
		db.R.Where("node_id = ?", a.ID).Order("idx").Find(&gpus)
		g := len(gpus)
		if g == 0 {
			t.Fatal("the node has no GPUs")
		}
		old := now.AddDate(0, 0, -60)
		if err := db.W.Model(&models.Node{}).Where("datacenter_id = ?", a.DatacenterID).
			Updates(map[string]any{"created_at": old, "last_heartbeat_at": now}).Error; err != nil {
			t.Fatal(err)
		}
		closed := func(t0 time.Time, d time.Duration) *time.Time { c := t0.Add(d); return &c }
		t10 := now.AddDate(0, 0, -10)
		incs := []models.Incident{
			{NodeID: a.ID, Kind: models.IncidentNodeSilent, OpenedAt: t10, ClosedAt: closed(t10, time.Hour)},
			// Outside the window: ignored.
			{NodeID: a.ID, Kind: models.IncidentNodeSilent, OpenedAt: now.AddDate(0, 0, -40), ClosedAt: closed(now.AddDate(0, 0, -40), 5*time.Hour)},
			// One GPU failing for 2 h, the first of them while the node was silent.
			{NodeID: a.ID, GPUID: gpus[0].ID, Kind: models.IncidentGPUFailing, OpenedAt: t10, ClosedAt: closed(t10, 2*time.Hour)},
		}
		if err := db.W.Create(&incs).Error; err != nil {
			t.Fatal(err)
		}
		n, err := sla.RefreshUptime(f.ctx, db)
		if err != nil || n < len(nodes) {
			t.Fatalf("refreshed %d nodes: %v", n, err)
		}
		window := 30 * 24 * 3600.0
		want := 100 * (1 - (float64(g)*3600+3600)/(float64(g)*window))
		var got models.Node
		db.R.First(&got, a.ID)
		if got.Uptime30dPct == nil || math.Abs(*got.Uptime30dPct-want) > 1e-9 || got.UptimeUpdatedAt == nil {
			t.Fatalf("node uptime %v (%v), want %.9f", got.Uptime30dPct, ptrf(got.Uptime30dPct), want)
		}
		// The silence alone: (30 d − 1 h) / 30 d.
		if only := sla.NodeUptimePct(a.ID, g, incs[:2], now.Add(-sla.UptimeWindow), now); math.Abs(only-(window-3600)/window*100) > 1e-9 {
			t.Errorf("silence only: %.9f", only)
		}
		// A node younger than 30 days: its life is the window.
		young := sla.NodeUptimePct(a.ID, g, incs[:1], t10.Add(-23*time.Hour), now)
		if life := now.Sub(t10.Add(-23 * time.Hour)).Seconds(); math.Abs(young-(life-3600)/life*100) > 1e-9 {
			t.Errorf("young node: %.9f", young)
		}
		// The datacentre: its nodes' GPU-weighted average.
		up, err := sla.DatacenterUptime(f.ctx, db, a.DatacenterID)
		if err != nil {
			t.Fatal(err)
		}
		var sum, total float64
		for _, nd := range nodes {
			var cnt int64
			db.R.Model(&models.GPU{}).Where("node_id = ?", nd.ID).Count(&cnt)
			pct := 100.0
			if nd.ID == a.ID {
				pct = want
			}
			sum += pct * float64(max(cnt, 1))
			total += float64(max(cnt, 1))
		}
		if up.Nodes != len(nodes) || math.Abs(up.Pct-sum/total) > 1e-9 {
			t.Errorf("datacentre uptime %+v, want %.9f from %d nodes", up, sum/total, len(nodes))
		}
	})
}

func ptrf(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
