package identity_test

import (
	"slices"
	"testing"

	"suanli/apperr"
	"suanli/config"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/secrets"
)

// Between a key rotation and its reseal (the new key current, the old one
// kept to open), the blind index still finds an ID number verified under
// the old key, at the start and at the confirmation, and a code sent
// before the rotation still works.
func TestRotationBeforeResealKeepsOneAccountPerIDAndCodesWorking(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		k1, k2 := newKey(t), newKey(t)
		before := newRig(t, db, k1)
		after := &identity.Service{DB: db, Ring: secrets.NewRing(config.PIIPurpose, k2, k1), Mode: config.RealNameRequired}
		a, b := before.user("rot-a@example.com"), before.user("rot-b@example.com")
		before.verify(a, idA, "13800138000")
		if _, err := after.StartIndividual(before.ctx, b, input(idA, "13900139000", "")); apperr.Code(err) != apperr.ECONFLICT {
			t.Fatalf("an ID verified under the old key, started on another account: %v, want conflict", err)
		}

		// Both pending, one under each key; the old key's confirms first.
		c, d := before.user("rot-c@example.com"), before.user("rot-d@example.com")
		if _, err := before.svc.StartIndividual(before.ctx, c, input(idB, "13600136000", "")); err != nil {
			t.Fatal(err)
		}
		if _, err := after.StartIndividual(before.ctx, d, input(idB, "13600136001", "")); err != nil {
			t.Fatal(err)
		}
		if _, err := before.svc.ConfirmIndividual(before.ctx, c, before.code("13600136000")); err != nil {
			t.Fatal(err)
		}
		if _, err := after.ConfirmIndividual(before.ctx, d, before.code("13600136001")); apperr.Code(err) != apperr.ECONFLICT {
			t.Fatalf("the same ID confirmed under the new key: %v, want conflict", err)
		}
		if st := before.status(d); st != identitystore.Pending {
			t.Errorf("d: %s", st)
		}

		// A code sent under the old key, confirmed after the rotation.
		e := before.user("rot-e@example.com")
		if _, err := before.svc.StartIndividual(before.ctx, e, input(idC, "13500135000", "")); err != nil {
			t.Fatal(err)
		}
		if v, err := after.ConfirmIndividual(before.ctx, e, before.code("13500135000")); err != nil || v.Status != identitystore.Verified {
			t.Fatalf("a code sent before the rotation: %+v %v", v, err)
		}
	})
}

// An ID number verified on two accounts under two keys (what a server
// without the check above could make) does not stop reseal-pii: the
// value is resealed under the new key, its digest left as it was, the
// duplicate reported by user ids, and the walk goes on; a second run
// reports it again.
func TestResealReportsDuplicatesAndGoesOn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		k1, k2 := newKey(t), newKey(t)
		before := newRig(t, db, k1)
		a, b, x := before.user("dup-a@example.com"), before.user("dup-b@example.com"), before.user("dup-x@example.com")
		before.verify(a, idA, "13800138000")
		before.verify(b, idB, "13900139000")
		// Under the new key alone the old digests are out of sight.
		onlyNew := &identity.Service{DB: db, Ring: secrets.NewRing(config.PIIPurpose, k2), Mode: config.RealNameRequired}
		if _, err := onlyNew.StartIndividual(before.ctx, x, input(idA, "13700137000", "")); err != nil {
			t.Fatal(err)
		}
		if _, err := onlyNew.ConfirmIndividual(before.ctx, x, before.code("13700137000")); err != nil {
			t.Fatal(err)
		}
		oldDigest := func() string {
			in, err := identitystore.IndividualOf(before.ctx, db, a.ID)
			if err != nil || in.IDDigest == nil {
				t.Fatalf("a's row %+v %v", in, err)
			}
			return *in.IDDigest
		}
		was := oldDigest()

		after := &identity.Service{DB: db, Ring: secrets.NewRing(config.PIIPurpose, k2, k1), Mode: config.RealNameRequired}
		individuals := func(cs []identity.ResealCount) identity.ResealCount {
			i := slices.IndexFunc(cs, func(c identity.ResealCount) bool { return c.Kind == "individuals" })
			if i < 0 {
				t.Fatalf("no individuals in %+v", cs)
			}
			return cs[i]
		}
		want := []identity.Duplicate{{UserID: a.ID, Others: []int64{x.ID}}}
		same := func(got []identity.Duplicate) bool {
			return slices.EqualFunc(got, want, func(g, w identity.Duplicate) bool { return g.UserID == w.UserID && slices.Equal(g.Others, w.Others) })
		}
		counts, err := after.Reseal(before.ctx)
		if c := individuals(counts); err != nil || c.Seen != 3 || c.Resealed != 2 || !same(c.Duplicates) {
			t.Fatalf("reseal: %+v %v, want 3 seen, 2 resealed, a duplicated with x", counts, err)
		}
		for _, u := range []*models.User{a, b, x} {
			in, err := identitystore.IndividualOf(before.ctx, db, u.ID)
			if err != nil || !onlyNew.Ring.Current(in.IDSealed) {
				t.Errorf("%s: not under the new key: %+v %v", u.Email, in, err)
			}
		}
		if got := oldDigest(); got != was {
			t.Errorf("the duplicate's digest changed: %s, want %s", got, was)
		}
		again, err := after.Reseal(before.ctx)
		if c := individuals(again); err != nil || c.Seen != 3 || c.Resealed != 0 || !same(c.Duplicates) {
			t.Fatalf("reseal again: %+v %v", again, err)
		}
	})
}
