package identity_test

import (
	"testing"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/billing"
	"suanli/config"
	"suanli/dbtest"
	"suanli/models"
)

// The rent gate: with real-name verification required, an unverified
// user may rent on an organisation's trial or promotional credit, not
// once cash was paid into its wallet; verified users, and every user with
// --real-name off, may.
func TestMayRent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u, root := r.user("renter@example.com"), r.admin("root@example.com")
		orgs, err := db.OrgsOfUser(r.ctx, u.ID)
		if err != nil || len(orgs) != 1 {
			t.Fatalf("orgs %v %v", orgs, err)
		}
		org := orgs[0].Org.ID
		if err := r.svc.MayRent(r.ctx, u, org); err != nil {
			t.Fatalf("an empty wallet: %v", err)
		}
		if err := db.Tx(r.ctx, func(tx *gorm.DB) error {
			if err := billing.CreditPromo(tx, org, 2000, "trial_credit", "trial", nil, nil, r.clock.now); err != nil {
				return err
			}
			return billing.CreditPromo(tx, org, 500, "promo_credit", "launch", nil, nil, r.clock.now)
		}); err != nil {
			t.Fatal(err)
		}
		if err := r.svc.MayRent(r.ctx, u, org); err != nil {
			t.Fatalf("trial and promotional credit only: %v", err)
		}
		// A bank transfer asked for but not received is no cash yet.
		w := &billing.Wallet{DB: db}
		tp, _, err := w.StartTopup(r.ctx, u, org, 10_000, models.MethodBank, "en")
		if err != nil {
			t.Fatal(err)
		}
		if err := r.svc.MayRent(r.ctx, u, org); err != nil {
			t.Fatalf("a top-up not yet received: %v", err)
		}
		if err := w.ConfirmBankTransfer(r.ctx, root, tp.ID, 10_000); err != nil {
			t.Fatal(err)
		}
		err = r.svc.MayRent(r.ctx, u, org)
		if ae, ok := apperr.As(err); !ok || ae.Code != apperr.EREALNAMEREQUIRED || ae.Field != "real_name" || apperr.General(ae.Code) != apperr.EFORBIDDEN {
			t.Fatalf("cash paid in, unverified: %v, want real_name_required", err)
		}
		off := *r.svc
		off.Mode = config.RealNameOff
		if err := off.MayRent(r.ctx, u, org); err != nil {
			t.Errorf("--real-name off: %v", err)
		}
		r.verify(u, idA, "13800138000")
		if err := r.svc.MayRent(r.ctx, u, org); err != nil {
			t.Errorf("verified: %v", err)
		}
	})
}
