package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
)

// InsertEmailToken stores a one-time link's hash in tx.
func InsertEmailToken(tx *gorm.DB, t *EmailToken) error { return tx.Create(t).Error }

// UseEmailToken marks the unexpired, unused token with the hash and
// purpose as used, in tx, and returns it. Any other token is EINVALID: an
// expired, reused or unknown link says the same thing.
func UseEmailToken(tx *gorm.DB, purpose, hash string, now time.Time) (*EmailToken, error) {
	var t EmailToken
	err := tx.Where("purpose = ? AND token_hash = ?", purpose, hash).First(&t).Error
	bad := &apperr.Error{Code: apperr.EINVALID, Field: "token", Message: "this link is invalid, used or expired", Key: "err.link_invalid"}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, bad
	}
	if err != nil {
		return nil, err
	}
	if t.UsedAt != nil || !now.Before(t.ExpiresAt) {
		return nil, bad
	}
	res := tx.Model(&EmailToken{}).Where("id = ? AND used_at IS NULL", t.ID).Update("used_at", now)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected != 1 {
		return nil, bad // used concurrently
	}
	return &t, nil
}

// PeekEmailToken returns the unexpired, unused token with the hash and
// purpose without using it; any other is EINVALID, as for UseEmailToken.
func (db *DB) PeekEmailToken(ctx context.Context, purpose, hash string, now time.Time) (*EmailToken, error) {
	var t EmailToken
	err := db.W.WithContext(ctx).Where("purpose = ? AND token_hash = ?", purpose, hash).First(&t).Error
	bad := &apperr.Error{Code: apperr.EINVALID, Field: "token", Message: "this link is invalid, used or expired", Key: "err.link_invalid"}
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && (t.UsedAt != nil || !now.Before(t.ExpiresAt))) {
		return nil, bad
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// InsertAPIToken stores a new API token's hash.
func (db *DB) InsertAPIToken(ctx context.Context, t *APIToken) error {
	return db.W.WithContext(ctx).Create(t).Error
}

// APITokensOf returns a user's tokens, newest first.
func (db *DB) APITokensOf(ctx context.Context, userID int64) ([]APIToken, error) {
	var ts []APIToken
	err := db.W.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC").Find(&ts).Error
	return ts, err
}

// RevokeAPIToken revokes one of the user's tokens; another user's token is
// ENOTFOUND.
func (db *DB) RevokeAPIToken(ctx context.Context, userID, tokenID int64, at time.Time) error {
	res := db.W.WithContext(ctx).Model(&APIToken{}).Where("id = ? AND user_id = ?", tokenID, userID).
		Where("revoked_at IS NULL").Update("revoked_at", at)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		var n int64
		db.W.WithContext(ctx).Model(&APIToken{}).Where("id = ? AND user_id = ?", tokenID, userID).Count(&n)
		if n == 0 {
			return apperr.NotFound("token")
		}
	}
	return nil
}

// UserByAPIToken returns the user of a live token with the hash and records
// its use, or ENOTFOUND.
func (db *DB) UserByAPIToken(ctx context.Context, hash string, now time.Time) (*User, error) {
	var t APIToken
	err := db.W.WithContext(ctx).Where("token_hash = ? AND revoked_at IS NULL", hash).First(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("token")
	}
	if err != nil {
		return nil, err
	}
	// Recording every use would make each API call a write; a minute's
	// precision is what the page shows.
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
		db.W.WithContext(ctx).Model(&APIToken{}).Where("id = ?", t.ID).Update("last_used_at", now)
	}
	return db.UserByID(ctx, t.UserID)
}

// EnqueueMail writes a message to the outbox in tx.
func EnqueueMail(tx *gorm.DB, m *OutboxMail) error { return tx.Create(m).Error }

// Outbox returns the newest messages, optionally for one address.
func (db *DB) Outbox(ctx context.Context, to string, limit int) ([]OutboxMail, error) {
	q := db.W.WithContext(ctx).Order("id DESC").Limit(limit)
	if to != "" {
		q = q.Where("to_addr = ?", NormalizeEmail(to))
	}
	var ms []OutboxMail
	err := q.Find(&ms).Error
	return ms, err
}

