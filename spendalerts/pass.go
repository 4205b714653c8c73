package spendalerts

import (
	"context"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/models"
	"suanli/models/alertstore"
)

// ActiveWithin is how far back a pass looks for wallet entries: an
// organisation with nothing running, no volume and no wallet entry for
// this long has nothing new to alert about (every pass since its last
// entry judged it), so it is not read again.
const ActiveWithin = 24 * time.Hour

// PassResult counts what a pass did.
type PassResult struct {
	// Orgs is how many organisations it judged, Mailed how many alerts it
	// mailed (each to all its recipients), Rearmed how many wallet alerts
	// it armed again.
	Orgs, Mailed, Rearmed int
}

// Pass judges every organisation with a spending limit or a wallet alert
// whose spending or balance can have moved (see alertstore.OrgsToCheck)
// and mails each threshold newly crossed:
//
//   - a limit's threshold once per period and limit (Record's key): when
//     the use jumps past several at once, the highest is mailed and the
//     lower ones are recorded with it, never mailed later;
//   - a low-balance alert when the balance is below it, once; armed again
//     when a pass finds the balance back at the threshold or above;
//   - a runway alert when the balance lasts fewer hours than it at the
//     current rate, once; armed again when a pass finds the balance above
//     what it was when mailed and lasting the hours or more (or nothing
//     drawing on it).
//
// A wallet alert whose setting changed or was turned off is dropped (a
// new threshold is judged afresh). One organisation's failure is logged
// and does not stop the others; the first error is returned.
func (s *Service) Pass(ctx context.Context) (PassResult, error) {
	var res PassResult
	now := s.DB.Now().UTC()
	ids, err := alertstore.OrgsToCheck(s.DB.R.WithContext(ctx), now.Add(-ActiveWithin))
	if err != nil {
		return res, err
	}
	var first error
	for _, id := range ids {
		mailed, rearmed, err := s.checkOrg(ctx, id, now)
		res.Orgs++
		res.Mailed += mailed
		res.Rearmed += rearmed
		if err != nil {
			slog.Error("spending alerts of an organisation failed", "org", id, "err", err)
			if first == nil {
				first = err
			}
		}
	}
	return res, first
}

// CheckOrg is Pass for one organisation, now: how many alerts it mailed.
func (s *Service) CheckOrg(ctx context.Context, orgID int64) (int, error) {
	mailed, _, err := s.checkOrg(ctx, orgID, s.DB.Now().UTC())
	return mailed, err
}

func (s *Service) checkOrg(ctx context.Context, orgID int64, now time.Time) (mailed, rearmed int, err error) {
	org, err := s.DB.OrgByID(ctx, orgID)
	if err != nil {
		return 0, 0, err
	}
	st, err := stateOf(s.DB.R.WithContext(ctx), org, now)
	if err != nil {
		return 0, 0, err
	}
	for _, u := range st.uses() {
		c := crossed(st.settings.LimitPcts, u.LimitFen, u.UsedFen)
		if len(c) == 0 {
			continue
		}
		ok, err := s.limitCrossed(ctx, st, u, c)
		if err != nil {
			return mailed, rearmed, err
		}
		if ok {
			mailed++
		}
	}
	n, re, err := s.wallet(ctx, st)
	return mailed + n, rearmed + re, err
}

