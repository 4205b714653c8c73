package rentals_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/models"
	"suanli/rentals"
	"suanli/volumes"
)

// volume reads a volume afresh.
func (r *rig) volume(id int64) models.Volume {
	r.t.Helper()
	var v models.Volume
	if err := r.db.R.First(&v, id).Error; err != nil {
		r.t.Fatal(err)
	}
	return v
}

// tasksOf lists the agent tasks of a kind sent to a node.
func (r *rig) tasksOf(nodeID int64, kind string) []agent.Task {
	r.t.Helper()
	var rows []models.AgentTask
	if err := r.db.R.Where("node_id = ? AND kind = ?", nodeID, kind).Order("id").Find(&rows).Error; err != nil {
		r.t.Fatal(err)
	}
	out := make([]agent.Task, len(rows))
	for i, row := range rows {
		if err := json.Unmarshal([]byte(row.Payload), &out[i]); err != nil {
			r.t.Fatal(err)
		}
	}
	return out
}

// volumeCharges sums what the ledger charged the wallet for a volume.
func (r *rig) volumeCharges(v models.Volume) int64 {
	r.t.Helper()
	var sum int64
	if err := r.db.R.Raw(`SELECT COALESCE(SUM(-e.amount_fen), 0) FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
		JOIN ledger_accounts a ON a.id = e.account_id WHERE t.memo = ? AND a.kind = 'wallet'`, "volume #"+itoa(v.ID)+" storage").Scan(&sum).Error; err != nil {
		r.t.Fatal(err)
	}
	return sum
}

// storagePayable sums what a volume's storage gave its provider.
func (r *rig) storagePayable(volumeID int64) int64 {
	r.t.Helper()
	var sum int64
	if err := r.db.R.Raw(`SELECT COALESCE(SUM(e.amount_fen), 0) FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
		JOIN ledger_accounts a ON a.id = e.account_id WHERE t.memo = ? AND a.kind = 'provider_payable'`, "volume #"+itoa(volumeID)+" storage").Scan(&sum).Error; err != nil {
		r.t.Fatal(err)
	}
	return sum
}

// isField reports whether err is a validation error of the field.
func isField(err error, field string) bool {
	var e *apperr.Error
	return errors.As(err, &e) && e.Code == apperr.EINVALID && e.Field == field
}

