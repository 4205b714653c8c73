package rentals_test

import (
	"slices"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/gpu"
	"suanli/launch"
	"suanli/models"
	"suanli/models/launchstore"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/volumes"
)

// launchService is the launch use case over the rig's rentals, with the
// platform key's box and an offer index read now.
func (r *rig) launchService() *launch.Service {
	r.t.Helper()
	ix := offers.NewIndex(r.db)
	if _, err := ix.Refresh(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	return &launch.Service{DB: r.db, Index: ix, Renter: r.rentals, Box: r.rentals.Credentials}
}

// launchInput is a rent of the renter's personal organisation, on demand.
func (r *rig) launchInput() rentals.RentInput {
	return rentals.RentInput{OrgID: r.org.ID, SLA: "standard", Term: pricing.OnDemand, SSHPublicKey: sshKey(r.t)}
}

// heldOn counts the GPUs the rental has ever held on the node.
func (r *rig) heldOn(rentalID, nodeID int64) int64 {
	r.t.Helper()
	var n int64
	if err := r.db.R.Model(&models.RentalGPU{}).Where("rental_id = ? AND node_id = ?", rentalID, nodeID).Count(&n).Error; err != nil {
		r.t.Fatal(err)
	}
	return n
}

// A launch by type told to avoid node B never lands on it: not when the
// NVML checks fail on the node it got first (A) and the next node of the
// datacentre is tried (B is the first in line, C is taken), and not when
// the rental is moved off a failing GPU later (nowhere left: it stops).
func TestLaunchExcludedNodesStayExcluded(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		o := r.rtxOffer()
		nodeB := r.addSibling(o, 4)
		var offerB models.Offer
		if err := db.R.Where("node_id = ?", nodeB).First(&offerB).Error; err != nil {
			t.Fatal(err)
		}
		nodeC := r.addSibling(offerB, 4)
		// Only these three offers of the model, A the cheapest: the launch
		// gets A, and after A the datacentre's nodes in id order, B first.
		if err := db.W.Model(&models.Offer{}).Where("gpu_model = ? AND node_id NOT IN ?", o.GPUModel, []int64{o.NodeID, nodeB, nodeC}).
			Update("status", models.OfferPaused).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Model(&models.Offer{}).Where("node_id IN ?", []int64{nodeB, nodeC}).
			Update("price_per_gpu_hour_fen", o.PricePerGPUHourFen+100).Error; err != nil {
			t.Fatal(err)
		}
		a, b, c := r.startAgent(o.NodeID), r.startAgent(nodeB), r.startAgent(nodeC)
		r.waitReady(o.NodeID, nodeB, nodeC)
		// A's GPU 0 goes bad after its agent's last heartbeat: only the
		// checks can tell.
		a.Pause()
		if err := a.Sim.Inject(gpu.Fault{Kind: gpu.FaultECC, GPU: 0}); err != nil {
			t.Fatal(err)
		}
		typ, err := launch.ParseInstanceType("rtx-4090.1x")
		if err != nil {
			t.Fatal(err)
		}
		rt, err := r.launchService().Launch(r.ctx, r.user, r.org, r.member, r.launchInput(), launch.Spec{Name: "c1-head"},
			&launch.Target{Type: typ, ExcludeNodes: []int64{nodeB, nodeB, 1 << 40}})
		if err != nil {
			t.Fatal(err)
		}
		if rt.OfferID != o.ID {
			t.Fatalf("launched on offer %d, want A's %d", rt.OfferID, o.ID)
		}
		if got, err := launchstore.ExcludedNodes(db.R, rt.ID); err != nil || !slices.Equal(got, []int64{nodeB, 1 << 40}) {
			t.Fatalf("excluded nodes %v (%v), want [%d %d]", got, err, nodeB, int64(1<<40))
		}
		a.Resume()
		run := r.waitStatus(rt.ID, models.RentalRunning)
		if run.NodeID == nil || *run.NodeID != nodeC || run.Attempts != 2 {
			t.Fatalf("running on node %v after %d attempts, want C (%d) after 2; timeline:%s", run.NodeID, run.Attempts, nodeC, r.timeline(rt.ID))
		}

		// C's GPU fails: the move finds A (tried) and B (excluded) only.
		held := r.heldGPUs(rt.ID)[0]
		r.quiet()
		c.Pause()
		if err := db.W.Model(&models.GPU{}).Where("id = ?", held.ID).
			Updates(map[string]any{"health": models.GPUFailing, "reasons": "XID 79 (GPU has fallen off the bus)"}).Error; err != nil {
			t.Fatal(err)
		}
		if res, err := r.rentals.Watch(r.ctx); err != nil || res.Migrated != 1 {
			t.Fatalf("health pass %+v %v, want one migration", res, err)
		}
		c.Resume()
		stopped := r.waitStatus(rt.ID, models.RentalStopped)
		if stopped.StopReason != "no healthy node to move to" {
			t.Errorf("stop reason %q, want no healthy node", stopped.StopReason)
		}
		if n := r.heldOn(rt.ID, nodeB); n != 0 || slices.Contains(b.Launcher.Running(), rt.ID) {
			t.Errorf("the excluded node B held %d GPUs of the rental (running %v); timeline:%s", n, b.Launcher.Running(), r.timeline(rt.ID))
		}
	})
}