// limitCrossed records the thresholds c (ascending) that a limit's use u
// has reached in its period and, when the highest is new, mails it; it
// reports whether it mailed.
func (s *Service) limitCrossed(ctx context.Context, st state, u Alert, c []int64) (bool, error) {
	u.Threshold = c[len(c)-1]
	period := periodOf(u.Kind, st.now)
	var mailed bool
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		mailed = false
		var top bool
		for _, p := range c {
			ok, err := alertstore.Record(tx, &alertstore.Sent{OrgID: st.org.ID, Kind: u.Kind, UserID: u.UserID, Period: period,
				Threshold: p, LimitFen: u.LimitFen, UsedFen: u.UsedFen, CreatedAt: st.now})
			if err != nil {
				return err
			}
			top = ok // the last, the highest
		}
		if !top {
			return nil
		}
		to, err := recipients(tx, st.org.ID, u.UserID)
		if err != nil {
			return err
		}
		var member *models.User
		if u.UserID != 0 {
			for i := range to {
				if to[i].ID == u.UserID {
					member = &to[i]
				}
			}
			if member == nil {
				return nil // no such user any more: nobody to name
			}
		}
		for i := range to {
			if err := models.EnqueueMail(tx, s.limitMail(&to[i], st, u, member, period)); err != nil {
				return err
			}
		}
		mailed = true
		return nil
	})
	if mailed {
		slog.Info("spending alert mailed", "org", st.org.ID, "kind", u.Kind, "user", u.UserID, "threshold_pct", u.Threshold, "used_fen", u.UsedFen, "limit_fen", u.LimitFen)
	}
	return mailed, err
}

// recipients are an organisation's owner and admins, and the member
// (userID ≠ 0) too, each once.
func recipients(tx *gorm.DB, orgID, userID int64) ([]models.User, error) {
	to, err := alertstore.Admins(tx, orgID)
	if err != nil || userID == 0 {
		return to, err
	}
	for _, u := range to {
		if u.ID == userID {
			return to, nil
		}
	}
	us, err := alertstore.Users(tx, []int64{userID})
	if err != nil {
		return nil, err
	}
	if u, ok := us[userID]; ok {
		to = append(to, u)
	}
	return to, nil
}

// wallet arms again the wallet alerts whose condition has passed (or
// whose setting changed), then records and mails those crossed now.
func (s *Service) wallet(ctx context.Context, st state) (mailed, rearmed int, err error) {
	var crossedNow []Alert
	for _, a := range st.alerts() {
		if a.Kind == KindLowBalance || a.Kind == KindRunway {
			crossedNow = append(crossedNow, a)
		}
	}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		mailed, rearmed = 0, 0
		standing, err := alertstore.WalletAlerts(tx, st.org.ID)
		if err != nil {
			return err
		}
		for _, a := range standing {
			if !st.rearms(a) {
				continue
			}
			if err := alertstore.Rearm(tx, a.ID); err != nil {
				return err
			}
			rearmed++
		}
		var to []models.User
		for _, a := range crossedNow {
			ok, err := alertstore.Record(tx, &alertstore.Sent{OrgID: st.org.ID, Kind: a.Kind, Threshold: a.Threshold, UsedFen: a.UsedFen, CreatedAt: st.now})
			if err != nil {
				return err
			}
			if !ok {
				continue // mailed before, not armed again yet
			}
			if to == nil {
				if to, err = recipients(tx, st.org.ID, 0); err != nil {
					return err
				}
			}
			for i := range to {
				if err := models.EnqueueMail(tx, s.walletMail(&to[i], st, a)); err != nil {
					return err
				}
			}
			mailed++
		}
		return nil
	})
	if mailed > 0 || rearmed > 0 {
		slog.Info("wallet alerts", "org", st.org.ID, "mailed", mailed, "rearmed", rearmed, "balance_fen", st.runway.BalanceFen)
	}
	return mailed, rearmed, err
}

// rearms reports whether a standing wallet alert is armed again now: its
// setting is off or another, or its condition has passed (see Pass).
func (st state) rearms(a alertstore.Sent) bool {
	rw := st.runway
	switch a.Kind {
	case KindLowBalance:
		lb := st.settings.LowBalanceFen
		return lb == nil || *lb != a.Threshold || rw.BalanceFen >= a.Threshold
	case KindRunway:
		h := st.settings.RunwayHours
		return h == nil || int64(*h) != a.Threshold || (rw.BalanceFen > a.UsedFen && !rw.Below(*h))
	}
	return false
}
