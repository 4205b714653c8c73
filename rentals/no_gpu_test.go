package rentals_test

import (
	"strings"
	"testing"
	"time"

	"suanli/agent"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
	"suanli/pricing"
	"suanli/rentals"
)

// startErr is Start's refusal as the renter reads it (English).
func startErr(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestNoGPUModeRunsTheContainerWithoutGPUsAtItsOwnPrice(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{SilentAfter: 10 * time.Second})
		o := r.rtxOffer()
		node := r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.VolumeGB = 10 })
		r.waitStatus(rt.ID, models.RentalRunning)
		r.stop(rt.ID)
		// Someone else takes every GPU of the node, where the files are.
		other := r.mustRent(o.ID, o.MaxGPUs)
		r.waitStatus(other.ID, models.RentalRunning)

		_, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{})
		if apperr.Code(err) != apperr.ENOCAPACITY || !strings.Contains(startErr(err), "no-GPU mode (¥0.1 an hour)") {
			t.Fatalf("start with no free GPUs: %v, want no_capacity offering no-GPU mode", err)
		}
		if got := r.rental(rt.ID); got.Status != models.RentalStopped || got.NoGPU {
			t.Fatalf("a refused start changed the rental: %+v", got)
		}

		// No-GPU mode: the same node and volume, no GPUs, the no-GPU price.
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{NoGPU: true}); err != nil {
			t.Fatal(err)
		}
		run := r.waitStatus(rt.ID, models.RentalRunning)
		if !run.NoGPU || run.NoGPUPricePerHourFen != o.NoGPUPricePerHourFen || run.NodeID == nil || *run.NodeID != o.NodeID || *run.VolumeID != *rt.VolumeID {
			t.Fatalf("no-GPU start: %+v, want no_gpu at %d fen an hour on node %d with volume %d", run, o.NoGPUPricePerHourFen, o.NodeID, *rt.VolumeID)
		}
		if held := r.heldGPUs(rt.ID); len(held) != 0 {
			t.Fatalf("a no-GPU rental holds GPUs %+v", held)
		}
		l := r.tasksOf(o.NodeID, agent.TaskLaunch)
		last := l[len(l)-1]
		if last.RentalID != rt.ID || !last.NoGPU || len(last.GPUUUIDs) != 0 || last.WorkspaceID != r.volume(*rt.VolumeID).WorkspaceKey {
			t.Fatalf("the no-GPU launch task %+v, want no GPUs, no_gpu and the rental's volume", last)
		}
		if ev := r.event(rt.ID, "running_no_gpu"); ev.ID == 0 {
			t.Errorf("no running_no_gpu event: %s", r.timeline(rt.ID))
		}
		if d, err := r.rentals.Detail(r.ctx, rt.ID); err != nil || d.Checks != nil || d.RateFenPerHour != pricing.HourFen(run.Rate(), d.At) || d.RateFenPerHour > o.NoGPUPricePerHourFen {
			t.Fatalf("detail in no-GPU mode: %+v %v, want no checks and the no-GPU rate", d, err)
		}

		// An hour is billed at the no-GPU price, with the off-peak discount
		// of the instants it covers.
		before := r.rental(rt.ID)
		r.clock.Advance(time.Hour)
		r.markNodeAlive(o.NodeID)
		r.meter()
		after := r.rental(rt.ID)
		want, _ := pricing.Accrue(before.Rate(), *before.BilledUntil, *after.BilledUntil, before.CarryNum)
		if got := after.BilledFen - before.BilledFen; got != want || want == 0 || want > o.NoGPUPricePerHourFen {
			t.Errorf("an hour in no-GPU mode billed %d fen, want %d (at most %d)", got, want, o.NoGPUPricePerHourFen)
		}
		r.checkLedger()

		// The node goes silent: a no-GPU rental stops, it is not moved.
		node.Pause()
		r.clock.Advance(12 * time.Second)
		if _, err := r.rentals.Watch(r.ctx); err != nil {
			t.Fatal(err)
		}
		cur := r.rental(rt.ID)
		if cur.Status != models.RentalStopping || !strings.Contains(cur.StopReason, "not moved") {
			t.Fatalf("no-GPU rental on a silent node: %s (%q), want stopping, not moved", cur.Status, cur.StopReason)
		}
		billed := cur.BilledFen
		r.clock.Advance(rentals.StopGrace + time.Second)
		if _, err := r.rentals.Watch(r.ctx); err != nil {
			t.Fatal(err)
		}
		r.waitStatus(rt.ID, models.RentalStopped)
		node.Resume()
		r.waitHeartbeat(o.NodeID, r.clock.Now())

		// With GPUs free again, a normal start leaves no-GPU mode.
		r.stop(other.ID)
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{}); err != nil {
			t.Fatal(err)
		}
		back := r.waitStatus(rt.ID, models.RentalRunning)
		if back.NoGPU || len(r.heldGPUs(rt.ID)) != 1 || back.BilledFen != billed {
			t.Fatalf("started with GPUs: %+v holding %d GPUs, want no_gpu cleared, 1 GPU, nothing billed meanwhile (%d)", back, len(r.heldGPUs(rt.ID)), billed)
		}
		if rateOf(back) != back.Rate() {
			t.Errorf("back with GPUs the rate is %+v, want the GPU rate %+v", back.Rate(), rateOf(back))
		}

		// A switch or resize of a rental last started without GPUs takes GPUs.
		r.stop(rt.ID)
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{NoGPU: true}); err != nil {
			t.Fatal(err)
		}
		r.waitStatus(rt.ID, models.RentalRunning)
		r.stop(rt.ID)
		if _, err := r.rentals.Change(r.ctx, r.user, r.org, r.member, rt.ID, rentals.ChangeInput{GPUs: 2}); err != nil {
			t.Fatal(err)
		}
		resized := r.waitStatus(rt.ID, models.RentalRunning)
		if resized.NoGPU || len(r.heldGPUs(rt.ID)) != 2 {
			t.Errorf("resized after a no-GPU run: no_gpu %v holding %d GPUs, want GPUs (2)", resized.NoGPU, len(r.heldGPUs(rt.ID)))
		}
		r.checkLedger()
	})
}

