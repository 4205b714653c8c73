package rentals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/bids"
	"suanli/fleet"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// StopReleased is the stop reason of a rental released while it ran.
const StopReleased = "released by the renter"

// StartInput is how a stopped rental starts again.
type StartInput struct {
	// NoGPU starts the container without GPUs (no-GPU mode, 无卡模式) at
	// the offer's no-GPU hourly price, for setup and data work: on the
	// node holding the files (local storage) or any healthy node of the
	// datacentre, its last node first (shared storage).
	NoGPU bool
	// Resume starts it only if it is (still) interrupted: the resume pass
	// must not start a rental its renter stopped meanwhile.
	Resume bool
	// VolumeID, when set, mounts that volume instead of the rental's
	// current one: the organisation's, active, in the rental's
	// datacentre and mounted by no other rental. This is how a rental
	// that moved without its files (local storage) starts on their node
	// again once the node is back.
	VolumeID int64
}

// Start starts a stopped (or interrupted) on-demand rental again with its volume: on the
// node that holds the volume's files (local storage), or on any node of
// the datacentre with free GPUs of the offer's model, its last node first
// (shared storage). The new GPUs pass the same NVML checks before the
// container starts; billing resumes from the second it runs. Without
// free GPUs where its files are, nothing changes and the error says so
// (and offers no-GPU mode).
func (s *Service) Start(ctx context.Context, u *models.User, org *models.Org, id int64, in StartInput) (*models.Rental, error) {
	r, err := s.DB.RentalByID(ctx, id)
	if err = s.gate(ctx, err, u, r.OrgID); err != nil {
		return nil, err
	}
	v, err := s.RentalVolume(ctx, &r)
	if err != nil {
		return nil, err
	}
	if in.VolumeID != 0 {
		if v, err = s.Volumes().Live(ctx, in.VolumeID); err != nil || v.OrgID != r.OrgID {
			if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
				return nil, err
			}
			return nil, apperr.Field("volume_id", "err.volume_unknown")
		}
	}
	if !r.Startable(v) {
		return nil, &apperr.Error{Code: apperr.ECONFLICT, Message: "only a stopped, unreleased on-demand rental whose volume still exists can start again", Key: "err.start_status"}
	}
	row, err := s.DB.OfferByID(ctx, r.OfferID)
	if err != nil {
		return nil, err
	}
	o := row.Offer
	now := s.DB.Now().UTC()
	next := r
	next.NoGPU, next.NoGPUPricePerHourFen = in.NoGPU, 0
	if in.NoGPU {
		next.NoGPUPricePerHourFen = o.NoGPUPricePerHourFen
	}
	if err := s.checkHourAhead(ctx, org, u, &r, next.Rate(), now); err != nil {
		return nil, err
	}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := models.RentalForUpdate(tx, id)
		if err != nil {
			return err
		}
		if in.VolumeID != 0 && (cur.VolumeID == nil || *cur.VolumeID != in.VolumeID) {
			if err := s.swapVolume(tx, &cur, &o, in.VolumeID, now); err != nil {
				return err
			}
		}
		cv, err := rentalVolume(tx, &cur)
		if err != nil {
			return err
		}
		if in.Resume && cur.Status != models.RentalInterrupted {
			return ErrNotInterrupted
		}
		if !cur.Startable(cv) {
			return &apperr.Error{Code: apperr.ECONFLICT, Message: "the rental changed meanwhile; try again", Key: "err.start_status"}
		}
		nodes := []int64{}
		switch {
		case !cv.Shared() && cv.NodeID != nil:
			nodes = append(nodes, *cv.NodeID)
		default:
			if cur.NodeID != nil {
				nodes = append(nodes, *cur.NodeID)
			}
			more, err := rentalstore.StartNodes(tx, &o, cur.ID)
			if err != nil {
				return err
			}
			nodes = append(nodes, more...)
		}
		nx := cur
		nx.Attempts = cur.Attempts + 1
		nx.NoGPU, nx.NoGPUPricePerHourFen = next.NoGPU, next.NoGPUPricePerHourFen
		if in.NoGPU {
			if err := startNoGPU(tx, &nx, cv, nodes, now); err != nil {
				return err
			}
		} else if err := s.startWithGPUs(ctx, tx, &nx, cv, &o, nodes, now); err != nil {
			return err
		}
		if err := rentalstore.SwitchRental(tx, &nx, models.RentalProvisioning, now); err != nil {
			return err
		}
		if err := rentalstore.SetVolumeDeleteAfter(tx, cv.ID, nil); err != nil {
			return err
		}
		ev, detail := locales.M("event.start_requested", cv.ID), fmt.Sprintf("volume #%d", cv.ID)
		if cur.Status == models.RentalInterrupted && !in.NoGPU {
			ev, detail = locales.M("bids.event.resuming", cv.ID), fmt.Sprintf("resuming with volume #%d", cv.ID)
		}
		if in.NoGPU {
			ev, detail = locales.M("event.start_no_gpu", cv.ID), fmt.Sprintf("volume #%d, no GPUs", cv.ID)
		}
		if err := models.AddRentalEvent(tx, id, now, "start_requested", detail, nil, ev); err != nil {
			return err
		}
		return s.enqueueProvision(ctx, tx, id)
	})
	if err != nil {
		return nil, err
	}
	slog.Info("rental starting", "rental", id, "no_gpu", in.NoGPU)
	out, err := s.DB.RentalByID(ctx, id)
	return &out, err
}

