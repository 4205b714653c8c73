package rentalstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/models"
	"suanli/pricing"
)

// The queries of idle stop (migration 00019): the rentals the watch looks
// at, their settings and warnings.

// IdleWatch is a running on-demand GPU rental that an idle-stop setting
// applies to: its own (Own…, zero when off) and its organisation's policy
// (Policy…, zero when none), when its renter was last warned, and whether
// its node is simulated (its utilisation then is too).
type IdleWatch struct {
	RentalID, OrgID, UserID       int64
	NodeID                        *int64
	OwnBelowPct, OwnMinutes       int
	PolicyBelowPct, PolicyMinutes int
	WarnedAt                      *time.Time
	Simulated                     bool
}

// Own is the rental's own setting.
func (w *IdleWatch) Own() models.IdleStop {
	return models.IdleStop{BelowPct: w.OwnBelowPct, Minutes: w.OwnMinutes}
}

// Policy is its organisation's policy.
func (w *IdleWatch) Policy() models.IdleStop {
	return models.IdleStop{BelowPct: w.PolicyBelowPct, Minutes: w.PolicyMinutes}
}

// IdleWatchList returns up to limit running on-demand rentals with GPUs
// (a term rental is prepaid: stopping it would save nothing) after the id
// afterID, by id, that have an idle-stop setting of their own or whose
// organisation, a lab, has a policy (only labs' policies count).
func IdleWatchList(ctx context.Context, db *models.DB, afterID int64, limit int) ([]IdleWatch, error) {
	var out []IdleWatch
	err := db.R.WithContext(ctx).Raw(`SELECT r.id AS rental_id, r.org_id, r.user_id, r.node_id,
			r.idle_stop_below_pct AS own_below_pct, r.idle_stop_minutes AS own_minutes, r.idle_warned_at AS warned_at,
			CASE WHEN o.kind = ? THEN o.idle_policy_below_pct ELSE 0 END AS policy_below_pct,
			CASE WHEN o.kind = ? THEN o.idle_policy_minutes ELSE 0 END AS policy_minutes,
			COALESCE(n.simulated, FALSE) AS simulated
		FROM rentals r JOIN orgs o ON o.id = r.org_id LEFT JOIN nodes n ON n.id = r.node_id
		WHERE r.status = ? AND r.term = ? AND NOT r.no_gpu AND (r.idle_stop_minutes > 0 OR (o.kind = ? AND o.idle_policy_minutes > 0)) AND r.id > ?
		ORDER BY r.id LIMIT ?`, models.OrgLab, models.OrgLab, models.RentalRunning, pricing.OnDemand, models.OrgLab, afterID, limit).Scan(&out).Error
	return out, err
}

// ForgetOrgIdleWarnings forgets in tx the last idle warning of the
// organisation's running rentals (its policy changed: the next warning
// says what the new one does, and no stop comes sooner than it).
func ForgetOrgIdleWarnings(tx *gorm.DB, orgID int64) error {
	return tx.Model(&models.Rental{}).Where("org_id = ? AND status = ? AND idle_warned_at IS NOT NULL", orgID, models.RentalRunning).
		Update("idle_warned_at", nil).Error
}

// RunStartedAt is when the rental last started running on the GPUs it
// holds: its latest running or migrated event (found false when it never
// ran).
func RunStartedAt(ctx context.Context, db *models.DB, rentalID int64) (at time.Time, found bool, err error) {
	var e models.RentalEvent
	err = db.R.WithContext(ctx).Where("rental_id = ? AND kind IN ?", rentalID, []string{"running", "migrated"}).
		Order("id DESC").Limit(1).Take(&e).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return e.At, true, nil
}

// SetRentalIdleStop stores a rental's own idle-stop setting in tx and
// forgets its last warning (the next one says what the new setting does).
func SetRentalIdleStop(tx *gorm.DB, rentalID int64, s models.IdleStop, now time.Time) error {
	return tx.Model(&models.Rental{}).Where("id = ?", rentalID).Updates(map[string]any{
		"idle_stop_below_pct": s.BelowPct, "idle_stop_minutes": s.Minutes, "idle_warned_at": nil, "updated_at": now,
	}).Error
}

// MarkIdleWarned records in tx that the renter was warned at at, unless a
// warning at or after since (the idle streak's start) was recorded
// already; it reports whether it recorded this one.
func MarkIdleWarned(tx *gorm.DB, rentalID int64, since, at time.Time) (bool, error) {
	res := tx.Model(&models.Rental{}).Where("id = ? AND (idle_warned_at IS NULL OR idle_warned_at < ?)", rentalID, since).
		Update("idle_warned_at", at)
	return res.RowsAffected == 1, res.Error
}