func TestAVolumeOutlivesStopIsBilledAsStorageAndGoesWithRelease(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		o := r.rtxOffer()
		node := r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		// The agent holds its results until the volume was read: read
		// after the launch, it would be active already.
		node.Pause()
		rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.VolumeGB = 20; in.Image = "debian-sshd" })
		if rt.VolumeID == nil {
			t.Fatal("the rental has no volume")
		}
		if v := r.volume(*rt.VolumeID); v.Status != models.VolumePending || v.SizeGB != 20 || v.BilledUntil != nil {
			t.Fatalf("before it runs the volume is %+v, want pending, 20 GB, unbilled", v)
		}
		node.Resume()
		run := r.waitStatus(rt.ID, models.RentalRunning)
		v := r.volume(*rt.VolumeID)
		if v.Status != models.VolumeActive || v.NodeID == nil || *v.NodeID != o.NodeID || v.BilledUntil == nil || !v.BilledUntil.Equal(*run.BilledUntil) {
			t.Fatalf("running: volume %+v, want active on node %d billed from %v", v, o.NodeID, run.BilledUntil)
		}
		launches := r.tasksOf(o.NodeID, agent.TaskLaunch)
		if len(launches) != 1 || launches[0].WorkspaceID != v.WorkspaceKey || launches[0].VolumeGB != 20 || launches[0].Image != "suanli-test/sshd:bookworm" ||
			launches[0].Limits == nil || launches[0].Limits.CPUs != o.VCPUPerGPU || launches[0].Limits.MemoryMiB != int64(o.RAMGBPerGPU)*1024 {
			t.Fatalf("launch tasks %+v, want one with the volume, image and the offer's limits", launches)
		}

		// Stop: GPUs billed no more, the volume kept with a deletion date.
		stopped := r.stop(rt.ID)
		v = r.volume(*rt.VolumeID)
		if v.Status != models.VolumeActive || v.DeleteAfter == nil {
			t.Fatalf("stopped: volume %+v, want active with a deletion date", v)
		}
		if want := stopped.UpdatedAt.Add(volumes.DefaultKeepDays * 24 * time.Hour); v.DeleteAfter.Sub(want).Abs() > time.Second {
			t.Errorf("deleted after %v, want %v", v.DeleteAfter, want)
		}
		gpuFen := r.rental(rt.ID).BilledFen

		// A day later the meter bills the day's storage, and no GPU time.
		day := r.clock.Advance(24 * time.Hour)
		r.meter()
		v = r.volume(*rt.VolumeID)
		wantFen := (20 * v.PricePerGBMonthFen * int64(day.Truncate(time.Second).Sub(run.BilledUntil.UTC()).Seconds())) / models.StorageSecondsPerMonth
		if v.BilledFen != wantFen || r.volumeCharges(v) != wantFen || wantFen == 0 {
			t.Errorf("storage billed %d (ledger %d), want %d", v.BilledFen, r.volumeCharges(v), wantFen)
		}
		if got := r.rental(rt.ID).BilledFen; got != gpuFen {
			t.Errorf("GPU billing went on after the stop: %d → %d", gpuFen, got)
		}
		r.checkLedger()

		// Start again: same node, same volume, the deletion date gone.
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{}); err != nil {
			t.Fatal(err)
		}
		again := r.waitStatus(rt.ID, models.RentalRunning)
		if again.NodeID == nil || *again.NodeID != o.NodeID || *again.VolumeID != v.ID {
			t.Fatalf("started on node %v with volume %v, want node %d and volume %d", again.NodeID, again.VolumeID, o.NodeID, v.ID)
		}
		if v = r.volume(v.ID); v.DeleteAfter != nil {
			t.Errorf("a started rental's volume still has a deletion date %v", v.DeleteAfter)
		}
		if l := r.tasksOf(o.NodeID, agent.TaskLaunch); len(l) != 2 || l[1].WorkspaceID != v.WorkspaceKey {
			t.Errorf("launch tasks %+v, want a second one with the same volume", l)
		}

		// Release with the volume: deleted on the node, billed no more.
		rel, err := r.rentals.Release(r.ctx, rt.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if rel.ReleasedAt == nil {
			t.Fatal("not released")
		}
		v = r.volume(v.ID)
		if v.Status != models.VolumeDeleted || v.DeletedAt == nil {
			t.Fatalf("released with its volume: volume %+v, want deleted", v)
		}
		dels := r.tasksOf(o.NodeID, agent.TaskDeleteVolume)
		if len(dels) != 1 || dels[0].WorkspaceID != v.WorkspaceKey {
			t.Fatalf("delete tasks %+v, want one for %s", dels, v.WorkspaceKey)
		}
		r.waitStatus(rt.ID, models.RentalStopped)
		billed := v.BilledFen
		r.clock.Advance(24 * time.Hour)
		r.meter()
		if got := r.volume(v.ID).BilledFen; got != billed {
			t.Errorf("a deleted volume was billed on: %d → %d", billed, got)
		}
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{}); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("starting a released rental: %v, want a conflict", err)
		}
		r.checkLedger()
	})
}

func TestAStoppedRentalsVolumeIsDeletedAfterItsDaysWithMailsBefore(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		o := r.rtxOffer()
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 1)
		r.waitStatus(rt.ID, models.RentalRunning)
		r.stop(rt.ID)
		mails := func() int64 {
			var n int64
			r.db.R.Model(&models.OutboxMail{}).Where("to_addr = ? AND subject LIKE ?", r.user.Email, "%"+itoa(*rt.VolumeID)+"%").Count(&n)
			return n
		}
		r.clock.Advance(4*24*time.Hour + time.Hour) // 3 days less an hour before deletion
		if res := r.meter(); res.VolumesDeleted != 0 || mails() != 1 {
			t.Fatalf("4 days after the stop: %d deleted, %d mails; want 0 and the 3-day mail", res.VolumesDeleted, mails())
		}
		r.meter()
		if mails() != 1 {
			t.Errorf("the 3-day mail went %d times", mails())
		}
		r.clock.Advance(2 * 24 * time.Hour) // within the last day
		r.meter()
		if mails() != 2 {
			t.Errorf("%d mails within the last day, want the 3-day and the 1-day ones", mails())
		}
		r.clock.Advance(24 * time.Hour)
		if res := r.meter(); res.VolumesDeleted != 1 {
			t.Fatalf("after the days: %d deleted, want 1", res.VolumesDeleted)
		}
		v := r.volume(*rt.VolumeID)
		if v.Status != models.VolumeDeleted || v.DeleteReason == "" {
			t.Errorf("volume %+v, want deleted with its reason", v)
		}
		if d := r.tasksOf(o.NodeID, agent.TaskDeleteVolume); len(d) != 1 || d[0].WorkspaceID != v.WorkspaceKey {
			t.Errorf("delete tasks %+v", d)
		}
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{}); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("starting without a volume: %v, want a conflict", err)
		}
		r.checkLedger()
	})
}

