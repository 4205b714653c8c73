package rentals

import (
	"context"
	"fmt"
	"log/slog"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/fleet"
	"suanli/locales"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/offers"
	"suanli/pricing"
)

// ChangeInput switches a rental to another offer in the same datacentre
// and/or resizes it; zero fields keep what the rental has.
type ChangeInput struct {
	OfferID int64
	GPUs    int
}

// ChangeQuote is what a switch or resize would change, shown before the
// renter confirms.
type ChangeQuote struct {
	FromOfferID, ToOfferID   int64
	FromModel, ToModel       string
	FromGPUs, ToGPUs         int
	FromFenPerHour           int64 // what an hour costs now (0 when stopped)
	ToFenPerHour             int64 // what an hour costs after the change, from now
	SameNode                 bool
	FromPerGPUHour, ToPerGPU int64 // the per-GPU-hour prices paid (a lab member's student prices)
}

// changeTarget validates a change and returns the new offer and the
// rental with the new terms applied (not saved).
func (s *Service) changeTarget(ctx context.Context, r *models.Rental, org *models.Org, m *models.Membership, in ChangeInput) (models.Offer, models.Rental, error) {
	if r.Term != pricing.OnDemand {
		return models.Offer{}, models.Rental{}, &apperr.Error{Code: apperr.ECONFLICT, Message: "a week or month term keeps its GPUs; switching is for on-demand rentals", Key: "err.change_term"}
	}
	if !r.CanChange() {
		return models.Offer{}, models.Rental{}, &apperr.Error{Code: apperr.ECONFLICT, Message: "only a running rental, or a stopped one that ran, can be switched or resized", Key: "err.change_status"}
	}
	cur, err := s.DB.OfferByID(ctx, r.OfferID)
	if err != nil {
		return models.Offer{}, models.Rental{}, err
	}
	target := cur.Offer
	if in.OfferID != 0 && in.OfferID != r.OfferID {
		row, err := s.DB.OfferByID(ctx, in.OfferID)
		if err != nil {
			if apperr.Code(err) == apperr.ENOTFOUND {
				return models.Offer{}, models.Rental{}, apperr.Field("offer_id", "err.change_offer")
			}
			return models.Offer{}, models.Rental{}, err
		}
		if row.Offer.DatacenterID != cur.Offer.DatacenterID || !row.Offer.Visible() {
			return models.Offer{}, models.Rental{}, apperr.Field("offer_id", "err.change_offer")
		}
		target = row.Offer
	}
	// The change takes GPUs anew, as renting does: not on a paused offer,
	// a draining node or a provider that is not approved or is suspended.
	if !target.Visible() {
		return models.Offer{}, models.Rental{}, &apperr.Error{Code: apperr.ECONFLICT, Message: "this offer is not listed", Key: "err.offer_not_listed"}
	}
	if err := rentableOffer(ctx, s.DB, &target); err != nil {
		return models.Offer{}, models.Rental{}, err
	}
	gpus := r.GPUs
	if in.GPUs != 0 {
		gpus = in.GPUs
	}
	if gpus < 1 || gpus > target.MaxGPUs {
		return models.Offer{}, models.Rental{}, apperr.Field("gpus", "err.quote_gpus", target.MaxGPUs)
	}
	if target.ID == r.OfferID && gpus == r.GPUs && r.Status == models.RentalRunning {
		return models.Offer{}, models.Rental{}, apperr.Field("gpus", "err.change_nothing")
	}
	next := *r
	next.OfferID, next.ProviderID, next.GPUs = target.ID, target.ProviderID, gpus
	// A change takes GPUs: a rental last started without them leaves no-GPU mode.
	next.NoGPU, next.NoGPUPricePerHourFen = false, 0
	next.PricePerGPUHourFen, next.OffpeakPct = target.PricePerGPUHourFen, target.OffpeakDiscountPct
	next.StudentPct = 0
	if offers.StudentPrices(org, m) {
		next.StudentPct = target.StudentDiscountPct
	}
	return target, next, nil
}

