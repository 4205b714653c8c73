package rentals

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/bids"
	"suanli/fleet"
	"suanli/locales"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// graceSlack is how long after an interrupted rental's grace the next
// rental of its GPUs still waits for its stop to be confirmed; past it the
// node is not answering, and the new rental's checks find out.
const graceSlack = 30 * time.Second

// ErrNotInterrupted refuses to resume a rental that is no longer
// interrupted (its renter stopped or started it meanwhile).
var ErrNotInterrupted = &apperr.Error{Code: apperr.ECONFLICT, Message: "the rental is no longer interrupted", Key: "bids.err.not_interrupted"}

func (s *Service) grace() time.Duration {
	if s.InterruptGrace > 0 {
		return s.InterruptGrace
	}
	return bids.Grace
}

// takeGPUs reserves, in tx, the rental's GPUs on the node, interrupting
// interruptible rentals there if it must and may (bids.Victims: an
// on-demand rent or a term outranks every bid, a bid only lower bids). The
// node's rents are serialised for the rest of tx, so the choice is made
// on what the last of them committed. If the GPUs cannot be had, nobody
// is interrupted and ErrNoFreeGPUs (or, for a bid, bids.ErrOutbid) is returned.
func (s *Service) takeGPUs(ctx context.Context, tx *gorm.DB, r *models.Rental, nodeID int64, model string, now time.Time) error {
	if err := rentalstore.LockNodeGPUs(tx, nodeID); err != nil {
		return err
	}
	free, err := rentalstore.FreeGPUsOnNode(tx, nodeID, model, r.GPUs)
	if err != nil {
		return err
	}
	if len(free) < r.GPUs {
		holders, err := rentalstore.NodeBidHolders(tx, nodeID, model)
		if err != nil {
			return err
		}
		victims, ok := bids.Victims(holders, r.GPUs-len(free), r.BidPerGPUHourFen)
		if !ok {
			if r.Interruptible() {
				return bids.ErrOutbid
			}
			return ErrNoFreeGPUs
		}
		// All of them, in id order, before any is billed: a stop or raise of
		// one of them must not hold it while waiting for what this holds.
		if err := rentalstore.LockRentals(tx, victims); err != nil {
			return err
		}
		now = s.DB.Now().UTC() // the grace begins now, after the waits
		for _, id := range victims {
			if err := s.interrupt(ctx, tx, id, r, now); err != nil {
				return err
			}
		}
	}
	return reserveGPUs(tx, r, nodeID, model, now)
}

// interrupt interrupts, in tx, an interruptible rental for by: it is
// billed exactly to this second (the grace begins now and is not billed),
// its GPUs are let go at once (by takes them; by's checks wait for the
// container's end, see rentalstore.GPUsInGrace), its node is told to stop
// the container with the grace, and its volume is kept as a stopped
// rental's is. It resumes later by the resume pass (ResumeInterrupted).
func (s *Service) interrupt(ctx context.Context, tx *gorm.DB, id int64, by *models.Rental, now time.Time) error {
	now = now.Truncate(time.Second)
	// Locked: a meter pass or a stop racing this waits, and then sees it.
	v, err := models.RentalForUpdate(tx, id)
	if err != nil {
		return err
	}
	if !v.Interruptible() {
		return fmt.Errorf("rental %d: not interruptible", id)
	}
	if v.Status == models.RentalRunning {
		if err := s.meterOne(tx, &v, now, false); err != nil {
			return err
		}
	}
	why, msg := bids.Reason(by.BidPerGPUHourFen, string(by.Term))
	graceUntil := now.Add(s.grace())
	ok, err := setStatus(tx, v.ID, models.RentalInterrupted, now,
		[]models.RentalStatus{models.RentalPending, models.RentalProvisioning, models.RentalRunning}, rentalstore.RentalMove{})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("rental %d: changed while being interrupted", id)
	}
	if err := rentalstore.MarkInterrupted(tx, v.ID, now, why, msg, graceUntil); err != nil {
		return err
	}
	if err := s.releaseGPUs(tx, v.ID, now); err != nil {
		return err
	}
	if v.NodeID != nil {
		if err := fleet.ExpireTasks(tx, v.ID, *v.NodeID, now); err != nil {
			return err
		}
		t := s.stopTaskOf(tx, &v)
		t.GraceSeconds = int(s.grace() / time.Second)
		if _, err := fleet.EnqueueTask(tx, *v.NodeID, &v.ID, fmt.Sprintf("r%d/interrupt/%d", v.ID, v.Attempts), t, now); err != nil {
			return err
		}
	}
	if v.RunningSince != nil {
		if err := s.Volumes().Keep(tx, &v, now); err != nil {
			return err
		}
	}
	if err := models.AddRentalEvent(tx, v.ID, now, "interrupted", why, nil, msg); err != nil {
		return err
	}
	u, err := models.UserByIDIn(tx, v.UserID)
	if err != nil {
		return err
	}
	if err := models.EnqueueMail(tx, interruptedMail(u, &v, msg, s.grace(), s.BaseURL, now)); err != nil {
		return err
	}
	slog.Info("rental interrupted", "rental", v.ID, "by", by.ID, "reason", why, "grace_until", graceUntil)
	return models.OffersChanged(tx, models.OfferScope{Offers: []int64{v.OfferID}})
}