func TestALocalRentalThatMovedStartsOnItsOldNodeWithItsFilesOnceTheNodeIsBack(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{SilentAfter: 10 * time.Second})
		o := r.rtxOffer() // Chengdu Hi-tech Zone: local storage
		sib := r.addSibling(o, 2)
		first := r.startAgent(o.NodeID)
		r.startAgent(sib)
		r.waitReady(o.NodeID, sib)
		rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.VolumeGB = 10 })
		r.waitStatus(rt.ID, models.RentalRunning)
		old := r.volume(*rt.VolumeID)

		first.Pause()
		r.clock.Advance(12 * time.Second)
		r.markNodeAlive(sib)
		if _, err := r.rentals.Watch(r.ctx); err != nil {
			t.Fatal(err)
		}
		r.eventually("the rental runs on the sibling", func() bool {
			cur := r.rental(rt.ID)
			return cur.Status == models.RentalRunning && cur.NodeID != nil && *cur.NodeID == sib
		})
		moved := r.rental(rt.ID)
		if *moved.VolumeID == old.ID {
			t.Fatal("a local volume followed the rental to another node")
		}
		if v := r.volume(old.ID); v.Status != models.VolumeActive || v.LeftByRentalID == nil || *v.LeftByRentalID != rt.ID {
			t.Fatalf("the volume left behind: %+v, want active, left by rental %d", v, rt.ID)
		}
		d, err := r.rentals.Detail(r.ctx, rt.ID)
		if err != nil || d.LeftVolume == nil || d.LeftVolume.ID != old.ID || d.LeftNodeUp || d.StartableOnLeft() {
			t.Fatalf("detail while the old node is down: %+v %v", d, err)
		}
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{VolumeID: old.ID}); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("starting a running rental on its old volume: %v, want a conflict", err)
		}
		r.stop(rt.ID)
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{VolumeID: old.ID}); apperr.Code(err) != apperr.ECONFLICT ||
			!strings.Contains(startErr(err), "not reachable") {
			t.Fatalf("starting on the old node while it is down: %v, want a conflict saying so", err)
		}

		// The old node is back: the page offers it, and the start goes there with the files.
		first.Resume()
		r.markNodeAlive(o.NodeID)
		if d, err = r.rentals.Detail(r.ctx, rt.ID); err != nil || !d.LeftNodeUp || !d.StartableOnLeft() {
			t.Fatalf("detail once the old node is back: %+v %v", d, err)
		}
		newer := *moved.VolumeID
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{VolumeID: old.ID}); err != nil {
			t.Fatal(err)
		}
		back := r.waitStatus(rt.ID, models.RentalRunning)
		if back.NodeID == nil || *back.NodeID != o.NodeID || *back.VolumeID != old.ID {
			t.Fatalf("started on node %v with volume %v, want node %d with volume %d", back.NodeID, back.VolumeID, o.NodeID, old.ID)
		}
		l := r.tasksOf(o.NodeID, agent.TaskLaunch)
		if last := l[len(l)-1]; last.RentalID != rt.ID || last.WorkspaceID != old.WorkspaceKey {
			t.Errorf("the launch on the old node: %+v, want the old volume %q", last, old.WorkspaceKey)
		}
		if v := r.volume(old.ID); v.LeftByRentalID != nil || v.DeleteAfter != nil {
			t.Errorf("the old volume mounted again: %+v, want no left-by and no deletion date", v)
		}
		if v := r.volume(newer); v.Status != models.VolumeActive || v.DeleteAfter != nil {
			t.Errorf("the volume made on the sibling: %+v, want kept (active) with no deletion date", v)
		}
		if d, err = r.rentals.Detail(r.ctx, rt.ID); err != nil || d.LeftVolume != nil {
			t.Errorf("after the start on its old node the rental still lists files left: %+v %v", d.LeftVolume, err)
		}
		// Another organisation's volume or one in use cannot be swapped in.
		r.stop(rt.ID)
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{VolumeID: old.ID + 1000}); !isField(err, "volume_id") {
			t.Errorf("an unknown volume: %v, want volume_id refused", err)
		}
		r.checkLedger()
	})
}

