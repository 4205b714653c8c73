package rentals_test

import (
	"strings"
	"testing"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
	"suanli/providers"
	"suanli/rentals"
)

// A switch or resize takes GPUs anew, so it obeys what renting obeys: no
// GPUs on a draining node, an offer still waiting for its node, or a
// suspended provider.
func TestChangeTakesGPUsOnlyWhereRentingMay(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		n, tok := f.addNode("gpu-host-1")
		f.report(tok, "dgxa100")
		o := f.mustOffer(f.offerInput(n.ID, "a100-40g-sxm"))
		waiting, _ := f.addNode("gpu-host-2") // never reports
		ow := f.mustOffer(f.offerInput(waiting.ID, "a100-40g-sxm"))
		if !ow.AwaitingNode {
			t.Fatalf("the offer of a node that never reported: %+v", ow)
		}
		// A rental that ran and stopped: its GPUs are free again.
		rt := f.mustRent(o.ID, 2)
		now := f.clock.Now()
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"UPDATE rental_gpus SET released_at = ? WHERE rental_id = ?", []any{now, rt.ID}},
			{"UPDATE gpus SET state = 'free' WHERE node_id = ?", []any{n.ID}},
			{"UPDATE rentals SET status = 'stopped', running_since = ?, stopped_at = ? WHERE id = ?", []any{now, now, rt.ID}},
		} {
			if err := db.W.Exec(q.sql, q.args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		change := func(in rentals.ChangeInput) error {
			_, err := f.rentals.Change(f.ctx, f.user, f.org, f.member, rt.ID, in)
			return err
		}
		pid := f.acc.Provider.ID

		if err := change(rentals.ChangeInput{OfferID: ow.ID}); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("switching to an offer waiting for its node: %v, want EINVALID", err)
		}
		if err := f.p.SetNodeStatus(f.ctx, f.owner, pid, n.ID, providers.NodeDrain); err != nil {
			t.Fatal(err)
		}
		if err := change(rentals.ChangeInput{GPUs: 2}); apperr.Code(err) != apperr.ECONFLICT || !strings.Contains(err.Error(), "draining") {
			t.Errorf("restarting on a draining node: %v, want a conflict that says draining", err)
		}
		if err := f.p.SetNodeStatus(f.ctx, f.owner, pid, n.ID, providers.NodeResume); err != nil {
			t.Fatal(err)
		}
		if err := f.accounts.SuspendOrg(f.ctx, f.admin, f.acc.Org.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if err := change(rentals.ChangeInput{GPUs: 2}); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("restarting on a suspended provider's offer: %v, want a conflict", err)
		}
		if got := f.rental(rt.ID); got.Status != models.RentalStopped || len(f.heldGPUs(rt.ID)) != 0 {
			t.Errorf("after refused changes the rental is %s holding %d GPUs", got.Status, len(f.heldGPUs(rt.ID)))
		}
		if err := f.accounts.UnsuspendOrg(f.ctx, f.admin, f.acc.Org.ID, ""); err != nil {
			t.Fatal(err)
		}
		if err := change(rentals.ChangeInput{GPUs: 2}); err != nil {
			t.Errorf("restarting on an active node of an approved provider: %v", err)
		}
	})
}