func TestAKeptVolumeMountsInTheNextRentalAndOnlyOne(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		o := r.rtxOffer()
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		first := r.mustRent(o.ID, 1)
		r.waitStatus(first.ID, models.RentalRunning)
		if _, err := r.rentals.Release(r.ctx, first.ID, false); err != nil {
			t.Fatal(err)
		}
		r.waitStatus(first.ID, models.RentalStopped)
		v := r.volume(*first.VolumeID)
		if v.Status != models.VolumeActive || v.DeleteAfter != nil {
			t.Fatalf("kept on release: %+v, want active with no deletion date", v)
		}
		second := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.VolumeID = v.ID })
		if *second.VolumeID != v.ID {
			t.Fatalf("second rental's volume %d, want %d", *second.VolumeID, v.ID)
		}
		r.waitStatus(second.ID, models.RentalRunning)
		if l := r.tasksOf(o.NodeID, agent.TaskLaunch); l[len(l)-1].WorkspaceID != v.WorkspaceKey {
			t.Errorf("the second rental launched with %q, want the kept volume %q", l[len(l)-1].WorkspaceID, v.WorkspaceKey)
		}
		_, err := r.rent(o.ID, 1, func(in *rentals.RentInput) { in.VolumeID = v.ID })
		if !isField(err, "volume_id") {
			t.Errorf("a third rental on the same volume: %v, want volume_id refused", err)
		}
		if _, err := r.rent(o.ID, 1, func(in *rentals.RentInput) { in.VolumeID = v.ID + 1000 }); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("someone else's volume: %v, want refused", err)
		}
		if err := r.rentals.Volumes().Remove(r.ctx, r.org.ID, v.ID, "test"); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("deleting a volume in use: %v, want a conflict", err)
		}
		r.checkLedger()
	})
}

func TestPullProgressShowsWhileTheLaunchRuns(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{InsertOnly: true})
		o := r.rtxOffer()
		r.markNodeAlive(o.NodeID)
		rt := r.mustRent(o.ID, 1)
		var taskID int64
		if err := db.Tx(r.ctx, func(tx *gorm.DB) error {
			if err := tx.Model(&models.Rental{}).Where("id = ?", rt.ID).Update("status", models.RentalProvisioning).Error; err != nil {
				return err
			}
			var err error
			taskID, err = fleet.EnqueueTask(tx, o.NodeID, &rt.ID, "progress-test", agent.Task{Kind: agent.TaskLaunch, RentalID: rt.ID}, r.clock.Now())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := r.rentals.TaskProgress(r.ctx, o.NodeID, taskID, agent.Progress{Stage: "pull", Pct: 45}); err != nil {
			t.Fatal(err)
		}
		d, err := r.rentals.Detail(r.ctx, rt.ID)
		if err != nil || d.Progress == nil || d.Progress.Pct != 45 {
			t.Fatalf("detail progress %+v %v, want pull 45 %%", d.Progress, err)
		}
		if err := r.rentals.TaskProgress(r.ctx, o.NodeID+1000, taskID, agent.Progress{Stage: "pull", Pct: 50}); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("another node's progress: %v, want not found", err)
		}
		if err := r.rentals.TaskProgress(r.ctx, o.NodeID, taskID, agent.Progress{Stage: "pull", Pct: 101}); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("101 %%: %v, want invalid", err)
		}
	})
}
