package rentals_test

import (
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/pricing"
	"suanli/rentals"
)

// A term with auto-renew on a node its provider is draining ends at the
// term's end instead of renewing (a renewal is a new rental, which a
// draining node does not take), so the node can drain; nothing more is
// charged and the timeline says why.
func TestTermOnADrainingNodeIsNotRenewed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{SilentAfter: 365 * 24 * time.Hour})
		o := r.rtxOffer()
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.Term, in.AutoRenew = pricing.Week, true })
		run := r.waitStatus(rt.ID, models.RentalRunning)
		r.quiet()
		if err := db.W.Model(&models.Node{}).Where("id = ?", o.NodeID).Update("status", models.NodeDraining).Error; err != nil {
			t.Fatal(err)
		}
		r.clock.Set(run.EndsAt.Add(time.Second))
		res, err := r.rentals.Watch(r.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Renewed != 0 {
			t.Errorf("health pass %+v: a term on a draining node renewed", res)
		}
		over := r.waitStatus(rt.ID, models.RentalStopped)
		if n := len(r.txns(rt.ID)); n != 1 || over.StopReason != "term ended" || len(r.heldGPUs(rt.ID)) != 0 {
			t.Errorf("ended on a draining node: %d transactions, stop reason %q, %d GPUs held; want the one term charge, term ended, none held",
				n, over.StopReason, len(r.heldGPUs(rt.ID)))
		}
		if e := r.event(rt.ID, "not_renewed"); e.Detail != rentals.DetailNodeRetiring {
			t.Errorf("not_renewed event says %q, want %q", e.Detail, rentals.DetailNodeRetiring)
		}
		r.checkLedger()
	})
}