func TestALocalRentalWhoseMoveFindsNoNodeStopsWithTheVolumeHoldingItsFiles(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{SilentAfter: 10 * time.Second, VerifyTimeout: 20 * time.Second})
		o := r.rtxOffer() // local storage
		sib := r.addSibling(o, 2)
		first := r.startAgent(o.NodeID)
		second := r.startAgent(sib)
		r.waitReady(o.NodeID, sib)
		rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.VolumeGB = 10 })
		r.waitStatus(rt.ID, models.RentalRunning)
		old := *rt.VolumeID

		// The first node goes silent; the sibling takes the rental's GPUs
		// but never answers the checks.
		first.Pause()
		second.Pause()
		r.clock.Advance(12 * time.Second)
		r.markNodeAlive(sib)
		if _, err := r.rentals.Watch(r.ctx); err != nil {
			t.Fatal(err)
		}
		r.eventually("the move reserves the sibling's GPUs with a new volume", func() bool {
			cur := r.rental(rt.ID)
			return cur.Status == models.RentalMigrating && *cur.VolumeID != old && len(r.heldGPUs(rt.ID)) == 1
		})
		pending := *r.rental(rt.ID).VolumeID
		if v := r.volume(pending); v.Status != models.VolumePending {
			t.Fatalf("the new volume before it ran: %+v, want pending", v)
		}
		r.clock.Advance(21 * time.Second) // past the checks' timeout
		stopped := r.waitStatus(rt.ID, models.RentalStopped)
		if *stopped.VolumeID != old {
			t.Fatalf("stopped with volume %d, want the one holding its files (%d)", *stopped.VolumeID, old)
		}
		if v := r.volume(pending); v.Status != models.VolumeDeleted || v.BilledFen != 0 {
			t.Errorf("the never-run new volume: %+v, want deleted, unbilled", v)
		}
		if v := r.volume(old); v.LeftByRentalID != nil || v.DeleteAfter == nil {
			t.Errorf("the volume holding the files: %+v, want mounted again with the stopped rental's deletion date", v)
		}
		// Once its node is back it starts there, as any stopped rental.
		first.Resume()
		r.markNodeAlive(o.NodeID)
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{}); err != nil {
			t.Fatal(err)
		}
		if back := r.waitStatus(rt.ID, models.RentalRunning); *back.NodeID != o.NodeID || *back.VolumeID != old {
			t.Errorf("started on node %d with volume %d, want node %d with volume %d", *back.NodeID, *back.VolumeID, o.NodeID, old)
		}
		r.checkLedger()
	})
}
