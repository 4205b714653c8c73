package identity_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"suanli/apperr"
	"suanli/audit"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
)

// rawIndividuals counts the rows of identity_individuals that hold any of
// a verification's values, read from the table itself.
func rawIndividuals(t *testing.T, db *models.DB, userID int64, row *identitystore.Individual) int64 {
	t.Helper()
	var n int64
	digest := ""
	if row.IDDigest != nil {
		digest = *row.IDDigest
	}
	if err := db.W.Raw(`SELECT COUNT(*) FROM identity_individuals WHERE user_id = ? OR id_sealed = ? OR id_mask = ? OR id_digest = ? OR phone = ?`,
		userID, row.IDSealed, row.IDMask, digest, row.Phone).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// openCodes counts the user's SMS codes that are not used (nor voided),
// and all of them.
func openCodes(t *testing.T, db *models.DB, userID int64) (open, all int64) {
	t.Helper()
	if err := db.W.Raw(`SELECT COUNT(*) FROM sms_codes WHERE user_id = ? AND used_at IS NULL`, userID).Scan(&open).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.W.Raw(`SELECT COUNT(*) FROM sms_codes WHERE user_id = ?`, userID).Scan(&all).Error; err != nil {
		t.Fatal(err)
	}
	return open, all
}

// A verified user withdraws their consent: without the confirmation
// nothing changes; with it the row is gone from the table (name, sealed
// ID, mask, digest, phone), the audit log records the withdrawal and keeps
// the earlier entries, the code records and the SMS outbox's rows stay
// (the outbox's texts, which held the codes, blanked), the user
// is unverified (the rent gate applies again), and the same ID number can
// be verified again, on another account and then on this one.
func TestWithdrawDeletesTheVerification(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		a, b, root := r.user("withdraw-a@example.com"), r.user("withdraw-b@example.com"), r.admin("root@example.com")
		r.verify(a, idA, "13800138000")
		row, err := identitystore.IndividualOf(r.ctx, db, a.ID)
		if err != nil || row.IDDigest == nil || row.IDSealed == "" {
			t.Fatalf("verified row %+v %v", row, err)
		}

		// The rent gate lets the verified user rent with cash paid in.
		orgs, err := db.OrgsOfUser(r.ctx, a.ID)
		if err != nil || len(orgs) != 1 {
			t.Fatalf("orgs %v %v", orgs, err)
		}
		org := orgs[0].Org.ID
		w := &billing.Wallet{DB: db}
		tp, _, err := w.StartTopup(r.ctx, a, org, 10_000, models.MethodBank, "en")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.ConfirmBankTransfer(r.ctx, root, tp.ID, 10_000); err != nil {
			t.Fatal(err)
		}
		if err := r.svc.MayRent(r.ctx, a, org); err != nil {
			t.Fatalf("verified with cash: %v", err)
		}

		if _, err := r.svc.WithdrawIndividual(r.ctx, a, false); !slices.Equal(fieldsOf(err), []string{identity.FieldConfirm}) || apperr.Code(err) != apperr.EINVALID {
			t.Fatalf("without the confirmation: %v, want invalid on confirm", err)
		}
		if r.status(a) != identitystore.Verified || rawIndividuals(t, db, a.ID, row) != 1 {
			t.Fatal("an unconfirmed withdrawal changed something")
		}

		withdrew, err := r.svc.WithdrawIndividual(r.ctx, a, true)
		if err != nil || !withdrew {
			t.Fatalf("withdraw: %v %v", withdrew, err)
		}
		if st := r.status(a); st != identitystore.Unverified {
			t.Fatalf("after the withdrawal: %s", st)
		}
		if n := rawIndividuals(t, db, a.ID, row); n != 0 {
			t.Fatalf("identity_individuals still has %d rows with the withdrawn values", n)
		}
		if _, err := identitystore.IndividualOf(r.ctx, db, a.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("the row after the withdrawal: %v", err)
		}
		if v, err := r.svc.Status(r.ctx, a.ID); err != nil || v.Status != identitystore.Unverified || v.Name != "" || v.IDMask != "" || v.Phone != "" {
			t.Errorf("the page's view after the withdrawal: %+v %v", v, err)
		}
		es := auditCount(t, db, audit.RealNameWithdrawn)
		if len(es) != 1 || es[0].Subject != "user:"+strconv.FormatInt(a.ID, 10) || !strings.Contains(es[0].Detail, "5101**********1236") ||
			!strings.Contains(es[0].Detail, identity.NoticeVersion) || strings.Contains(es[0].Detail, idA) || strings.Contains(es[0].Detail, "13800138000") {
			t.Errorf("withdrawn entries %+v", es)
		}
		for _, action := range []string{audit.RealNameSubmitted, audit.RealNameVerified} {
			if len(auditCount(t, db, action)) != 1 {
				t.Errorf("the %s entry was not kept", action)
			}
		}
		if open, all := openCodes(t, db, a.ID); open != 0 || all != 1 {
			t.Errorf("codes after the withdrawal: %d open of %d, want 0 of 1 (kept, used)", open, all)
		}
		if ms, n, _ := identitystore.OutboxPage(r.ctx, db, "13800138000", 1, 10); n != 1 || ms[0].Body != "" {
			t.Errorf("the SMS outbox holds %d messages to the number (%+v), want 1 (kept) with its text (the code) blanked", n, ms)
		}

		// The gate applies again.
		if err := r.svc.MayRent(r.ctx, a, org); apperr.Code(err) != apperr.EREALNAMEREQUIRED {
			t.Fatalf("withdrawn with cash: %v, want real_name_required", err)
		}

		// The blind index no longer holds the number: another account
		// verifies it, withdraws, and the first verifies it again.
		r.clock.advance(time.Minute)
		r.verify(b, idA, "13900139000")
		if _, err := r.svc.WithdrawIndividual(r.ctx, b, true); err != nil {
			t.Fatal(err)
		}
		r.clock.advance(time.Minute)
		r.verify(a, idA, "13800138000")
		if err := r.svc.MayRent(r.ctx, a, org); err != nil {
			t.Errorf("verified again: %v", err)
		}
		// b's withdrawal blanked b's message, not a's new one.
		if ms, n, _ := identitystore.OutboxPage(r.ctx, db, "13800138000", 1, 10); n != 2 || ms[0].Body == "" || ms[1].Body != "" {
			t.Errorf("a's messages after b's withdrawal: %+v", ms)
		}
		if ms, n, _ := identitystore.OutboxPage(r.ctx, db, "13900139000", 1, 10); n != 1 || ms[0].Body != "" {
			t.Errorf("b's messages after b's withdrawal: %+v", ms)
		}
		if n := len(auditCount(t, db, audit.RealNameWithdrawn)); n != 2 {
			t.Errorf("%d withdrawn entries, want 2", n)
		}
	})
}