// startWithGPUs reserves, in tx, the rental's GPUs on the first of nodes
// that has them free, or where interruptible rentals give way to it
// (takeGPUs). Without any, the error names where the files are and offers
// no-GPU mode.
func (s *Service) startWithGPUs(ctx context.Context, tx *gorm.DB, r *models.Rental, v *models.Volume, o *models.Offer, nodes []int64, now time.Time) error {
	if !v.Shared() && v.NodeID != nil {
		// The files are on one node's disk: a node that is not back would
		// fail the checks and leave the rental nowhere to go.
		up, err := rentalstore.NodeUp(tx, *v.NodeID)
		if err != nil {
			return err
		}
		if !up {
			return filesNodeDown(tx, *v.NodeID)
		}
	}
	for _, n := range nodes {
		noFree := func(err error) bool { return errors.Is(err, ErrNoFreeGPUs) || errors.Is(err, bids.ErrOutbid) }
		err := models.Attempt(tx, fmt.Sprintf("start%d", n), func() error { return s.takeGPUs(ctx, tx, r, n, o.GPUModel, now) }, noFree)
		if noFree(err) {
			continue
		}
		return err
	}
	noGPU := pricing.FenToYuanString(o.NoGPUPricePerHourFen)
	if !v.Shared() && v.NodeID != nil {
		return &apperr.Error{Code: apperr.ENOCAPACITY, Message: fmt.Sprintf("no free GPUs on node %d, where this rental's files are (local storage); try again later, or start in no-GPU mode (¥%s an hour) to work on the files", *v.NodeID, noGPU),
			Key: "err.start_no_gpus_local", Args: []any{nodeLabel(tx, *v.NodeID), noGPU}}
	}
	return &apperr.Error{Code: apperr.ENOCAPACITY, Message: fmt.Sprintf("no free GPUs of this model in the datacentre right now; try again later, or start in no-GPU mode (¥%s an hour) to work on the files", noGPU),
		Key: "err.start_no_gpus", Args: []any{noGPU}}
}

// startNoGPU picks, in tx, the first of nodes that is up for a container
// without GPUs: nothing is reserved, and the rental holds no GPUs.
func startNoGPU(tx *gorm.DB, r *models.Rental, v *models.Volume, nodes []int64, now time.Time) error {
	for _, n := range nodes {
		up, err := rentalstore.NodeUp(tx, n)
		if err != nil {
			return err
		}
		if up {
			r.NodeID = &n
			return rentalstore.SetRentalNode(tx, r.ID, n, now)
		}
	}
	if !v.Shared() && v.NodeID != nil {
		return filesNodeDown(tx, *v.NodeID)
	}
	return &apperr.Error{Code: apperr.ECONFLICT, Message: "no node of the datacentre is reachable now; try again later", Key: "err.start_no_node"}
}

// filesNodeDown is the refusal to start where a local volume's node
// cannot be reached.
func filesNodeDown(tx *gorm.DB, nodeID int64) error {
	return &apperr.Error{Code: apperr.ECONFLICT, Message: fmt.Sprintf("node %d, where this rental's files are (local storage), is not reachable now; try again when it is back", nodeID),
		Key: "err.start_node_down", Args: []any{nodeLabel(tx, nodeID)}}
}

// swapVolume mounts, in tx, another volume of the organisation on the
// stopped rental r instead of its current one: active, in the offer's
// datacentre and mounted by no other rental. The one it replaces stays,
// listed and billed, with no deletion date (as after a release that keeps
// it), for its owner to delete or mount.
func (s *Service) swapVolume(tx *gorm.DB, r *models.Rental, o *models.Offer, volumeID int64, now time.Time) error {
	v, err := rentalstore.VolumeForUpdate(tx, volumeID)
	if err != nil || v.OrgID != r.OrgID || v.Status != models.VolumeActive {
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return err
		}
		return apperr.Field("volume_id", "err.volume_unknown")
	}
	// Another provider's volume would run the rental on that provider's
	// node at this one's price.
	if v.DatacenterID != o.DatacenterID || v.ProviderID != o.ProviderID {
		return apperr.Field("volume_id", "err.volume_datacenter")
	}
	if other, err := rentalstore.VolumeRental(tx, v.ID); err != nil || other != 0 {
		if err != nil {
			return err
		}
		return apperr.Field("volume_id", "err.volume_in_use", other)
	}
	old := r.VolumeID
	if err := rentalstore.SetRentalVolume(tx, r.ID, v.ID); err != nil {
		if ledger.IsUniqueViolation(err) {
			return apperr.Field("volume_id", "err.volume_in_use", 0)
		}
		return err
	}
	if err := rentalstore.SetVolumeLeftBy(tx, v.ID, nil); err != nil {
		return err
	}
	r.VolumeID = &v.ID
	detail := fmt.Sprintf("volume #%d mounted again", v.ID)
	msg := locales.M("event.volume_back", v.ID)
	if old != nil {
		if err := rentalstore.SetVolumeDeleteAfter(tx, *old, nil); err != nil {
			return err
		}
		detail += fmt.Sprintf("; volume #%d kept, unmounted", *old)
		msg = locales.M("event.volume_swapped", v.ID, *old)
	}
	return models.AddRentalEvent(tx, r.ID, now, "volume_changed", detail, nil, msg)
}

