// Package idlestop stops rentals whose GPUs sit idle: a renter's setting
// "stop when GPU utilisation stays below X % for N minutes", a lab's
// policy for its members' rentals, and the watch that applies them to the
// utilisation the node agents measure through NVML (issue 16). A stop is
// rentals.Service.Stop's: billing ends, the volume is kept.
package idlestop

import (
	"context"
	"fmt"
	"log/slog"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/locales"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/pricing"
	"suanli/rentals"
)

// The bounds of a setting and of a policy. The window is at least five
// minutes (ten of the heartbeat's 30 s samples: a pause between two
// steps of a job is not idleness) and at most a day, the telemetry the
// samples keep (fleet.SampleRetention).
const (
	MinMinutes = 5
	MaxMinutes = 1440
)

// Field is the request field that idle-stop problems are about, in the
// API (POST /api/v1/rentals, …/idle-stop) and on the forms.
const Field = "idle_stop"

// PolicyField is the organisation page's field of a lab's policy.
const PolicyField = "idle_policy"

// Service applies idle stop: it checks and stores settings and policies
// and runs the watch.
type Service struct {
	// Rentals rents and stops; its DB, BaseURL and volume keep days are
	// the watch's too.
	Rentals *rentals.Service
	// Accounts authorises lab admins to set a policy (SetLabPolicy only).
	Accounts *accounts.Service
}

func (s *Service) db() *models.DB { return s.Rentals.DB }

// checkBounds refuses a setting (or a policy) outside 1–100 % and
// MinMinutes–MaxMinutes, naming field.
func checkBounds(v models.IdleStop, field string) error {
	if v.BelowPct < 1 || v.BelowPct > 100 {
		return apperr.Field(field, "idle.err.pct")
	}
	if v.Minutes < MinMinutes || v.Minutes > MaxMinutes {
		return apperr.Field(field, "idle.err.minutes", MinMinutes, MaxMinutes)
	}
	return nil
}

// Policy is the idle-stop policy that org imposes on its rentals: a lab's
// (zero when it has none; other organisations have none).
func Policy(org *models.Org) models.IdleStop {
	if org == nil || org.Kind != models.OrgLab || !org.IdlePolicy.On() {
		return models.IdleStop{}
	}
	return org.IdlePolicy
}

// Effective is the setting the watch applies to a rental with its own
// setting own under policy: the stricter of the two in each part (the
// higher threshold, the shorter window), either alone when the other is
// off, off when both are. So a member can make it stricter, never looser,
// and leaving it off follows the policy.
func Effective(own, policy models.IdleStop) models.IdleStop {
	switch {
	case !policy.On():
		if !own.On() {
			return models.IdleStop{}
		}
		return own
	case !own.On():
		return policy
	}
	return models.IdleStop{BelowPct: max(own.BelowPct, policy.BelowPct), Minutes: min(own.Minutes, policy.Minutes)}
}

// Check refuses a rental's own setting that is out of bounds or, for a
// rental paid by a lab with a policy, looser than the policy (a lower
// threshold or a longer window): EINVALID about Field. Off (zero) is
// always accepted; the lab's policy then applies.
func Check(v models.IdleStop, org *models.Org) error {
	if v == (models.IdleStop{}) {
		return nil
	}
	if err := checkBounds(v, Field); err != nil {
		return err
	}
	if p := Policy(org); p.On() && (v.BelowPct < p.BelowPct || v.Minutes > p.Minutes) {
		return apperr.Field(Field, "idle.err.looser", p.BelowPct, p.Minutes)
	}
	return nil
}

// Applies reports whether idle stop applies to rentals of the term: on
// demand only. A week or a month is paid up front and its GPUs stay held
// when it stops, so stopping it for idling would save nothing.
func Applies(t pricing.Term) bool { return t != pricing.Week && t != pricing.Month }

// checkTerm refuses a setting (on) for a rental of a term it does not
// apply to (Applies).
func checkTerm(v models.IdleStop, t pricing.Term) error {
	if v.On() && !Applies(t) {
		return apperr.Field(Field, "idle.err.term")
	}
	return nil
}

