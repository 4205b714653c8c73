package rentals

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/locales"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/volumes"
)

// launchTask is what a node is asked to run for the rental: its image,
// its volume at /workspace, the renter's key, exactly its GPUs, and the
// offer's CPU and memory per GPU as limits (shm half the memory, as
// PyTorch's data loaders need more than docker's 64 MB default).
// In no-GPU mode the task names no GPUs and says so (NoGPU), with the
// same limits.
func launchTask(r *models.Rental, v *models.Volume, o *models.Offer, uuids []string) agent.Task {
	t := agent.Task{Kind: agent.TaskLaunch, RentalID: r.ID, GPUUUIDs: uuids, WorkspaceID: r.WorkspaceKey(v),
		SSHPublicKey: r.SSHPublicKey, Image: r.Image, NoGPU: r.NoGPU}
	if v != nil {
		t.VolumeGB = v.SizeGB
	}
	if o != nil && (o.VCPUPerGPU > 0 || o.RAMGBPerGPU > 0) {
		mem := int64(o.RAMGBPerGPU) * int64(r.GPUs) * 1024
		t.Limits = &agent.Limits{CPUs: o.VCPUPerGPU * r.GPUs, MemoryMiB: mem, ShmMiB: mem / 2}
	}
	return t
}

// stopTaskOf asks, in tx, the rental's node to stop its container,
// keeping the volume (named as the node knows it).
func (s *Service) stopTaskOf(tx *gorm.DB, r *models.Rental) agent.Task {
	t := agent.Task{Kind: agent.TaskStop, RentalID: r.ID, WorkspaceID: r.WorkspaceID}
	if v, err := rentalVolume(tx, r); err == nil && v != nil {
		t.WorkspaceID = v.WorkspaceKey
	}
	return t
}

// volumeNode says, in tx, whether the rental can only run on one node:
// the node whose disk holds its active local volume, unless the rental
// is migrating (then it moves without its files; see volumeRunsOn).
func volumeNode(tx *gorm.DB, r *models.Rental) (int64, bool, error) {
	if r.Status == models.RentalMigrating {
		return 0, false, nil
	}
	v, err := rentalVolume(tx, r)
	if err != nil || v == nil || v.Shared() || v.Status != models.VolumeActive || v.NodeID == nil {
		return 0, false, err
	}
	return *v.NodeID, true, nil
}

// volumeRunsOn records, in tx, that the rental now runs on the node at
// sec: a pending volume becomes active (billed from sec) on that node; an
// active one notes the node. (A local volume never comes to another
// node's launch: volumeOnNode gave the rental a new one before it.)
func (s *Service) volumeRunsOn(tx *gorm.DB, r *models.Rental, nodeID int64, sec time.Time) error {
	v, err := rentalVolume(tx, r)
	if err != nil || v == nil {
		return err
	}
	if v.Status == models.VolumePending {
		return rentalstore.ActivateVolume(tx, v.ID, nodeID, sec)
	}
	if !v.Shared() && v.NodeID != nil && *v.NodeID != nodeID {
		return fmt.Errorf("rental %d: local volume %d is on node %d, not on node %d where it runs", r.ID, v.ID, *v.NodeID, nodeID)
	}
	return rentalstore.SetVolumeNode(tx, v.ID, nodeID)
}

// volumeOnNode is the volume the rental launches with on nodeID: its
// own, unless that is a local volume on another node's disk (a
// migration). Then, before the launch task names it, the rental gets a
// new empty volume, pending until it runs (volumeRunsOn activates it on
// the node it runs on), and the old one stays on its node, listed and
// billed as storage: the launch task names the volume the node really
// makes, not the old one's key.
func (s *Service) volumeOnNode(ctx context.Context, r *models.Rental, v *models.Volume, nodeID int64) (*models.Volume, error) {
	if v == nil || v.Shared() || v.Status != models.VolumeActive || v.NodeID == nil || *v.NodeID == nodeID {
		return v, nil
	}
	var nv *models.Volume
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := models.RentalForUpdate(tx, r.ID)
		if err != nil {
			return err
		}
		if cur.VolumeID == nil || *cur.VolumeID != v.ID {
			// Swapped already (a retried job): launch with that one.
			nv, err = rentalVolume(tx, &cur)
			return err
		}
		o, err := rentalstore.ReadOffer(tx, r.OfferID)
		if err != nil {
			return err
		}
		now := s.DB.Now().UTC()
		if nv, err = volumes.New(tx, &o, r.OrgID, r.UserID, v.SizeGB, "", volumes.NewKey(), now); err != nil {
			return err
		}
		// The price stays the one the renter agreed to for the old volume.
		nv.NodeID, nv.PricePerGBMonthFen = nil, v.PricePerGBMonthFen
		if err := rentalstore.InsertVolume(tx, nv); err != nil {
			return err
		}
		if err := rentalstore.SetRentalVolume(tx, r.ID, nv.ID); err != nil {
			return err
		}
		if err := rentalstore.SetVolumeLeftBy(tx, v.ID, &r.ID); err != nil {
			return err
		}
		return models.AddRentalEvent(tx, r.ID, now, "files_left", fmt.Sprintf("local storage: the files of volume #%d stay on node %d; new empty volume #%d", v.ID, *v.NodeID, nv.ID), nil,
			locales.M("event.files_left", v.ID, nodeLabel(tx, *v.NodeID), nv.ID))
	})
	if err != nil {
		return nil, err
	}
	r.VolumeID = &nv.ID
	return nv, nil
}

// remountLeftVolume undoes, in tx, volumeOnNode for a moving rental that
// found no node to run on: the new volume never ran and goes, unbilled,
// and the rental stops with the volume that holds its files again, so
// that it can start on their node once that is back.
func (s *Service) remountLeftVolume(tx *gorm.DB, r *models.Rental, now time.Time) error {
	v, err := rentalVolume(tx, r)
	if err != nil || v == nil || v.Status != models.VolumePending {
		return err
	}
	left, err := rentalstore.LeftVolumeTx(tx, r.ID)
	if err != nil || left == nil {
		return err
	}
	if _, err := rentalstore.MarkVolumeDeleted(tx, v.ID, "its rental never ran on another node", now); err != nil {
		return err
	}
	if err := rentalstore.SetRentalVolume(tx, r.ID, left.ID); err != nil {
		return err
	}
	if err := rentalstore.SetVolumeLeftBy(tx, left.ID, nil); err != nil {
		return err
	}
	r.VolumeID = &left.ID
	return models.AddRentalEvent(tx, r.ID, now, "volume_changed", fmt.Sprintf("volume #%d mounted again", left.ID), nil, locales.M("event.volume_back", left.ID))
}

// dropPendingVolume deletes, in tx, the volume made for a rental that
// never ran: it was never billed.
func (s *Service) dropPendingVolume(tx *gorm.DB, r *models.Rental, now time.Time) error {
	v, err := rentalVolume(tx, r)
	if err != nil || v == nil || v.Status != models.VolumePending {
		return err
	}
	_, err = rentalstore.MarkVolumeDeleted(tx, v.ID, "its rental never ran", now)
	return err
}