// UnsentMail returns messages not yet delivered, oldest first.
func (db *DB) UnsentMail(ctx context.Context, limit int) ([]OutboxMail, error) {
	var ms []OutboxMail
	err := db.W.WithContext(ctx).Where("sent_at IS NULL").Order("id").Limit(limit).Find(&ms).Error
	return ms, err
}

// MarkMailSent records a delivery (or, with err, the last failure).
func (db *DB) MarkMailSent(ctx context.Context, id int64, at time.Time, sendErr error) error {
	if sendErr != nil {
		return db.W.WithContext(ctx).Model(&OutboxMail{}).Where("id = ?", id).Update("last_error", sendErr.Error()).Error
	}
	return db.W.WithContext(ctx).Model(&OutboxMail{}).Where("id = ?", id).Updates(map[string]any{"sent_at": at, "last_error": ""}).Error
}

// RetireEmailTokens marks every unused token of a purpose of the user as
// used, in tx: a new reset link makes the older ones worthless.
func RetireEmailTokens(tx *gorm.DB, purpose string, userID int64, now time.Time) error {
	return tx.Model(&EmailToken{}).Where("purpose = ? AND user_id = ? AND used_at IS NULL", purpose, userID).Update("used_at", now).Error
}

// PendingInvitations returns an organisation's invitations that can still
// be accepted, newest first.
func (db *DB) PendingInvitations(ctx context.Context, orgID int64, now time.Time) ([]EmailToken, error) {
	var ts []EmailToken
	err := db.R.WithContext(ctx).Where("purpose = ? AND org_id = ? AND used_at IS NULL AND expires_at > ?", TokenInvite, orgID, now).
		Order("id DESC").Find(&ts).Error
	return ts, err
}

// RevokeInvitation makes an organisation's pending invitation worthless in
// tx; it reports whether there was one.
func RevokeInvitation(tx *gorm.DB, orgID, id int64, now time.Time) (bool, error) {
	res := tx.Model(&EmailToken{}).Where("id = ? AND purpose = ? AND org_id = ? AND used_at IS NULL", id, TokenInvite, orgID).Update("used_at", now)
	return res.RowsAffected == 1, res.Error
}

// InvitationTo is a pending invitation with its organisation's name.
type InvitationTo struct {
	ID      int64
	Role    string
	OrgName string
}

// InvitationsTo returns the pending invitations to an address, newest
// first.
func (db *DB) InvitationsTo(ctx context.Context, email string, now time.Time) ([]InvitationTo, error) {
	var out []InvitationTo
	err := db.R.WithContext(ctx).Table("email_tokens t").Joins("JOIN orgs o ON o.id = t.org_id").
		Select("t.id, t.role, o.name AS org_name").
		Where("t.purpose = ? AND t.email = ? AND t.used_at IS NULL AND t.expires_at > ?", TokenInvite, NormalizeEmail(email), now).
		Order("t.id DESC").Scan(&out).Error
	return out, err
}

// UseInvitation marks a pending invitation to email, by its id, as used in
// tx and returns it; one that is used, expired, unknown or to another
// address is ENOTFOUND (and left as it was).
func UseInvitation(tx *gorm.DB, id int64, email string, now time.Time) (*EmailToken, error) {
	var t EmailToken
	err := tx.Where("id = ? AND purpose = ? AND email = ? AND used_at IS NULL AND expires_at > ?", id, TokenInvite, NormalizeEmail(email), now).First(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("invitation")
	}
	if err != nil {
		return nil, err
	}
	res := tx.Model(&EmailToken{}).Where("id = ? AND used_at IS NULL", id).Update("used_at", now)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected != 1 {
		return nil, apperr.NotFound("invitation")
	}
	return &t, nil
}

// RetireInvitations marks the other pending invitations of an address to
// an organisation as used: once a member, the rest are noise.
func RetireInvitations(tx *gorm.DB, orgID int64, email string, now time.Time) error {
	return tx.Model(&EmailToken{}).Where("purpose = ? AND org_id = ? AND email = ? AND used_at IS NULL", TokenInvite, orgID, NormalizeEmail(email)).
		Update("used_at", now).Error
}
