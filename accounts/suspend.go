package accounts

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/locales"
	"suanli/models"
	"suanli/models/platform"
)

// Suspension: a platform admin stops a user (their sessions and API
// tokens stop working, and they cannot log in) or an organisation (it may
// not rent or top up) until they lift it. Each change is written to the
// audit log with the reason, in the same transaction.

// The audit actions of suspensions.
const (
	AuditUserSuspended   = "user.suspended"
	AuditUserUnsuspended = "user.unsuspended"
	AuditOrgSuspended    = "org.suspended"
	AuditOrgUnsuspended  = "org.unsuspended"
)

// MaxReasonLen is the longest suspension reason, in characters.
const MaxReasonLen = 500

// ErrAccountSuspended is what a suspended user gets for every request
// that needs them, and for a login with the right password.
func ErrAccountSuspended() *apperr.Error {
	return &apperr.Error{Code: apperr.EFORBIDDEN, Key: "err.account_suspended", Message: locales.T(locales.EN, "err.account_suspended")}
}

// ErrOrgSuspended is what renting or topping up with a suspended
// organisation gets.
func ErrOrgSuspended() *apperr.Error {
	return &apperr.Error{Code: apperr.EFORBIDDEN, Field: "org_id", Key: "err.org_suspended", Message: locales.T(locales.EN, "err.org_suspended")}
}

// Suspended reports whether u is suspended (nil: not).
func Suspended(u *models.User) bool { return u != nil && u.SuspendedAt != nil }

// checkReason validates a suspension reason; required says whether it may be empty.
func checkReason(reason string, required bool) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case !utf8.ValidString(reason) || strings.ContainsRune(reason, 0):
		return "", FieldErrors{invalid("reason", "err.text")}
	case reason == "" && required:
		return "", FieldErrors{invalid("reason", "admin.suspend_reason_required")}
	case utf8.RuneCountInString(reason) > MaxReasonLen:
		return "", FieldErrors{invalid("reason", "err.name_long", MaxReasonLen)}
	}
	return reason, nil
}

// SuspendUser suspends a user with a reason (required). Only platform
// admins may, and never themselves. Suspending a suspended user changes
// nothing.
func (s *Service) SuspendUser(ctx context.Context, admin *models.User, userID int64, reason string) error {
	return s.setUserSuspended(ctx, admin, userID, reason, true)
}

// UnsuspendUser lifts a user's suspension; the reason is optional.
func (s *Service) UnsuspendUser(ctx context.Context, admin *models.User, userID int64, reason string) error {
	return s.setUserSuspended(ctx, admin, userID, reason, false)
}

func (s *Service) setUserSuspended(ctx context.Context, admin *models.User, userID int64, reason string, suspend bool) error {
	if err := RequirePlatformAdmin(admin); err != nil {
		return err
	}
	if suspend && admin.ID == userID {
		return &apperr.Error{Code: apperr.EINVALID, Field: "reason", Key: "admin.suspend_self", Message: locales.T(locales.EN, "admin.suspend_self")}
	}
	reason, err := checkReason(reason, suspend)
	if err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		u, err := platform.UserForUpdate(tx, userID)
		if err != nil {
			return err
		}
		if (u.SuspendedAt != nil) == suspend {
			return nil
		}
		action := AuditUserUnsuspended
		var when *time.Time
		if suspend {
			at := s.DB.Now().UTC()
			action, when = AuditUserSuspended, &at
		}
		if err := platform.SetUserSuspended(tx, u.ID, when); err != nil {
			return err
		}
		slog.Info(action, "user", u.ID, "by", admin.ID)
		return audit.Record(ctx, tx, action, "user:"+strconv.FormatInt(u.ID, 10), nil, auditDetail(u.Email, reason))
	})
}

// SuspendOrg suspends an organisation with a reason (required): it may no
// longer rent or top up. Only platform admins may.
func (s *Service) SuspendOrg(ctx context.Context, admin *models.User, orgID int64, reason string) error {
	return s.setOrgSuspended(ctx, admin, orgID, reason, true)
}

// UnsuspendOrg lifts an organisation's suspension; the reason is optional.
func (s *Service) UnsuspendOrg(ctx context.Context, admin *models.User, orgID int64, reason string) error {
	return s.setOrgSuspended(ctx, admin, orgID, reason, false)
}

func (s *Service) setOrgSuspended(ctx context.Context, admin *models.User, orgID int64, reason string, suspend bool) error {
	if err := RequirePlatformAdmin(admin); err != nil {
		return err
	}
	reason, err := checkReason(reason, suspend)
	if err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		o, err := platform.OrgForUpdate(tx, orgID)
		if err != nil {
			return err
		}
		if (o.SuspendedAt != nil) == suspend {
			return nil
		}
		action := AuditOrgUnsuspended
		var when *time.Time
		if suspend {
			at := s.DB.Now().UTC()
			action, when = AuditOrgSuspended, &at
		}
		if err := platform.SetOrgSuspended(tx, o.ID, when); err != nil {
			return err
		}
		slog.Info(action, "org", o.ID, "by", admin.ID)
		return audit.Record(ctx, tx, action, "org:"+strconv.FormatInt(o.ID, 10), nil, auditDetail(o.Name, reason))
	})
}

// auditDetail names what was suspended and why.
func auditDetail(name, reason string) string {
	if reason == "" {
		return name
	}
	return name + " — " + reason
}
