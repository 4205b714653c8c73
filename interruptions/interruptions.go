// Package interruptions resumes interrupted rentals: when GPUs come free
// (the market pass), each interrupted rental, the highest bid first, starts
// again through the rental service's Start, with new NVML checks, taking
// free GPUs at its bid or interrupting lower bids.
package interruptions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/bids"
	"suanli/locales"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/rentals"
)

// Service resumes interrupted rentals through the rental service.
type Service struct {
	Rentals *rentals.Service
}

// Pass tries to start every interrupted rental again, the
// highest bid first (bids.ResumeOrder): each takes free GPUs at its bid,
// or interrupts lower bids, and passes new NVML checks before it runs. A
// rental whose balance or spending limit no longer allows an hour at its
// bid stops (it would only be interrupted by its own limits), as does one
// its renter may no longer start (a refusal, the rent gate's included),
// and its renter is mailed why. It returns how many rentals resumed.
func (s *Service) Pass(ctx context.Context) (int, error) {
	ws, err := rentalstore.InterruptedRentals(ctx, s.Rentals.DB)
	if err != nil || len(ws) == 0 {
		return 0, err
	}
	order := make([]bids.Waiting, len(ws))
	offerOf := map[int64]int64{}
	for i, w := range ws {
		order[i] = bids.Waiting{RentalID: w.RentalID, Bid: w.Bid, CreatedAt: w.CreatedAt}
		offerOf[w.RentalID] = w.OfferID
	}
	bids.ResumeOrder(order)
	// An offer on which a bid found no GPU has none for lower bids either.
	full := map[int64]bool{}
	n := 0
	for _, w := range order {
		if full[offerOf[w.RentalID]] {
			continue
		}
		err := s.resume(ctx, w.RentalID)
		var ae *apperr.Error
		errors.As(err, &ae)
		switch {
		case err == nil:
			n++
		case errors.Is(err, rentals.ErrNotInterrupted):
			// Its renter stopped or started it meanwhile.
		case ae != nil && (ae.Field == "balance" || apperr.General(ae.Code) == apperr.EFORBIDDEN):
			why := rentals.StopSpendCap
			switch {
			case apperr.General(ae.Code) == apperr.ECONFLICT:
				why = rentals.StopBalance
			case ae.Field != "balance":
				why = StopNotAllowed
			}
			if err := s.stopWaiting(ctx, w.RentalID, why, ae); err != nil {
				return n, err
			}
			slog.Info("interrupted rental stopped: it may not resume", "rental", w.RentalID, "why", why, "err", err)
		case ae != nil && apperr.General(ae.Code) == apperr.ECONFLICT:
			// No GPU at its bid (or its files' node is away): it waits.
			full[offerOf[w.RentalID]] = true
		default:
			slog.Warn("interrupted rental not resumed", "rental", w.RentalID, "err", err)
		}
	}
	return n, nil
}

// errResumedMeanwhile undoes a stop of a rental that is no longer
// interrupted by the time the stop has it locked.
var errResumedMeanwhile = errors.New("no longer interrupted")

// stopWaiting stops an interrupted rental that may not resume, and mails
// its renter why, only if it is still interrupted once the stop has it
// locked (its renter may have started it by hand meanwhile).
func (s *Service) stopWaiting(ctx context.Context, id int64, why string, ae *apperr.Error) error {
	_, err := s.Rentals.Stop(ctx, id, why, func(tx *gorm.DB, r *models.Rental) error {
		if r.Status != models.RentalInterrupted {
			return errResumedMeanwhile
		}
		return tellRenter(tx, s.Rentals.BaseURL, r, ae)
	})
	if errors.Is(err, errResumedMeanwhile) {
		return nil
	}
	return err
}

// tellRenter mails, in tx, the renter of an interrupted rental that could
// not resume why (the refusal's message).
func tellRenter(tx *gorm.DB, baseURL string, r *models.Rental, why *apperr.Error) error {
	u, err := models.UserByIDIn(tx, r.UserID)
	if err != nil {
		return err
	}
	lang := u.MailLang()
	// The mail's sentence ends the reason itself: a refusal's message
	// that ends in a full stop would show two.
	reason := strings.TrimRight(locales.T(lang, why.Key, why.Args...), ".。")
	return models.EnqueueMail(tx, &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: models.Now(tx),
		Subject: locales.T(lang, "bids.mail.not_resumed.subject", fmt.Sprint(r.ID)),
		Body:    locales.T(lang, "bids.mail.not_resumed.body", fmt.Sprint(r.ID), reason, fmt.Sprintf("%s/rentals/%d", baseURL, r.ID))})
}

// resume starts one interrupted rental again for its renter, as Start
// does.
func (s *Service) resume(ctx context.Context, id int64) error {
	r, err := s.Rentals.DB.RentalByID(ctx, id)
	if err != nil {
		return err
	}
	u, err := models.UserByIDIn(s.Rentals.DB.R.WithContext(ctx), r.UserID)
	if err != nil {
		return err
	}
	org, err := models.OrgByIDIn(s.Rentals.DB.R.WithContext(ctx), r.OrgID)
	if err != nil {
		return err
	}
	if r.Status != models.RentalInterrupted {
		return rentals.ErrNotInterrupted
	}
	v, err := s.Rentals.RentalVolume(ctx, &r)
	if err != nil {
		return err
	}
	if !r.Startable(v) {
		// Its volume is gone (not started within the keep days): nothing
		// is left to resume with.
		return s.stopWaiting(ctx, id, StopVolumeGone, &apperr.Error{Key: "bids.err.volume_gone"})
	}
	// What a rent checks, a resume checks too: a suspended renter or
	// organisation, or an offer no longer listed for bids, does not resume.
	row, err := s.Rentals.DB.OfferByID(ctx, r.OfferID)
	if err != nil {
		return err
	}
	if u.SuspendedAt != nil || org.SuspendedAt != nil || !org.Usable() || row.Offer.Status != models.OfferListed || row.Offer.InterruptibleFloorPerGPUHourFen == nil {
		return &apperr.Error{Code: apperr.EFORBIDDEN, Message: "the renter, its organisation or the offer may no longer rent interruptibly", Key: "bids.err.not_allowed"}
	}
	_, err = s.Rentals.Start(ctx, u, org, id, rentals.StartInput{Resume: true})
	return err
}

// StopNotAllowed: an interrupted rental whose renter, organisation or
// offer may no longer rent interruptibly stops instead of resuming.
const StopNotAllowed = "it may no longer resume"

// StopVolumeGone: an interrupted rental whose volume was deleted stops
// instead of resuming.
const StopVolumeGone = "its volume was deleted"
