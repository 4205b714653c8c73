package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// IdempotencyKey is one Idempotency-Key a user sent on a POST to the API:
// the request it was first used with and, once that request finished, its
// answer (web/idempotency.go).
type IdempotencyKey struct {
	ID     int64
	UserID int64
	Key    string `gorm:"column:idem_key"`
	// RequestHash is the sha256 of method, path and body, hex.
	RequestHash string
	// Status is 0 while the first request runs, then its HTTP status.
	Status      int
	ContentType string
	Location    string
	Body        string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// InProgress reports whether the first request with the key is still running.
func (k *IdempotencyKey) InProgress() bool { return k.Status == 0 }

// ClaimIdempotencyKey records that userID's request with key and hash
// starts now. It answers the new row and true when this request may run;
// else the row of the earlier request with that key (in progress or
// finished) and false. Two concurrent claims of one key: the unique index
// lets exactly one insert win. A row that has expired, or that stayed in
// progress longer than staleAfter (its process died mid-request), is
// replaced.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, userID int64, key, hash string, ttl, staleAfter time.Duration) (*IdempotencyKey, bool, error) {
	for range 3 {
		now := db.Now().UTC()
		row := &IdempotencyKey{UserID: userID, Key: key, RequestHash: hash, CreatedAt: now, ExpiresAt: now.Add(ttl)}
		res := db.W.WithContext(ctx).Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "user_id"}, {Name: "idem_key"}}, DoNothing: true,
		}).Create(row)
		if res.Error != nil {
			return nil, false, res.Error
		}
		if res.RowsAffected == 1 {
			return row, true, nil
		}
		var old IdempotencyKey
		err := db.W.WithContext(ctx).Where("user_id = ? AND idem_key = ?", userID, key).Take(&old).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			continue // deleted meanwhile: try again
		}
		if err != nil {
			return nil, false, err
		}
		if old.ExpiresAt.After(now) && !(old.InProgress() && old.CreatedAt.Before(now.Add(-staleAfter))) {
			return &old, false, nil
		}
		// Replace it; the condition is repeated so that of two requests
		// replacing one row, only one deletes it.
		if err := db.W.WithContext(ctx).Where("id = ? AND (expires_at <= ? OR (status = 0 AND created_at < ?))", old.ID, now, now.Add(-staleAfter)).
			Delete(&IdempotencyKey{}).Error; err != nil {
			return nil, false, err
		}
	}
	return nil, false, errors.New("idempotency key: could not claim after three tries")
}

// FinishIdempotencyKey stores the answer of the request that claimed the row.
func (db *DB) FinishIdempotencyKey(ctx context.Context, id int64, status int, contentType, location string, body []byte) error {
	return db.W.WithContext(ctx).Model(&IdempotencyKey{}).Where("id = ?", id).
		Updates(map[string]any{"status": status, "content_type": contentType, "location": location, "body": string(body)}).Error
}

// ReleaseIdempotencyKey forgets a claim whose request should be retried
// as new (it failed on our side or was rate-limited).
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, id int64) error {
	return db.W.WithContext(ctx).Where("id = ?", id).Delete(&IdempotencyKey{}).Error
}

// PurgeIdempotencyKeys deletes the keys that have expired.
func (db *DB) PurgeIdempotencyKeys(ctx context.Context) (int64, error) {
	res := db.W.WithContext(ctx).Where("expires_at <= ?", db.Now().UTC()).Delete(&IdempotencyKey{})
	return res.RowsAffected, res.Error
}
