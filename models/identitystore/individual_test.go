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
	"suanli/models/ledger"
)

// The verifications' queries on both databases: statuses (unverified
// without a row), a write that replaces the row, one verified account per
// digest (the partial unique index), the reseal's guarded update, and
// what counts as cash paid in.
func TestIndividualQueries(t *testing.T) {
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
		save := func(u *models.User, status string) {
			t.Helper()
			row := identitystore.Individual{UserID: u.ID, Status: status, Method: identitystore.MethodSMS, LegalName: "张伟", IDSealed: "k.x.sealed-" + status,
				IDMask: "5101**********1236", IDDigest: &digest, Phone: "13800138000", SubmittedAt: now, UpdatedAt: now}
			if err := db.Tx(ctx, func(tx *gorm.DB) error { return identitystore.SaveIndividual(tx, &row) }); err != nil {
				t.Fatalf("save %s: %v", status, err)
			}
		}
		save(a, identitystore.Pending)
		save(a, identitystore.Verified) // replaces
		st, err := identitystore.StatusesOf(ctx, db, []int64{a.ID, b.ID})
		if err != nil || st[a.ID] != identitystore.Verified || st[b.ID] != identitystore.Unverified {
			t.Fatalf("statuses %v %v", st, err)
		}
		save(b, identitystore.Pending) // the same digest, pending: allowed
		err = db.Tx(ctx, func(tx *gorm.DB) error {
			if taken, err := identitystore.VerifiedElsewhere(tx, []string{"other", digest}, b.ID); err != nil || !taken {
				t.Errorf("verified elsewhere: %v %v", taken, err)
			}
			if taken, err := identitystore.VerifiedElsewhere(tx, []string{"other"}, b.ID); err != nil || taken {
				t.Errorf("verified elsewhere under another digest: %v %v", taken, err)
			}
			if ids, err := identitystore.VerifiedWith(tx, []string{digest}, b.ID); err != nil || len(ids) != 1 || ids[0] != a.ID {
				t.Errorf("verified with the digest: %v %v", ids, err)
			}
			return identitystore.MarkVerified(tx, b.ID, now)
		})
		if err == nil || !ledger.IsUniqueViolation(err) {
			t.Fatalf("a second verified row of one digest: %v, want a unique violation", err)
		}
		if ok, err := updateSealed(db, a.ID, "stale", "new", "d2"); err != nil || ok {
			t.Errorf("reseal over a changed value: %v %v", ok, err)
		}
		if ok, err := updateSealed(db, a.ID, "k.x.sealed-verified", "new", "d2"); err != nil || !ok {
			t.Errorf("reseal: %v %v", ok, err)
		}
		page, err := identitystore.SealedPage(ctx, db, 0, 10)
		if err != nil || len(page) != 2 || page[0].UserID != a.ID || page[0].IDSealed != "new" || *page[0].IDDigest != "d2" {
			t.Errorf("sealed page %+v %v", page, err)
		}
		// The reseal of a duplicate: the sealed value only, the digest kept.
		var ok bool
		err = db.Tx(ctx, func(tx *gorm.DB) (err error) {
			ok, err = identitystore.UpdateSealedOnly(tx, a.ID, "new", "newer")
			return err
		})
		if in, _ := identitystore.IndividualOf(ctx, db, a.ID); err != nil || !ok || in.IDSealed != "newer" || *in.IDDigest != "d2" {
			t.Errorf("sealed only: %v %v %+v", ok, err, in)
		}

		orgs, _ := db.OrgsOfUser(ctx, a.ID)
		org := orgs[0].Org.ID
		cash := func() bool {
			t.Helper()
			ok, err := identitystore.PaidInCash(ctx, db, org)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if cash() {
			t.Error("an empty wallet had cash")
		}
		received := int64(100)
		tp := models.Topup{OrgID: org, UserID: a.ID, AmountFen: 100, Method: models.MethodBank, Status: "pending", Reference: "T-1", CreatedAt: now}
		if err := db.W.Create(&tp).Error; err != nil {
			t.Fatal(err)
		}
		if cash() {
			t.Error("a pending transfer counted as cash")
		}
		if err := db.W.Model(&tp).Updates(map[string]any{"status": models.TopupPaid, "received_fen": received, "refunded_fen": received}).Error; err != nil {
			t.Fatal(err)
		}
		if !cash() {
			t.Error("a received (then refunded) transfer is not cash paid in")
		}
	})
}

func updateSealed(db *models.DB, userID int64, was, sealed, digest string) (bool, error) {
	var ok bool
	err := db.Tx(context.Background(), func(tx *gorm.DB) error {
		var err error
		ok, err = identitystore.UpdateSealed(tx, userID, was, sealed, digest)
		return err
	})
	return ok, err
}
