package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"suanli/audit"
	"suanli/config"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/secrets"
)

// Operators make verified accounts with create-user --verified-identity
// (no ID number stored, audited), and reseal-pii moves every sealed ID
// number to a new --pii-key: read without the old key afterwards, the
// blind index still finding an ID number verified before.
func TestAdminVerifiedIdentityAndResealPII(t *testing.T) {
	withoutOwnSettings(t)
	ctx := context.Background()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("operator-pass-2026\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k1, k2 := secrets.GenerateKey(), secrets.GenerateKey()
	for _, email := range []string{"ops@example.com", "renter@example.com", "other@example.com"} {
		args := []string{"create-user", "--data-dir", dir, "--email", email, "--password-file", pw}
		if email == "ops@example.com" {
			args = append(args, "--admin", "--verified-identity")
		}
		if err := admin(ctx, args); err != nil {
			t.Fatal(err)
		}
	}
	db, err := models.Open(ctx, "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	user := func(email string) *models.User {
		u, err := db.UserByEmail(ctx, email)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	ops, renter, other := user("ops@example.com"), user("renter@example.com"), user("other@example.com")
	in, err := identitystore.IndividualOf(ctx, db, ops.ID)
	if err != nil || in.Status != identitystore.Verified || in.Method != identitystore.MethodOperator || in.IDSealed != "" {
		t.Fatalf("--verified-identity: %+v %v", in, err)
	}
	if st, _ := identitystore.StatusOf(ctx, db, renter.ID); st != identitystore.Unverified {
		t.Errorf("without the flag: %s", st)
	}
	es, _, err := db.AuditLog(ctx, models.AuditFilter{Action: audit.RealNameVerified})
	if err != nil || len(es) != 1 || es[0].ActorID != nil || es[0].Subject != "user:"+strconv.FormatInt(ops.ID, 10) {
		t.Errorf("audit %+v %v: want the system's entry for the operator's account", es, err)
	}

	// The renter verifies under the first key.
	ring := func(cur string, old ...string) *secrets.Ring {
		c, _ := secrets.ParseKey(cur)
		var ks []*secrets.Key
		for _, o := range old {
			k, _ := secrets.ParseKey(o)
			ks = append(ks, k)
		}
		return secrets.NewRing(config.PIIPurpose, c, ks...)
	}
	before := &identity.Service{DB: db, Ring: ring(k1)}
	const id = "510107199003071236"
	if _, err := before.StartIndividual(ctx, renter, identity.IndividualInput{Kind: "individual", Name: "张伟", IDNumber: id, Phone: "13800138000", Consent: true}); err != nil {
		t.Fatal(err)
	}
	ms, _, _ := identitystore.OutboxPage(ctx, db, "13800138000", 1, 1)
	if len(ms) != 1 {
		t.Fatal("no SMS")
	}
	if _, err := before.ConfirmIndividual(ctx, renter, regexp.MustCompile(`\d{6}`).FindString(ms[0].Body)); err != nil {
		t.Fatal(err)
	}

	if err := admin(ctx, []string{"reseal-pii", "--data-dir", dir, "--pii-key", k2, "--pii-old-keys", k1}); err != nil {
		t.Fatal(err)
	}
	after := &identity.Service{DB: db, Ring: ring(k2)}
	in, err = identitystore.IndividualOf(ctx, db, renter.ID)
	if err != nil || !after.Ring.Current(in.IDSealed) {
		t.Fatalf("not resealed under the new key: %+v %v", in, err)
	}
	if full, err := after.RevealID(ctx, ops, renter.ID); err != nil || full != id {
		t.Errorf("read under the new key alone: %q %v", full, err)
	}
	if _, err := after.StartIndividual(ctx, other, identity.IndividualInput{Kind: "individual", Name: "李雷", IDNumber: id, Phone: "13900139000", Consent: true}); err == nil {
		t.Error("the ID verified before the rotation was not found by the blind index")
	}
	// Without the key that sealed them, reseal-pii fails and says so.
	if err := admin(ctx, []string{"reseal-pii", "--data-dir", dir, "--pii-key", k1}); err == nil {
		t.Error("reseal-pii without the key of the stored values succeeded")
	}
}