// interruptedMail tells a renter that their interruptible rental was
// interrupted, why, and what happens next.
func interruptedMail(u *models.User, r *models.Rental, why locales.Msg, grace time.Duration, baseURL string, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	return &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: now,
		Subject: locales.T(lang, "bids.mail.interrupted.subject", fmt.Sprint(r.ID)),
		Body: locales.T(lang, "bids.mail.interrupted.body", fmt.Sprint(r.ID), why.Text(lang), int(grace/time.Second),
			fmt.Sprintf("%s/rentals/%d", baseURL, r.ID)),
	}
}

// RaiseBid raises an interruptible rental's bid (bids.CheckRaise), for its
// renter or an admin of its organisation. A running rental is billed at
// the old bid up to this second and at the new one from it; an
// interrupted one is looked at by the next resume pass at once. Raising
// needs an hour of balance at the new bid, as a start does.
func (s *Service) RaiseBid(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, id, bid int64) (*models.Rental, error) {
	r, err := s.DB.RentalByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.OrgID != org.ID {
		return nil, apperr.NotFound("rental")
	}
	if !CanStop(&r, u, m) {
		return nil, &apperr.Error{Code: apperr.EFORBIDDEN, Message: "only the renter or an admin of the organisation may change this rental", Key: "bids.err.not_yours"}
	}
	if !r.Interruptible() {
		return nil, &apperr.Error{Code: apperr.EINVALID, Field: bids.Field, Message: "this rental is not interruptible", Key: "bids.err.not_a_bid"}
	}
	if r.Status.Ended() || r.ReleasedAt != nil || r.Status == models.RentalStopping {
		return nil, &apperr.Error{Code: apperr.ECONFLICT, Message: "this rental has stopped; its bid can no longer change", Key: "bids.err.ended"}
	}
	row, err := s.DB.OfferByID(ctx, r.OfferID)
	if err = s.gate(ctx, err, u, r.OrgID); err != nil {
		return nil, err
	}
	if err := bids.CheckRaise(row.Offer.InterruptibleFloorPerGPUHourFen, row.Offer.PricePerGPUHourFen, *r.BidPerGPUHourFen, bid); err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	next := r
	next.PricePerGPUHourFen = bid
	if err := s.checkHourAhead(ctx, org, u, &r, next.Rate(), now); err != nil {
		return nil, err
	}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := models.RentalForUpdate(tx, id)
		if err != nil {
			return err
		}
		if cur.BidPerGPUHourFen == nil {
			return &apperr.Error{Code: apperr.EINVALID, Field: bids.Field, Message: "this rental is not interruptible", Key: "bids.err.not_a_bid"}
		}
		if *cur.BidPerGPUHourFen >= bid {
			return bids.CheckRaise(row.Offer.InterruptibleFloorPerGPUHourFen, row.Offer.PricePerGPUHourFen, *cur.BidPerGPUHourFen, bid)
		}
		if cur.Status == models.RentalRunning {
			if err := s.meterOne(tx, &cur, now, false); err != nil {
				return err
			}
		}
		if err := rentalstore.SetBid(tx, id, bid, now); err != nil {
			return err
		}
		y := pricing.FenToYuanString(bid)
		if err := models.AddRentalEvent(tx, id, now, "bid_raised", "¥"+y, nil, locales.M("bids.event.raised", y)); err != nil {
			return err
		}
		if cur.Status == models.RentalInterrupted {
			if err := s.enqueueMarket(tx); err != nil {
				return err
			}
		}
		return models.OffersChanged(tx, models.OfferScope{Offers: []int64{cur.OfferID}})
	})
	if err != nil {
		return nil, err
	}
	slog.Info("bid raised", "rental", id, "bid_fen", bid)
	out, err := s.DB.RentalByID(ctx, id)
	return &out, err
}

// enqueueMarket asks, in tx, for the market passes to run once tx
// commits.
func (s *Service) enqueueMarket(tx *gorm.DB) error {
	stx, err := models.SQLTx(tx)
	if err != nil {
		return err
	}
	return s.Jobs.EnqueueMarket(tx.Statement.Context, stx)
}