// Rent rents as rentals.Service.Rent does, with in.IdleStop checked
// against the term and the paying organisation's policy first: a refused
// setting rents nothing.
func (s *Service) Rent(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, in rentals.RentInput) (*models.Rental, error) {
	if err := checkTerm(in.IdleStop, in.Term); err != nil {
		return nil, err
	}
	if err := Check(in.IdleStop, org); err != nil {
		return nil, err
	}
	return s.Rentals.Rent(ctx, u, org, m, in)
}

// CanChange refuses the user a change of the rental's idle stop now
// unless they may stop it (rentals.CanStop: EFORBIDDEN) and it may run
// again, not released nor failed, on demand (ECONFLICT about Field).
func CanChange(r *models.Rental, u *models.User, m *models.Membership) error {
	if !rentals.CanStop(r, u, m) {
		return &apperr.Error{Code: apperr.EFORBIDDEN, Message: "only the renter or an admin of the organisation may change this rental's idle stop", Key: "idle.err.forbidden"}
	}
	if r.Released() || r.Status == models.RentalFailed {
		return &apperr.Error{Code: apperr.ECONFLICT, Field: Field, Message: "this rental will not run again: its idle stop cannot change", Key: "idle.err.ended"}
	}
	return nil
}

// Set changes a rental's own idle-stop setting (zero: off), for its
// renter or an admin of its organisation while it may run again
// (CanChange), on an on-demand rental (Applies): running, it applies from
// the watch's next pass; stopped, when it starts again. The change is on
// the rental's timeline, and the next warning (if the GPUs idle) says
// what the new setting does.
func (s *Service) Set(ctx context.Context, u *models.User, m *models.Membership, id int64, v models.IdleStop) (*models.Rental, error) {
	now := s.db().Now().UTC()
	err := s.db().Tx(ctx, func(tx *gorm.DB) error {
		r, err := models.RentalForUpdate(tx, id)
		if err != nil {
			return err
		}
		if err := CanChange(&r, u, m); err != nil {
			return err
		}
		if err := checkTerm(v, r.Term); err != nil {
			return err
		}
		org, err := models.OrgByIDIn(tx, r.OrgID)
		if err != nil {
			return err
		}
		if err := Check(v, org); err != nil {
			return err
		}
		if r.IdleStop == v {
			return nil
		}
		if err := rentalstore.SetRentalIdleStop(tx, id, v, now); err != nil {
			return err
		}
		detail, msg := "idle stop off", locales.M("idle.event.off")
		if v.On() {
			detail, msg = fmt.Sprintf("idle stop: below %d %% for %d minutes", v.BelowPct, v.Minutes), locales.M("idle.event.set", v.BelowPct, v.Minutes)
		}
		return models.AddRentalEvent(tx, id, now, "idle_stop_set", detail, nil, msg)
	})
	if err != nil {
		return nil, err
	}
	slog.Info("idle stop set", "rental", id, "user", u.ID, "below_pct", v.BelowPct, "minutes", v.Minutes)
	out, err := s.db().RentalByID(ctx, id)
	return &out, err
}

// SetLabPolicy stores a lab's idle-stop policy for its members' rentals
// (zero: none), for the lab's admins. It applies to every on-demand
// rental the lab pays for, from the watch's next pass, whatever their own
// settings say (Effective); a change forgets the warnings its running
// rentals had, so none stops sooner than a new warning's lead.
func (s *Service) SetLabPolicy(ctx context.Context, actor *models.User, orgID int64, p models.IdleStop) error {
	if _, _, err := s.Accounts.Authorize(ctx, actor, orgID, accounts.SetIdlePolicy); err != nil {
		return err
	}
	if p != (models.IdleStop{}) {
		if err := checkBounds(p, PolicyField); err != nil {
			return err
		}
	}
	err := s.db().Tx(ctx, func(tx *gorm.DB) error {
		org, err := models.OrgByIDIn(tx, orgID)
		if err != nil || org.IdlePolicy == p {
			return err
		}
		if err := models.SetOrgIdlePolicy(tx, orgID, p); err != nil {
			return err
		}
		// A warning promised a stop no sooner than its lead; under the
		// new policy the next pass warns again (errChanged meanwhile).
		return rentalstore.ForgetOrgIdleWarnings(tx, orgID)
	})
	if err != nil {
		return err
	}
	slog.Info("lab idle policy set", "org", orgID, "user", actor.ID, "below_pct", p.BelowPct, "minutes", p.Minutes)
	return nil
}
