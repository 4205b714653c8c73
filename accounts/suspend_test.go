package accounts_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
)

// keyOf returns the message key of an application or field error.
func keyOf(err error) string {
	var fe accounts.FieldErrors
	if errors.As(err, &fe) && len(fe) > 0 {
		return fe[0].Key
	}
	if e, ok := apperr.As(err); ok {
		return e.Key
	}
	return ""
}

func TestSuspendUser(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		const pw = "violet-kettle-1984"
		admin, err := f.s.CreateUser(ctx, "root@suanli.example", pw, "Root", true)
		if err != nil {
			t.Fatal(err)
		}
		u, err := f.s.CreateUser(ctx, "renter@beta.example", pw, "Renter", false)
		if err != nil {
			t.Fatal(err)
		}
		actx := models.WithActor(ctx, admin.ID, "203.0.113.7")
		suspended := func() bool {
			t.Helper()
			got, err := db.UserByID(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got.SuspendedAt != nil
		}

		t.Run("only platform admins, with a reason, never themselves", func(t *testing.T) {
			err := f.s.SuspendUser(actx, u, admin.ID, "revenge")
			if apperr.Code(err) != apperr.EFORBIDDEN {
				t.Errorf("a non-admin suspending: %v, want forbidden", err)
			}
			if err := f.s.SuspendUser(actx, admin, u.ID, "   "); keyOf(err) != "admin.suspend_reason_required" || fieldOf(err) != "reason" {
				t.Errorf("no reason: %v (key %q, field %q)", err, keyOf(err), fieldOf(err))
			}
			if err := f.s.SuspendUser(actx, admin, admin.ID, "oops"); keyOf(err) != "admin.suspend_self" {
				t.Errorf("suspending oneself: %v", err)
			}
			if err := f.s.SuspendUser(actx, admin, 999999, "ghost"); apperr.Code(err) != apperr.ENOTFOUND {
				t.Errorf("a user that does not exist: %v, want not found", err)
			}
			if suspended() {
				t.Fatal("a refused suspension suspended the user")
			}
		})

		t.Run("a suspended user cannot log in; lifting it restores", func(t *testing.T) {
			if err := f.s.SuspendUser(actx, admin, u.ID, "chargeback fraud"); err != nil {
				t.Fatal(err)
			}
			// Twice is fine and changes nothing more.
			if err := f.s.SuspendUser(actx, admin, u.ID, "again"); err != nil {
				t.Fatal(err)
			}
			if !suspended() {
				t.Fatal("the user is not suspended")
			}
			if _, err := f.s.Login(ctx, u.Email, pw, "198.51.100.1"); keyOf(err) != "err.account_suspended" {
				t.Errorf("login while suspended: %v, want err.account_suspended", err)
			}
			// A wrong password says nothing about the suspension.
			if _, err := f.s.Login(ctx, u.Email, "wrong-password-123", "198.51.100.1"); keyOf(err) != "err.login" {
				t.Errorf("wrong password while suspended: %v, want err.login", err)
			}
			if err := f.s.UnsuspendUser(actx, admin, u.ID, ""); err != nil {
				t.Fatal(err)
			}
			if suspended() {
				t.Fatal("the suspension was not lifted")
			}
			if _, err := f.s.Login(ctx, u.Email, pw, "198.51.100.1"); err != nil {
				t.Errorf("login after the suspension was lifted: %v", err)
			}
		})

		t.Run("audited with who, from where and why", func(t *testing.T) {
			entries, total, err := db.AuditLog(ctx, models.AuditFilter{Subject: "user:" + strconv.FormatInt(u.ID, 10)})
			if err != nil {
				t.Fatal(err)
			}
			if total != 2 || len(entries) != 2 {
				t.Fatalf("%d audit entries for the user, want 2 (suspended, unsuspended): %+v", total, entries)
			}
			if entries[0].Action != accounts.AuditUserUnsuspended || entries[1].Action != accounts.AuditUserSuspended {
				t.Errorf("actions newest first: %s, %s", entries[0].Action, entries[1].Action)
			}
			e := entries[1]
			if e.ActorID == nil || *e.ActorID != admin.ID || e.ActorIP != "203.0.113.7" {
				t.Errorf("suspension entry's actor: %v %q", e.ActorID, e.ActorIP)
			}
			if e.Detail != u.Email+" — chargeback fraud" {
				t.Errorf("suspension entry's detail: %q", e.Detail)
			}
		})
	})
}

func TestSuspendOrg(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		const pw = "violet-kettle-1984"
		admin, err := f.s.CreateUser(ctx, "root@suanli.example", pw, "Root", true)
		if err != nil {
			t.Fatal(err)
		}
		owner, err := f.s.CreateUser(ctx, "owner@beta.example", pw, "Beta Owner", false)
		if err != nil {
			t.Fatal(err)
		}
		orgs, err := db.OrgsOfUser(ctx, owner.ID)
		if err != nil || len(orgs) != 1 {
			t.Fatalf("the owner's organisations: %v %v", orgs, err)
		}
		orgID := orgs[0].Org.ID
		if err := f.s.SuspendOrg(ctx, owner, orgID, "mine"); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("an owner suspending their own organisation: %v, want forbidden", err)
		}
		if err := f.s.SuspendOrg(ctx, admin, orgID, ""); keyOf(err) != "admin.suspend_reason_required" {
			t.Errorf("no reason: %v", err)
		}
		for _, a := range []accounts.Action{accounts.Rent, accounts.TopUp} {
			if _, _, err := f.s.Authorize(ctx, owner, orgID, a); err != nil {
				t.Fatalf("before the suspension, action %d: %v", a, err)
			}
		}
		if err := f.s.SuspendOrg(ctx, admin, orgID, "unpaid invoices"); err != nil {
			t.Fatal(err)
		}
		for _, a := range []accounts.Action{accounts.Rent, accounts.TopUp} {
			_, _, err := f.s.Authorize(ctx, owner, orgID, a)
			if apperr.Code(err) != apperr.EFORBIDDEN || keyOf(err) != "err.org_suspended" {
				t.Errorf("suspended, action %d: %v, want forbidden err.org_suspended", a, err)
			}
		}
		// Looking is still allowed: the owner sees why.
		if _, _, err := f.s.Authorize(ctx, owner, orgID, accounts.ViewWallet); err != nil {
			t.Errorf("viewing a suspended organisation's wallet: %v", err)
		}
		// Outsiders learn nothing, suspended or not.
		if _, _, err := f.s.Authorize(ctx, admin, orgID, accounts.Rent); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("an outsider renting with the suspended organisation: %v, want not found", err)
		}
		if err := f.s.UnsuspendOrg(ctx, admin, orgID, "paid"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.s.Authorize(ctx, owner, orgID, accounts.Rent); err != nil {
			t.Errorf("after lifting the suspension: %v", err)
		}
		_, total, err := db.AuditLog(ctx, models.AuditFilter{Subject: "org:" + strconv.FormatInt(orgID, 10), Action: "org."})
		if err != nil || total != 2 {
			t.Errorf("org suspension audit entries: %d %v, want 2", total, err)
		}
	})
}
