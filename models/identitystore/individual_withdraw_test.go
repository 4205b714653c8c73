package identitystore_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/identitystore"
)

// A withdrawal's queries on both databases: the user's row goes (another
// user's stays, and the digest can then be verified elsewhere), a second
// delete finds nothing, and voiding marks only the user's unused codes of
// the purpose used, keeping every row.
func TestDeleteIndividualAndVoidCodes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
		mk := func(email string) *models.User {
			u, err := (&accounts.Service{DB: db}).CreateUser(ctx, email, "violet-kettle-1984", "", false)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		a, b := mk("a@example.com"), mk("b@example.com")
		digest := "d1"
		tx := func(fn func(tx *gorm.DB) error) {
			t.Helper()
			if err := db.Tx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		tx(func(tx *gorm.DB) error {
			for _, u := range []*models.User{a, b} {
				row := identitystore.Individual{UserID: u.ID, Status: identitystore.Pending, Method: identitystore.MethodSMS, LegalName: "张伟", IDSealed: "k.x.sealed",
					IDMask: "5101**********1236", IDDigest: &digest, Phone: "13800138000", SubmittedAt: now, UpdatedAt: now}
				if err := identitystore.SaveIndividual(tx, &row); err != nil {
					return err
				}
			}
			if err := identitystore.MarkVerified(tx, a.ID, now); err != nil {
				return err
			}
			for _, c := range []identitystore.SMSCode{
				{UserID: a.ID, Purpose: "realname", Phone: "13800138000", CodeHash: "h1", CreatedAt: now, ExpiresAt: now.Add(time.Minute)},
				{UserID: a.ID, Purpose: "realname", Phone: "13800138000", CodeHash: "h2", CreatedAt: now, ExpiresAt: now.Add(time.Minute), UsedAt: &now},
				{UserID: a.ID, Purpose: "other", Phone: "13800138000", CodeHash: "h3", CreatedAt: now, ExpiresAt: now.Add(time.Minute)},
				{UserID: b.ID, Purpose: "realname", Phone: "13800138000", CodeHash: "h4", CreatedAt: now, ExpiresAt: now.Add(time.Minute)},
			} {
				if err := identitystore.InsertCode(tx, &c); err != nil {
					return err
				}
			}
			return nil
		})

		later := now.Add(time.Hour)
		tx(func(tx *gorm.DB) error {
			if ok, err := identitystore.DeleteIndividual(tx, a.ID); err != nil || !ok {
				t.Errorf("delete a: %v %v", ok, err)
			}
			if ok, err := identitystore.DeleteIndividual(tx, a.ID); err != nil || ok {
				t.Errorf("delete a again: %v %v, want nothing", ok, err)
			}
			if n, err := identitystore.VoidOpenCodes(tx, a.ID, "realname", later); err != nil || n != 1 {
				t.Errorf("voided %d %v, want 1", n, err)
			}
			// b's pending row may now be verified: the digest is free.
			return identitystore.MarkVerified(tx, b.ID, later)
		})
		st, err := identitystore.StatusesOf(ctx, db, []int64{a.ID, b.ID})
		if err != nil || st[a.ID] != identitystore.Unverified || st[b.ID] != identitystore.Verified {
			t.Fatalf("statuses %v %v", st, err)
		}
		var codes []identitystore.SMSCode
		if err := db.W.Order("id").Find(&codes).Error; err != nil {
			t.Fatal(err)
		}
		if len(codes) != 4 {
			t.Fatalf("%d codes, want all 4 kept", len(codes))
		}
		for i, want := range []*time.Time{&later, &now, nil, nil} {
			got := codes[i].UsedAt
			if (got == nil) != (want == nil) || (got != nil && !got.Equal(*want)) {
				t.Errorf("code %s used_at %v, want %v", codes[i].CodeHash, got, want)
			}
		}
	})
}