// QuoteChange says what switching or resizing would cost per hour.
func (s *Service) QuoteChange(ctx context.Context, r *models.Rental, org *models.Org, m *models.Membership, in ChangeInput) (ChangeQuote, error) {
	target, next, err := s.changeTarget(ctx, r, org, m, in)
	if err != nil {
		return ChangeQuote{}, err
	}
	now := s.DB.Now().UTC()
	cur, err := s.DB.OfferByID(ctx, r.OfferID)
	if err != nil {
		return ChangeQuote{}, err
	}
	q := ChangeQuote{FromOfferID: r.OfferID, ToOfferID: target.ID, FromModel: cur.Offer.GPUModel, ToModel: target.GPUModel,
		FromGPUs: r.GPUs, ToGPUs: next.GPUs, ToFenPerHour: pricing.HourFen(next.Rate(), now), SameNode: target.NodeID == cur.Offer.NodeID,
		FromPerGPUHour: pricing.Discounted(r.PricePerGPUHourFen, r.StudentPct), ToPerGPU: pricing.Discounted(next.PricePerGPUHourFen, next.StudentPct)}
	if r.Status == models.RentalRunning {
		q.FromFenPerHour = pricing.HourFen(r.Rate(), now)
	}
	return q, nil
}

// Change switches a running (or stopped) on-demand rental to another
// offer of the same datacentre and/or resizes it, keeping its workspace.
// In one transaction it bills the old rate up to this second, releases
// the old GPUs and reserves the new ones (all or nothing: without enough
// free GPUs nothing changes); the new GPUs then pass the same NVML checks
// before the workload relaunches there, and billing resumes at the new
// rate from the second it runs. The seconds in between are not billed.
func (s *Service) Change(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, id int64, in ChangeInput) (*models.Rental, error) {
	r, err := s.DB.RentalByID(ctx, id)
	if err = s.gate(ctx, err, u, r.OrgID); err != nil {
		return nil, err
	}
	target, next, err := s.changeTarget(ctx, &r, org, m, in)
	if err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	if err := s.checkHourAhead(ctx, org, u, &r, next.Rate(), now); err != nil {
		return nil, err
	}
	var oldNode int64
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := models.RentalForUpdate(tx, id)
		if err != nil {
			return err
		}
		if cur.Status != r.Status {
			return &apperr.Error{Code: apperr.ECONFLICT, Message: "the rental changed meanwhile; try again", Key: "err.change_status"}
		}
		if cur.Status == models.RentalRunning {
			if err := s.meterOne(tx, &cur, now, false); err != nil {
				return err
			}
		}
		if cur.NodeID != nil {
			oldNode = *cur.NodeID
			if _, err := fleet.EnqueueTask(tx, oldNode, &cur.ID, fmt.Sprintf("r%d/a%d/switch-stop", cur.ID, cur.Attempts),
				s.stopTaskOf(tx, &cur), now); err != nil {
				return err
			}
		}
		if err := s.releaseGPUs(tx, cur.ID, now); err != nil {
			return err
		}
		next.Attempts = cur.Attempts + 1
		if err := reserveGPUs(tx, &next, target.NodeID, target.GPUModel, now); err != nil {
			return err
		}
		status := models.RentalMigrating
		if cur.Status == models.RentalStopped {
			status = models.RentalProvisioning
		}
		if err := rentalstore.SwitchRental(tx, &next, status, now); err != nil {
			return err
		}
		from, _ := s.DB.OfferByID(ctx, r.OfferID)
		detail := fmt.Sprintf("%s × %d → %s × %d", from.Offer.GPUModel, r.GPUs, target.GPUModel, next.GPUs)
		if err := models.AddRentalEvent(tx, id, now, "switch_requested", detail, nil,
			locales.M("event.switch", catalog.GPUName(from.Offer.GPUModel), r.GPUs, catalog.GPUName(target.GPUModel), next.GPUs)); err != nil {
			return err
		}
		return s.enqueueProvision(ctx, tx, id)
	})
	if err != nil {
		return nil, err
	}
	if oldNode != 0 {
		s.Hub.Signal(fleet.NodeKey(oldNode))
	}
	slog.Info("rental switching", "rental", id, "offer", next.OfferID, "gpus", next.GPUs)
	out, err := s.DB.RentalByID(ctx, id)
	return &out, err
}