// termHolds reports whether a week or month term still keeps its GPUs
// at now: such a rental is stopped, not released, before its end.
func termHolds(r *models.Rental, now time.Time) bool {
	return r.Term != pricing.OnDemand && r.EndsAt != nil && r.EndsAt.After(now) && r.Status.Live()
}

// Releasable reports whether the user may release the rental now: its
// renter or an organisation admin (CanStop), not released or failed,
// and not a term that still keeps its GPUs.
func Releasable(r *models.Rental, u *models.User, m *models.Membership, now time.Time) bool {
	return CanStop(r, u, m) && !r.Released() && r.Status != models.RentalFailed && !termHolds(r, now)
}

// Release ends a rental for good: a running one is stopped (billing
// ends now, as with Stop), it can never start again, and with
// deleteVolume its volume is deleted on the node too; otherwise the
// volume stays, billed as storage, for another rental or a later
// deletion.
func (s *Service) Release(ctx context.Context, id int64, deleteVolume bool) (*models.Rental, error) {
	r, err := s.DB.RentalByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Released() {
		return &r, nil // releasing twice is fine
	}
	if termHolds(&r, s.DB.Now()) {
		return nil, &apperr.Error{Code: apperr.ECONFLICT, Message: "a week or month term keeps its GPUs to the term's end; stop it instead", Key: "err.release_term"}
	}
	if r.Status.CanStop() {
		if _, err := s.Stop(ctx, id, StopReleased); err != nil {
			return nil, err
		}
	}
	var wake int64
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := models.RentalForUpdate(tx, id)
		if err != nil {
			return err
		}
		if cur.Released() {
			return nil
		}
		now := s.DB.Now().UTC()
		if err := rentalstore.ReleaseRental(tx, id, now); err != nil {
			return err
		}
		// Released for good: its share links open nothing any more.
		if err := rentalstore.RevokeRentalPortShares(tx, id, now); err != nil {
			return err
		}
		v, err := rentalVolume(tx, &cur)
		if err != nil || v == nil || v.Status == models.VolumeDeleted {
			return err
		}
		if !deleteVolume {
			if err := models.AddRentalEvent(tx, id, now, "released", fmt.Sprintf("volume #%d kept", v.ID), nil, locales.M("event.released_kept", v.ID)); err != nil {
				return err
			}
			return rentalstore.SetVolumeDeleteAfter(tx, v.ID, nil)
		}
		if err := models.AddRentalEvent(tx, id, now, "released", fmt.Sprintf("volume #%d deleted", v.ID), nil, locales.M("event.released_deleted", v.ID)); err != nil {
			return err
		}
		wake, err = s.Volumes().DeleteTx(tx, v, id, "deleted with its rental's release", now)
		return err
	})
	if err != nil {
		return nil, err
	}
	if wake != 0 {
		s.Hub.Signal(fleet.NodeKey(wake))
	}
	out, err := s.DB.RentalByID(ctx, id)
	return &out, err
}

// checkHourAhead refuses to (re)start a rental at rate without an hour of
// it in the wallet, or beyond a spending limit (the rental's own spend
// excepted).
func (s *Service) checkHourAhead(ctx context.Context, org *models.Org, u *models.User, r *models.Rental, rate pricing.Rate, now time.Time) error {
	need := pricing.HourFen(rate, now)
	bal, err := ledger.WalletBalance(ctx, s.DB, r.OrgID)
	if err != nil {
		return err
	}
	if bal < need {
		return &apperr.Error{Code: apperr.EINSUFFICIENTFUNDS, Field: "balance", Message: fmt.Sprintf("this needs a balance of at least ¥%s (the balance is ¥%s): top up first", pricing.FenToYuanString(need), pricing.FenToYuanString(bal)),
			Key: "err.rent_balance", Args: []any{pricing.FenToYuanString(need), pricing.FenToYuanString(bal)}}
	}
	return s.Wallet.CheckSpend(ctx, org, u.ID, need, r.ID, now)
}
