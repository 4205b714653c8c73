package models

import (
	"context"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
)

// NormalizeEmail is the form emails are stored and compared in.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// UserByEmail returns the user with the email (any case), or ENOTFOUND.
func (db *DB) UserByEmail(ctx context.Context, email string) (*User, error) {
	return userWhere(db.W.WithContext(ctx), "email = ?", NormalizeEmail(email))
}

// UserByEmailIn returns the user with the email (any case) in tx, or
// ENOTFOUND.
func UserByEmailIn(tx *gorm.DB, email string) (*User, error) {
	return userWhere(tx, "email = ?", NormalizeEmail(email))
}

// BumpSessionEpoch raises the user's session epoch in tx, ending every
// session logged in before, and returns the new epoch.
func BumpSessionEpoch(tx *gorm.DB, userID int64) (int64, error) {
	if err := tx.Model(&User{}).Where("id = ?", userID).Update("session_epoch", gorm.Expr("session_epoch + 1")).Error; err != nil {
		return 0, err
	}
	var epoch int64
	err := tx.Model(&User{}).Where("id = ?", userID).Pluck("session_epoch", &epoch).Error
	return epoch, err
}

// SetOrgsPerDay sets how many organisations the user may create per day
// (nil: the default) in tx.
func SetOrgsPerDay(tx *gorm.DB, userID int64, n *int) error {
	return tx.Model(&User{}).Where("id = ?", userID).Update("orgs_per_day", n).Error
}

// UserByID returns the user, or ENOTFOUND.
func (db *DB) UserByID(ctx context.Context, id int64) (*User, error) {
	return userWhere(db.W.WithContext(ctx), "id = ?", id)
}

func userWhere(tx *gorm.DB, cond string, arg any) (*User, error) {
	var u User
	err := tx.Where(cond, arg).First(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("user")
	}
	return &u, err
}

// InsertUser creates a user in tx; a taken email is ECONFLICT on "email".
func InsertUser(tx *gorm.DB, u *User) error {
	u.Email = NormalizeEmail(u.Email)
	var n int64
	if err := tx.Model(&User{}).Where("email = ?", u.Email).Count(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return &apperr.Error{Code: apperr.ECONFLICT, Field: "email", Message: "email already registered", Key: "err.email_taken"}
	}
	return tx.Create(u).Error
}

// SetUserPassword replaces a user's password hash in tx.
func SetUserPassword(tx *gorm.DB, userID int64, hash string) error {
	return tx.Model(&User{}).Where("id = ?", userID).Update("password_hash", hash).Error
}

// MarkEmailVerified records that the user proved their address, once.
func MarkEmailVerified(tx *gorm.DB, userID int64, at time.Time) (bool, error) {
	res := tx.Model(&User{}).Where("id = ? AND email_verified_at IS NULL", userID).Update("email_verified_at", at)
	return res.RowsAffected > 0, res.Error
}

// CountLoginFailures counts failures for the email and for the address
// since the time given.
func (db *DB) CountLoginFailures(ctx context.Context, email, ip string, since time.Time) (byEmail, byIP int64, oldestEmail, oldestIP time.Time, err error) {
	tx := db.W.WithContext(ctx)
	scan := func(col, val string) (int64, time.Time, error) {
		var fs []LoginFailure
		if err := tx.Where(col+" = ? AND at > ?", val, since).Order("at").Find(&fs).Error; err != nil {
			return 0, time.Time{}, err
		}
		if len(fs) == 0 {
			return 0, time.Time{}, nil
		}
		return int64(len(fs)), fs[0].At, nil
	}
	if byEmail, oldestEmail, err = scan("email", NormalizeEmail(email)); err != nil {
		return
	}
	byIP, oldestIP, err = scan("ip", ip)
	return
}

// RecordLoginFailure stores one wrong password.
func (db *DB) RecordLoginFailure(ctx context.Context, email, ip string, at time.Time) error {
	return db.W.WithContext(ctx).Create(&LoginFailure{Email: NormalizeEmail(email), IP: ip, At: at}).Error
}

// PurgeLoginFailures deletes failures older than the time given.
func (db *DB) PurgeLoginFailures(ctx context.Context, before time.Time) error {
	return db.W.WithContext(ctx).Where("at < ?", before).Delete(&LoginFailure{}).Error
}
