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
// bid stops (it would only be interrupted by its own limits), and its
// renter is mailed why. It returns how many rentals resumed.
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
		case ae != nil && ae.Field == "balance":
			why := rentals.StopSpendCap
			if ae.Code == apperr.ECONFLICT {
				why = rentals.StopBalance
			}
			if _, serr := s.Rentals.Stop(ctx, w.RentalID, why, tellRenter(s.Rentals.BaseURL, ae)); serr != nil {
				return n, serr
			}
			slog.Info("interrupted rental stopped: it cannot pay to resume", "rental", w.RentalID, "err", err)
		case ae != nil && ae.Code == apperr.ECONFLICT:
			// No GPU at its bid (or its files' node is away): it waits.
			full[offerOf[w.RentalID]] = true
		default:
			slog.Warn("interrupted rental not resumed", "rental", w.RentalID, "err", err)
		}
	}
	return n, nil
}

// tellRenter mails, in the stop's transaction, the renter of an
// interrupted rental that could not resume why (the limit's message).
func tellRenter(baseURL string, why *apperr.Error) func(tx *gorm.DB, r *models.Rental) error {
	return func(tx *gorm.DB, r *models.Rental) error {
		u, err := models.UserByIDIn(tx, r.UserID)
		if err != nil {
			return err
		}
		lang := u.MailLang()
		reason := locales.T(lang, why.Key, why.Args...)
		return models.EnqueueMail(tx, &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: models.Now(tx),
			Subject: locales.T(lang, "bids.mail.not_resumed.subject", fmt.Sprint(r.ID)),
			Body:    locales.T(lang, "bids.mail.not_resumed.body", fmt.Sprint(r.ID), reason, fmt.Sprintf("%s/rentals/%d", baseURL, r.ID))})
	}
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
	v, err := s.Rentals.RentalVolume(ctx, &r)
	if err != nil {
		return err
	}
	if r.Status == models.RentalInterrupted && !r.Startable(v) {
		// Its volume is gone (not started within the keep days): nothing
		// is left to resume with.
		_, err := s.Rentals.Stop(ctx, id, StopVolumeGone)
		return err
	}
	_, err = s.Rentals.Start(ctx, u, org, id, rentals.StartInput{})
	return err
}

// StopVolumeGone: an interrupted rental whose volume was deleted stops
// instead of resuming.
const StopVolumeGone = "its volume was deleted"
