package platform

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// The kinds of app grants (migration 00020).
const (
	AppTicket  = "ticket"
	AppSession = "session"
)

// AppGrant lets one user into one rental's apps origin: a one-time
// ticket on the way there, then the origin's own session. SessionHash is
// the SHA-256 of the marketplace session's token that made the ticket
// (migration 00021): logging out there ends the grants it made.
type AppGrant struct {
	TokenHash    string `gorm:"primaryKey"`
	Kind         string
	UserID       int64
	RentalID     int64
	SessionEpoch int64
	SessionHash  string
	ExpiresAt    time.Time
	UsedAt       *time.Time
}

// InsertAppGrant stores a grant.
func InsertAppGrant(ctx context.Context, db *models.DB, g *AppGrant) error {
	return db.W.WithContext(ctx).Create(g).Error
}

// TradeAppTicket marks the unused, unexpired ticket of hash for rentalID
// used and stores in its place the session grant sess, for the ticket's
// user, epoch and marketplace session, in one transaction: a ticket opens
// one session, once (ENOTFOUND for any other), and a ticket is never
// spent without its session.
func TradeAppTicket(ctx context.Context, db *models.DB, hash string, rentalID int64, now time.Time, sess *AppGrant) error {
	return db.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&AppGrant{}).Where("token_hash = ? AND kind = ? AND rental_id = ? AND used_at IS NULL AND expires_at > ?", hash, AppTicket, rentalID, now).
			Update("used_at", now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return apperr.NotFound("ticket")
		}
		var t AppGrant
		if err := tx.Where("token_hash = ?", hash).Take(&t).Error; err != nil {
			return err
		}
		sess.Kind, sess.UserID, sess.RentalID, sess.SessionEpoch, sess.SessionHash = AppSession, t.UserID, rentalID, t.SessionEpoch, t.SessionHash
		return tx.Create(sess).Error
	})
}

// EndAppGrantsOfSession deletes the grants that the marketplace session
// of sessionHash made (its user logged out there).
func EndAppGrantsOfSession(ctx context.Context, db *models.DB, sessionHash string) error {
	if sessionHash == "" {
		return nil
	}
	return db.W.WithContext(ctx).Where("session_hash = ?", sessionHash).Delete(&AppGrant{}).Error
}

// AppSessionOf is the unexpired session of hash for rentalID (ENOTFOUND
// if none).
func AppSessionOf(ctx context.Context, db *models.DB, hash string, rentalID int64, now time.Time) (AppGrant, error) {
	var g AppGrant
	err := db.R.WithContext(ctx).Where("token_hash = ? AND kind = ? AND rental_id = ? AND expires_at > ?", hash, AppSession, rentalID, now).Take(&g).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return g, apperr.NotFound("app session")
	}
	return g, err
}

// PurgeAppGrants deletes expired grants.
func PurgeAppGrants(ctx context.Context, db *models.DB, now time.Time) (int64, error) {
	res := db.W.WithContext(ctx).Where("expires_at <= ?", now).Delete(&AppGrant{})
	return res.RowsAffected, res.Error
}
