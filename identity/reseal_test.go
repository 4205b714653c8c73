package identity_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"suanli/apperr"
	"suanli/audit"
	"suanli/config"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/secrets"
)

// dump is every value of every row of a table, as text.
func dump(t *testing.T, db *models.DB, table string) []string {
	t.Helper()
	rows, err := db.SQL.QueryContext(context.Background(), "SELECT * FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			switch v := v.(type) {
			case []byte:
				out = append(out, cols[i]+"="+string(v))
			case nil:
			default:
				out = append(out, cols[i]+"="+fmt.Sprint(v))
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The raw database never holds a plain ID number: not the verification's
// row, the codes, the SMS outbox or the audit log; what is there opens
// only under the ring's key and for its own user.
func TestIDNumbersAreEncryptedAtRest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("secret@example.com")
		r.verify(u, idA, "13800138000")
		// The ID's digits after the region and before the check digit:
		// the birth date and sequence, which no mask shows.
		secret := []string{idA, idA[4:14], idA[6:17]}
		row := dump(t, db, "identity_individuals")
		if len(row) < 5 {
			t.Fatalf("dumped %v", row)
		}
		for _, table := range []string{"identity_individuals", "sms_codes", "sms_outbox", "audit_log"} {
			for _, v := range dump(t, db, table) {
				for _, s := range secret {
					if strings.Contains(v, s) {
						t.Errorf("%s holds %q in %s", table, s, v)
					}
				}
			}
		}
		in, err := identitystore.IndividualOf(r.ctx, db, u.ID)
		if err != nil || in.IDMask != "5101**********1236" || in.IDSealed == "" {
			t.Fatalf("row %+v %v", in, err)
		}
		if plain, err := r.svc.Ring.Open(in.IDSealed, []byte(fmt.Sprintf("identity_individuals.id_sealed:user:%d", u.ID))); err != nil || string(plain) != idA {
			t.Errorf("opened %q, %v", plain, err)
		}
		if _, err := r.svc.Ring.Open(in.IDSealed, []byte(fmt.Sprintf("identity_individuals.id_sealed:user:%d", u.ID+1))); err == nil {
			t.Error("the sealed ID opened for another user")
		}
		if _, err := secrets.NewRing(config.PIIPurpose, newKey(t)).Open(in.IDSealed, []byte(fmt.Sprintf("identity_individuals.id_sealed:user:%d", u.ID))); err == nil {
			t.Error("the sealed ID opened under another key")
		}
	})
}

// A platform admin reads a full ID number only through RevealID, and
// every read is in the audit log: who read whose.
func TestFullReadsAreAudited(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u, admin := r.user("reader@example.com"), r.admin("auditor@example.com")
		r.verify(u, idA, "13800138000")
		if _, err := r.svc.RevealID(audit.WithActor(r.ctx, u.ID, ""), u, u.ID); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a user reads: %v", err)
		}
		if es := auditCount(t, db, audit.RealNameIDRead); len(es) != 0 {
			t.Fatalf("a refused read was audited: %+v", es)
		}
		ctx := audit.WithActor(r.ctx, admin.ID, "192.0.2.4")
		for i := 1; i <= 2; i++ {
			full, err := r.svc.RevealID(ctx, admin, u.ID)
			if err != nil || full != idA {
				t.Fatalf("read %d: %q %v", i, full, err)
			}
			es := auditCount(t, db, audit.RealNameIDRead)
			if len(es) != i {
				t.Fatalf("after %d reads: %d entries", i, len(es))
			}
			e := es[0]
			if e.ActorID == nil || *e.ActorID != admin.ID || e.ActorIP != "192.0.2.4" || e.Subject != fmt.Sprintf("user:%d", u.ID) ||
				!strings.Contains(e.Detail, admin.Email) || strings.Contains(e.Detail, idA) {
				t.Errorf("entry %+v", e)
			}
		}
		op := r.user("noid@example.com")
		if err := r.svc.VerifyByOperator(r.ctx, op); err != nil {
			t.Fatal(err)
		}
		if _, err := r.svc.RevealID(ctx, admin, op.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("an operator's verification: %v, want not found", err)
		}
	})
}

// After a key rotation (the new key current, the old one kept to open),
// Reseal seals every ID number again under the new key and recomputes
// the blind indexes: the values open without the old key, and an ID
// verified before the rotation is still found.
func TestResealAfterRotation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		k1, k2 := newKey(t), newKey(t)
		before := newRig(t, db, k1)
		a, b, c := before.user("a@example.com"), before.user("b@example.com"), before.user("c@example.com")
		before.verify(a, idA, "13800138000")
		if _, err := before.svc.StartIndividual(before.ctx, b, input(idB, "13900139000", "")); err != nil {
			t.Fatal(err)
		}

		after := &identity.Service{DB: db, Ring: secrets.NewRing(config.PIIPurpose, k2, k1), Mode: config.RealNameRequired}
		// The individuals' count (other kinds of sealed values have theirs).
		individuals := func(cs []identity.ResealCount) identity.ResealCount {
			i := slices.IndexFunc(cs, func(c identity.ResealCount) bool { return c.Kind == "individuals" })
			if i < 0 {
				t.Fatalf("no individuals in %+v", cs)
			}
			return cs[i]
		}
		counts, err := after.Reseal(before.ctx)
		if c := individuals(counts); err != nil || c.Seen != 2 || c.Resealed != 2 || len(c.Duplicates) != 0 {
			t.Fatalf("reseal: %+v %v", counts, err)
		}
		again, err := after.Reseal(before.ctx)
		if c := individuals(again); err != nil || c.Seen != 2 || c.Resealed != 0 || len(c.Duplicates) != 0 {
			t.Fatalf("reseal again: %+v %v", again, err)
		}
		onlyNew := &identity.Service{DB: db, Ring: secrets.NewRing(config.PIIPurpose, k2), Mode: config.RealNameRequired}
		root := before.admin("root@example.com")
		for _, x := range []struct {
			u  *models.User
			id string
		}{{a, idA}, {b, idB}} {
			in, err := identitystore.IndividualOf(before.ctx, db, x.u.ID)
			if err != nil || !onlyNew.Ring.Current(in.IDSealed) {
				t.Fatalf("%s: not under the new key: %+v %v", x.u.Email, in, err)
			}
			if full, err := onlyNew.RevealID(before.ctx, root, x.u.ID); err != nil || full != x.id {
				t.Errorf("%s: read without the old key: %q %v", x.u.Email, full, err)
			}
		}
		// The blind index still finds the ID verified before the rotation.
		if _, err := onlyNew.StartIndividual(before.ctx, c, input(idA, "13700137000", "")); apperr.Code(err) != apperr.ECONFLICT {
			t.Fatalf("a verified ID on another account after the rotation: %v, want conflict", err)
		}
		// Without the old key, what it sealed and was not resealed is an error.
		stale := newRig(t, db, newKey(t))
		if _, err := stale.svc.Reseal(before.ctx); err == nil {
			t.Error("reseal under a ring that opens nothing succeeded")
		}
	})
}
