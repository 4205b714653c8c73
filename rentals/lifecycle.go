package rentals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/fleet"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// StopReleased is the stop reason of a rental released while it ran.
const StopReleased = "released by the renter"

// Start starts a stopped on-demand rental again with its volume: on the
// node that holds the volume's files (local storage), or on any node of
// the datacentre with free GPUs of the offer's model, its last node first
// (shared storage). The new GPUs pass the same NVML checks before the
// container starts; billing resumes from the second it runs. Without
// free GPUs where its files are, nothing changes and the error says so.
func (s *Service) Start(ctx context.Context, u *models.User, org *models.Org, id int64) (*models.Rental, error) {
	r, err := s.DB.RentalByID(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := s.RentalVolume(ctx, &r)
	if err != nil {
		return nil, err
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
	if err := s.checkHourAhead(ctx, org, u, &r, r.Rate(), now); err != nil {
		return nil, err
	}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := models.RentalForUpdate(tx, id)
		if err != nil {
			return err
		}
		cv, err := rentalVolume(tx, &cur)
		if err != nil {
			return err
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
			more, err := rentalstore.StartNodes(tx, &o)
			if err != nil {
				return err
			}
			nodes = append(nodes, more...)
		}
		next := cur
		next.Attempts = cur.Attempts + 1
		reserved := false
		for _, n := range nodes {
			noFree := func(err error) bool { return errors.Is(err, ErrNoFreeGPUs) }
			err := models.Attempt(tx, fmt.Sprintf("start%d", n), func() error { return reserveGPUs(tx, &next, n, o.GPUModel, now) }, noFree)
			if noFree(err) {
				continue
			}
			if err != nil {
				return err
			}
			reserved = true
			break
		}
		if !reserved {
			if !cv.Shared() && cv.NodeID != nil {
				return &apperr.Error{Code: apperr.ECONFLICT, Message: fmt.Sprintf("no free GPUs on node %d, where this rental's files are (local storage); try again later", *cv.NodeID),
					Key: "err.start_no_gpus_local", Args: []any{nodeLabel(tx, *cv.NodeID)}}
			}
			return &apperr.Error{Code: apperr.ECONFLICT, Message: "no free GPUs of this model in the datacentre right now; try again later", Key: "err.start_no_gpus"}
		}
		if err := rentalstore.SwitchRental(tx, &next, models.RentalProvisioning, now); err != nil {
			return err
		}
		if err := rentalstore.SetVolumeDeleteAfter(tx, cv.ID, nil); err != nil {
			return err
		}
		if err := models.AddRentalEvent(tx, id, now, "start_requested", fmt.Sprintf("volume #%d", cv.ID), nil, locales.M("event.start_requested", cv.ID)); err != nil {
			return err
		}
		return s.enqueueProvision(ctx, tx, id)
	})
	if err != nil {
		return nil, err
	}
	slog.Info("rental starting", "rental", id)
	out, err := s.DB.RentalByID(ctx, id)
	return &out, err
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
		return &apperr.Error{Code: apperr.ECONFLICT, Field: "balance", Message: fmt.Sprintf("this needs a balance of at least ¥%s (the balance is ¥%s): top up first", pricing.FenToYuanString(need), pricing.FenToYuanString(bal)),
			Key: "err.rent_balance", Args: []any{pricing.FenToYuanString(need), pricing.FenToYuanString(bal)}}
	}
	return s.Wallet.CheckSpend(ctx, org, u.ID, need, r.ID, now)
}