// A pending verification's code dies with the withdrawal; a rejected one
// and an operator's are withdrawn too; a user with nothing gets no error
// and no audit entry.
func TestWithdrawPendingRejectedOperatorAndNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		p := r.user("pending@example.com")
		if _, err := r.svc.StartIndividual(r.ctx, p, input(idB, "13700137000", "")); err != nil {
			t.Fatal(err)
		}
		code := r.code("13700137000")
		if open, _ := openCodes(t, db, p.ID); open != 1 {
			t.Fatalf("%d open codes after the start, want 1", open)
		}
		if ok, err := r.svc.WithdrawIndividual(r.ctx, p, true); err != nil || !ok {
			t.Fatalf("withdraw the pending one: %v %v", ok, err)
		}
		if open, all := openCodes(t, db, p.ID); open != 0 || all != 1 {
			t.Errorf("codes: %d open of %d, want 0 of 1", open, all)
		}
		if _, err := r.svc.ConfirmIndividual(r.ctx, p, code); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("the withdrawn verification's code: %v, want conflict (nothing pending)", err)
		}
		if r.status(p) != identitystore.Unverified {
			t.Fatalf("pending, withdrawn: %s", r.status(p))
		}
		// Starting again: a new code, which works.
		r.clock.advance(time.Minute)
		r.verify(p, idB, "13700137000")

		admin, q := r.admin("root@example.com"), r.user("rejected@example.com")
		if _, err := r.svc.StartIndividual(r.ctx, q, input(idC, "13600136000", "")); err != nil {
			t.Fatal(err)
		}
		if err := r.svc.RejectIndividual(r.ctx, admin, q.ID, "blurred"); err != nil {
			t.Fatal(err)
		}
		if ok, err := r.svc.WithdrawIndividual(r.ctx, q, true); err != nil || !ok || r.status(q) != identitystore.Unverified {
			t.Fatalf("withdraw the rejected one: %v %v %s", ok, err, r.status(q))
		}

		o := r.user("operator@example.com")
		if err := r.svc.VerifyByOperator(r.ctx, o); err != nil {
			t.Fatal(err)
		}
		if ok, err := r.svc.WithdrawIndividual(r.ctx, o, true); err != nil || !ok || r.status(o) != identitystore.Unverified {
			t.Fatalf("withdraw the operator's: %v %v %s", ok, err, r.status(o))
		}

		before := len(auditCount(t, db, audit.RealNameWithdrawn))
		if before != 3 {
			t.Errorf("%d withdrawn entries, want 3", before)
		}
		n := r.user("nothing@example.com")
		if ok, err := r.svc.WithdrawIndividual(r.ctx, n, true); err != nil || ok {
			t.Errorf("nothing to withdraw: %v %v, want false and no error", ok, err)
		}
		if after := len(auditCount(t, db, audit.RealNameWithdrawn)); after != before {
			t.Errorf("withdrawing nothing was audited")
		}
		// No key is needed to delete.
		keyless := &identity.Service{DB: db, Mode: r.svc.Mode}
		if ok, err := keyless.WithdrawIndividual(r.ctx, p, true); err != nil || !ok || r.status(p) != identitystore.Unverified {
			t.Errorf("withdraw without a key: %v %v %s", ok, err, r.status(p))
		}
	})
}
