package platform

import (
	"context"
	"time"

	"gorm.io/gorm"

	"suanli/models"
)

// ThrottleEvent is one counted attempt of a throttled action (a sign-up
// from an address, a reset mail for an email) that has no row of its own.
type ThrottleEvent struct {
	ID      int64
	Kind    string
	Subject string
	At      time.Time
}

// CountThrottle counts the attempts of a kind for a subject since the time
// given, and returns the oldest of them (zero when none).
func CountThrottle(ctx context.Context, db *models.DB, kind, subject string, since time.Time) (int64, time.Time, error) {
	return CountThrottleIn(db.W.WithContext(ctx), kind, subject, since)
}

// CountThrottleIn is CountThrottle in tx.
func CountThrottleIn(tx *gorm.DB, kind, subject string, since time.Time) (int64, time.Time, error) {
	var n int64
	if err := tx.Model(&ThrottleEvent{}).Where("kind = ? AND subject = ? AND at > ?", kind, subject, since).Count(&n).Error; err != nil || n == 0 {
		return n, time.Time{}, err
	}
	// MIN over a timestamp comes back as text on SQLite; the first row by
	// time is read instead.
	var first ThrottleEvent
	if err := tx.Where("kind = ? AND subject = ? AND at > ?", kind, subject, since).Order("at").First(&first).Error; err != nil {
		return 0, time.Time{}, err
	}
	return n, first.At, nil
}

// LockThrottle holds, until tx ends, a lock on a throttle's subject on
// PostgreSQL (a transaction-scoped advisory lock), so that attempts sent
// at once are counted one after another; SQLite's one writer does that
// already.
func LockThrottle(tx *gorm.DB, kind, subject string) error {
	if tx.Dialector.Name() != "postgres" {
		return nil
	}
	return tx.Exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, kind+":"+subject).Error
}

// RecordThrottle stores one attempt of a kind for each subject in tx.
func RecordThrottle(tx *gorm.DB, kind string, at time.Time, subjects ...string) error {
	for _, s := range subjects {
		if s == "" {
			continue
		}
		if err := tx.Create(&ThrottleEvent{Kind: kind, Subject: s, At: at}).Error; err != nil {
			return err
		}
	}
	return nil
}

// PurgeThrottleEvents deletes attempts older than the time given.
func PurgeThrottleEvents(ctx context.Context, db *models.DB, before time.Time) error {
	return db.W.WithContext(ctx).Where("at < ?", before).Delete(&ThrottleEvent{}).Error
}
