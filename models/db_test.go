package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/models"
)

// Code handed only a transaction reads the database's injected clock, so
// what it writes (an audit entry's time) is the test's time, not the wall
// clock's.
func TestTransactionCarriesTheClock(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		fixed := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
		db.Now = func() time.Time { return fixed }
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			if got := models.Now(tx); !got.Equal(fixed) {
				t.Errorf("models.Now(tx) = %v, want the DB's clock %v", got, fixed)
			}
			return models.AppendAudit(ctx, tx, models.Now(tx), "test.clock", "clock:1", nil, "")
		}); err != nil {
			t.Fatal(err)
		}
		var e models.AuditEntry
		if err := db.R.Where("action = ?", "test.clock").First(&e).Error; err != nil {
			t.Fatal(err)
		}
		if !e.At.Equal(fixed) {
			t.Errorf("audit entry at %v, want %v", e.At, fixed)
		}
		if got := models.Now(db.R); got.Year() == 2031 {
			t.Errorf("outside a Tx, models.Now = %v: the test clock leaked", got)
		}
	})
}

// Attempt undoes what its function wrote when the error is one to undo,
// and the transaction goes on to commit the rest.
func TestAttemptUndoesAFailedTry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		errTaken := errors.New("taken")
		undo := func(err error) bool { return errors.Is(err, errTaken) }
		user := func(tx *gorm.DB, email string) error {
			return tx.Create(&models.User{Email: email, Name: email, PasswordHash: "x"}).Error
		}
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			err := models.Attempt(tx, "try1", func() error {
				if err := user(tx, "undone@example.com"); err != nil {
					return err
				}
				return errTaken
			}, undo)
			if !errors.Is(err, errTaken) {
				t.Errorf("Attempt returned %v, want the function's error", err)
			}
			return models.Attempt(tx, "try2", func() error { return user(tx, "kept@example.com") }, undo)
		}); err != nil {
			t.Fatal(err)
		}
		for email, want := range map[string]int64{"undone@example.com": 0, "kept@example.com": 1} {
			var n int64
			if err := db.R.Model(&models.User{}).Where("email = ?", email).Count(&n).Error; err != nil || n != want {
				t.Errorf("%s: %d users (%v), want %d", email, n, err, want)
			}
		}
	})
}
