package platform

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/models"
)

// SessionStore keeps scs sessions in the database, so any replica serves
// any request. It implements scs.CtxStore.
type SessionStore struct{ DB *models.DB }

type sessionRow struct {
	Token  string `gorm:"primaryKey"`
	Data   []byte
	Expiry time.Time
}

func (sessionRow) TableName() string { return "sessions" }

// FindCtx returns a live session's data.
func (s SessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var r sessionRow
	err := s.DB.W.WithContext(ctx).Where("token = ? AND expiry > ?", token, s.DB.Now().UTC()).First(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return r.Data, true, nil
}

// CommitCtx stores a session.
func (s SessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	return s.DB.W.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "token"}},
		DoUpdates: clause.AssignmentColumns([]string{"data", "expiry"}),
	}).Create(&sessionRow{Token: token, Data: b, Expiry: expiry.UTC()}).Error
}

// DeleteCtx removes a session.
func (s SessionStore) DeleteCtx(ctx context.Context, token string) error {
	return s.DB.W.WithContext(ctx).Where("token = ?", token).Delete(&sessionRow{}).Error
}

// Find implements scs.Store.
func (s SessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

// Commit implements scs.Store.
func (s SessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

// Delete implements scs.Store.
func (s SessionStore) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }

// PurgeExpiredSessions deletes sessions past their expiry.
func PurgeExpiredSessions(ctx context.Context, db *models.DB) (int64, error) {
	res := db.W.WithContext(ctx).Where("expiry <= ?", db.Now().UTC()).Delete(&sessionRow{})
	return res.RowsAffected, res.Error
}

// SessionLive reports whether the session of token exists and has not
// expired (a lasting request checks that its session was not ended).
func SessionLive(ctx context.Context, db *models.DB, token string) (bool, error) {
	_, found, err := SessionStore{DB: db}.FindCtx(ctx, token)
	return found, err
}