// A launch's environment and script go once the rental can never launch
// again: when its provisioning fails everywhere, and when a stopped
// rental's volume is deleted after its days; the name stays.
func TestLaunchSecretsForgottenWhenItCanNeverLaunch(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{Credentials: testBox(t)})
		o := r.rtxOffer()
		a := r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		spec := launch.Spec{Name: "job", Env: map[string]string{"API_KEY": "s3cret"}, Onstart: "echo hello"}
		sealed := func(id int64) (name string, env, onstart bool) {
			t.Helper()
			var row launchstore.Spec
			if err := db.R.Where("rental_id = ?", id).First(&row).Error; err != nil {
				t.Fatal(err)
			}
			return row.Name, row.SealedEnv != "", row.SealedOnstart != ""
		}
		in := r.launchInput()
		in.OfferID, in.GPUs = o.ID, 1

		// The checks fail on the only node: the rental fails, its secrets go.
		a.Pause()
		if err := a.Sim.Inject(gpu.Fault{Kind: gpu.FaultECC, GPU: 0}); err != nil {
			t.Fatal(err)
		}
		failed, err := r.launchService().Launch(r.ctx, r.user, r.org, r.member, in, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, env, onstart := sealed(failed.ID); !env || !onstart {
			t.Fatalf("the spec was not sealed: env %v, onstart %v", env, onstart)
		}
		a.Resume()
		r.waitStatus(failed.ID, models.RentalFailed)
		if name, env, onstart := sealed(failed.ID); name != "job" || env || onstart {
			t.Errorf("a failed rental keeps name %q, env %v, onstart %v; want the name only", name, env, onstart)
		}

		// Stopped, and its volume deleted after the days: the same.
		kept, err := r.launchService().Launch(r.ctx, r.user, r.org, r.member, in, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.waitStatus(kept.ID, models.RentalRunning)
		r.stop(kept.ID)
		if _, env, onstart := sealed(kept.ID); !env || !onstart {
			t.Fatalf("a stopped rental lost its spec: env %v, onstart %v", env, onstart)
		}
		r.clock.Advance(time.Duration(volumes.DefaultKeepDays+1) * 24 * time.Hour)
		if res := r.meter(); res.VolumesDeleted != 1 {
			t.Fatalf("%d volumes deleted after the days, want 1", res.VolumesDeleted)
		}
		if name, env, onstart := sealed(kept.ID); name != "job" || env || onstart {
			t.Errorf("a rental without its volume keeps name %q, env %v, onstart %v; want the name only", name, env, onstart)
		}
	})
}
