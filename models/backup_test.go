package models_test

import (
	"context"
	"path/filepath"
	"testing"

	"suanli/dbtest"
	"suanli/models"
)

// A SQLite copy made with VacuumInto opens as a database holding what the
// original held.
func TestVacuumIntoCopiesTheDatabase(t *testing.T) {
	ctx := context.Background()
	db := dbtest.SQLite(t)
	if err := db.W.Create(&models.User{Email: "copy@example.com", Name: "Copy", PasswordHash: "x"}).Error; err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "copy.db")
	if err := db.VacuumInto(ctx, out); err != nil {
		t.Fatal(err)
	}
	cp, err := models.Open(ctx, "sqlite", out)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	var n int64
	if err := cp.R.Model(&models.User{}).Where("email = ?", "copy@example.com").Count(&n).Error; err != nil || n != 1 {
		t.Fatalf("the copy holds %d such users (%v), want 1", n, err)
	}
	if err := db.VacuumInto(ctx, out); err == nil {
		t.Error("VACUUM INTO an existing database succeeded")
	}
}
