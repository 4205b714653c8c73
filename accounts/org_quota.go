package accounts

import (
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/platform"
)

// Organisations cost nothing to create, so a user may create only so many:
// DefaultOrgsPerDay (teams, labs and providers together, personal one not
// counted) per rolling day, unless a platform admin set another number for
// them (at most MaxOrgsPerDay).
const (
	DefaultOrgsPerDay = 5
	MaxOrgsPerDay     = 1000
)

// CheckOrgQuota refuses, as a message beside the form's name field, an
// organisation the user may not create now. It locks the user's row in tx
// first, so that requests racing each other are counted one after another.
func CheckOrgQuota(tx *gorm.DB, userID int64, field string, now time.Time) error {
	u, err := platform.UserForUpdate(tx, userID)
	if err != nil {
		return err
	}
	limit := DefaultOrgsPerDay
	if u.OrgsPerDay != nil {
		limit = *u.OrgsPerDay
	}
	n, err := models.OrgsCreatedSince(tx, userID, now.Add(-24*time.Hour))
	if err != nil {
		return err
	}
	if n >= int64(limit) {
		return apperr.Fields{&apperr.Error{Code: apperr.ERATELIMIT, Field: field, Key: "err.org_quota", Args: []any{limit},
			Message: "you have created as many organisations today as you may; try again tomorrow or ask support for more"}}
	}
	return nil
}
