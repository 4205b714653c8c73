package rentals_test

import (
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/providers"
	"suanli/sla"
)

// A removed node's agent is turned away, so it falls silent: that is its
// retirement, not an outage. No incident opens for it, and the
// datacentre's uptime is its remaining nodes'.
func TestRemovedNodeIsNotAnOutage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		gone, tok := f.addNode("gpu-host-1")
		f.report(tok, "dgxa100")
		kept, tok2 := f.addNode("gpu-host-2")
		f.report(tok2, "dgxa100")
		if err := f.p.SetNodeStatus(f.ctx, f.owner, f.acc.Provider.ID, gone.ID, providers.NodeRemove); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Minute)
		f.markNodeAlive(kept.ID) // the kept node is still heard from
		if _, err := f.rentals.Watch(f.ctx); err != nil {
			t.Fatal(err)
		}
		var n models.Node
		db.R.First(&n, gone.ID)
		if n.Health != models.NodeSilent {
			t.Errorf("the removed node's health is %s, want silent", n.Health)
		}
		var incidents int64
		db.R.Model(&models.Incident{}).Where("node_id = ?", gone.ID).Count(&incidents)
		if incidents != 0 {
			t.Errorf("%d incident(s) opened for a removed node", incidents)
		}
		f.clock.Advance(time.Hour)
		f.markNodeAlive(kept.ID)
		if _, err := sla.RefreshUptime(f.ctx, db); err != nil {
			t.Fatal(err)
		}
		u, err := sla.DatacenterUptime(f.ctx, db, f.dc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Nodes != 1 || u.GPUs != 8 || u.Pct != 100 {
			t.Errorf("datacentre uptime %+v, want node %d alone at 100%%", u, kept.ID)
		}
	})
}
