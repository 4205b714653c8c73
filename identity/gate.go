package identity

import (
	"context"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/identitystore"
)

// FieldRealName is where a refused rent's requirement is shown (the rent
// page's notice with its link to the verification page).
const FieldRealName = "real_name"

// MayRent is the rent gate (rentals.Service.Gate): with real-name
// verification required, a user who is not verified may rent only what
// the paying organisation's trial credit pays for, that is when its
// wallet has never had cash paid in (all its credit is trial or
// promotional). Anything else is EREALNAMEREQUIRED (403). With
// --real-name off, or no service, everyone may.
func (s *Service) MayRent(ctx context.Context, u *models.User, orgID int64) error {
	if s == nil || !s.Required() || u == nil {
		return nil
	}
	st, err := identitystore.StatusOf(ctx, s.DB, u.ID)
	if err != nil || st == identitystore.Verified {
		return err
	}
	cash, err := identitystore.PaidInCash(ctx, s.DB, orgID)
	if err != nil || !cash {
		return err
	}
	return &apperr.Error{Code: apperr.EREALNAMEREQUIRED, Field: FieldRealName, Key: "realname.err.required",
		Message: "real-name verification (实名认证) is required to rent beyond the trial credit: verify your identity on /account/real-name (Cybersecurity Law of the PRC)"}
}
