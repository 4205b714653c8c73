package identity_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"suanli/apperr"
	"suanli/audit"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
)

// An individual gives name, ID number and phone: pending, an SMS code in
// the outbox; the code makes them verified, audited both times; a
// verified user cannot start again.
func TestStartAndConfirm(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("wei@example.com")
		if st := r.status(u); st != identitystore.Unverified {
			t.Fatalf("before: %s", st)
		}
		v, err := r.svc.StartIndividual(r.ctx, u, identity.IndividualInput{Kind: "individual", Name: "  张伟 ", IDNumber: idA,
			Phone: "+86 138-0013-8000", Consent: true, IP: "203.0.113.9"})
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != identitystore.Pending || v.Name != "张伟" || v.IDMask != "5101**********1236" || v.PhoneMask != "138****8000" ||
			v.CodeExpiresAt == nil || !v.CodeExpiresAt.Equal(r.clock.now.Add(identity.CodeTTL)) {
			t.Fatalf("started: %+v", v)
		}
		if st := r.status(u); st != identitystore.Pending {
			t.Fatalf("after start: %s", st)
		}
		row, err := identitystore.IndividualOf(r.ctx, db, u.ID)
		if err != nil || row.ConsentVersion != identity.NoticeVersion || row.ConsentAt == nil || !row.ConsentAt.Equal(r.clock.now) || row.Phone != "13800138000" {
			t.Fatalf("row %+v %v: want the consent recorded and the phone normalised", row, err)
		}
		code := r.code("13800138000")
		if _, err := r.svc.ConfirmIndividual(r.ctx, u, "12345"); !slices.Equal(fieldsOf(err), []string{"code"}) {
			t.Errorf("a 5-digit code: %v", err)
		}
		v, err = r.svc.ConfirmIndividual(r.ctx, u, " "+code+" ")
		if err != nil || v.Status != identitystore.Verified || v.VerifiedAt == nil {
			t.Fatalf("confirm: %+v %v", v, err)
		}
		if st := r.status(u); st != identitystore.Verified {
			t.Fatalf("after confirm: %s", st)
		}
		if es := auditCount(t, db, audit.RealNameSubmitted); len(es) != 1 || es[0].Subject != "user:"+strconv.FormatInt(u.ID, 10) || strings.Contains(es[0].Detail, idA) {
			t.Errorf("submitted entries %+v", es)
		}
		if es := auditCount(t, db, audit.RealNameVerified); len(es) != 1 || !strings.Contains(es[0].Detail, "5101**********1236") {
			t.Errorf("verified entries %+v", es)
		}
		// Single use: the code is spent, and a verified user is done.
		if _, err := r.svc.ConfirmIndividual(r.ctx, u, code); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("the same code again: %v, want conflict (already verified)", err)
		}
		c, err := identitystore.NewestCode(r.ctx, db, u.ID, "realname")
		if err != nil || c.UsedAt == nil {
			t.Errorf("code %+v %v: want it used", c, err)
		}
		r.clock.advance(2 * time.Minute)
		if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, "13800138001", "")); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("a verified user starts again: %v, want conflict", err)
		}
	})
}

func mustFail(_ identity.View, err error) error { return err }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// Bad input is refused naming each field, and stores and sends nothing.
func TestStartRefusesBadInputNamingTheField(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("bad@example.com")
		altered := idA[:17] + "7" // the check digit changed
		for _, tc := range []struct {
			name string
			in   identity.IndividualInput
			want []string
		}{
			{"check digit", input(altered, "13800138000", ""), []string{"id_number"}},
			{"a digit altered", input("510107199003071246", "13800138000", ""), []string{"id_number"}},
			{"too short", input(idA[:17], "13800138000", ""), []string{"id_number"}},
			{"birth date", input("510107199002301234", "13800138000", ""), []string{"id_number"}},
			{"empty id", input("", "13800138000", ""), []string{"id_number"}},
			{"landline", input(idA, "02885551234", ""), []string{"phone"}},
			{"short phone", input(idA, "1380013800", ""), []string{"phone"}},
			{"12 starts", input(idA, "12800138000", ""), []string{"phone"}},
			{"both", input(altered, "abc", ""), []string{"id_number", "phone"}},
			{"no consent", identity.IndividualInput{Kind: "individual", Name: "张伟", IDNumber: idA, Phone: "13800138000"}, []string{"consent"}},
			{"name with digits", identity.IndividualInput{Kind: "individual", Name: "张伟3", IDNumber: idA, Phone: "13800138000", Consent: true}, []string{"name"}},
			{"no name", identity.IndividualInput{Kind: "individual", Name: "  ", IDNumber: idA, Phone: "13800138000", Consent: true}, []string{"name"}},
			{"long name", identity.IndividualInput{Kind: "individual", Name: strings.Repeat("张", 51), IDNumber: idA, Phone: "13800138000", Consent: true}, []string{"name"}},
			{"kind", identity.IndividualInput{Kind: "company", Name: "张伟", IDNumber: idA, Phone: "13800138000", Consent: true}, []string{"kind"}},
		} {
			_, err := r.svc.StartIndividual(r.ctx, u, tc.in)
			if got := fieldsOf(err); !slices.Equal(got, tc.want) || apperr.Code(err) != apperr.EINVALID {
				t.Errorf("%s: fields %v (%v), want %v", tc.name, got, err, tc.want)
			}
		}
		// Names with the middle dot, lower-case x: fine.
		if _, err := r.svc.StartIndividual(r.ctx, u, identity.IndividualInput{Kind: "individual", Name: "阿依古丽·买买提", IDNumber: strings.ToLower(idC),
			Phone: "0086 139 0000 0000", Consent: true}); err != nil {
			t.Fatalf("a good start after the refusals: %v", err)
		}
		if _, n, _ := identitystore.OutboxPage(r.ctx, db, "", 1, 10); n != 1 {
			t.Errorf("%d messages sent, want 1 (only the good start)", n)
		}
	})
}

// A code works for ten minutes, once, and dies after its fifth wrong try.
func TestCodeExpiresAndDiesAfterFiveWrongTries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("codes@example.com")
		if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, "13800138000", "")); err != nil {
			t.Fatal(err)
		}
		code := r.code("13800138000")
		r.clock.advance(identity.CodeTTL)
		if _, err := r.svc.ConfirmIndividual(r.ctx, u, code); !slices.Equal(fieldsOf(err), []string{"code"}) {
			t.Fatalf("after 10 minutes: %v, want the field code", err)
		} else if ae, _ := apperr.As(err); ae.Key != "realname.err.code_expired" {
			t.Errorf("expired: %v", err)
		}
		if r.status(u) != identitystore.Pending {
			t.Fatal("an expired code changed the status")
		}

		// A new code (after the minute between codes).
		if _, err := r.svc.ResendCode(r.ctx, u, ""); err != nil {
			t.Fatal(err)
		}
		code = r.code("13800138000")
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		for i := 1; i <= identity.MaxCodeTries; i++ {
			_, err := r.svc.ConfirmIndividual(r.ctx, u, wrong)
			ae, _ := apperr.As(err)
			want := "realname.err.code_wrong"
			if i == identity.MaxCodeTries {
				want = "realname.err.code_dead"
			}
			if ae == nil || ae.Field != "code" || ae.Key != want {
				t.Fatalf("wrong try %d: %v, want %s", i, err, want)
			}
		}
		if _, err := r.svc.ConfirmIndividual(r.ctx, u, code); err == nil {
			t.Fatal("the right code worked after five wrong tries")
		} else if ae, _ := apperr.As(err); ae.Key != "realname.err.code_dead" || ae.Field != "code" {
			t.Errorf("after five wrong tries: %v", err)
		}
		if r.status(u) != identitystore.Pending {
			t.Fatal("a dead code changed the status")
		}
	})
}

// Sending is throttled per number (one a minute, five a day) and per
// address (ten an hour), counted in the database; a refused sending
// stores and sends nothing.
func TestSendingIsThrottled(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("throttle@example.com")
		const phone = "13700137000"
		sent := func() int64 {
			_, n, err := identitystore.OutboxPage(r.ctx, db, phone, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		limited := func(err error, key string) *identity.RateLimited {
			t.Helper()
			var rl *identity.RateLimited
			if !errorsAs(err, &rl) || apperr.Code(err) != apperr.ERATELIMIT {
				t.Fatalf("%v, want rate_limited", err)
			}
			if ae, _ := apperr.As(err); ae.Key != key {
				t.Fatalf("%v, want %s", err, key)
			}
			return rl
		}
		for i := 0; i < identity.PhonePerDay; i++ {
			if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, phone, "")); err != nil {
				t.Fatalf("code %d: %v", i+1, err)
			}
			r.clock.advance(30 * time.Second)
			rl := limited(mustFail(r.svc.StartIndividual(r.ctx, u, input(idA, phone, ""))), "realname.err.sms_gap")
			if rl.RetryAfter != 30*time.Second {
				t.Errorf("retry after %v, want 30s", rl.RetryAfter)
			}
			limited(mustFail(r.svc.ResendCode(r.ctx, u, "")), "realname.err.sms_gap")
			r.clock.advance(31 * time.Second)
		}
		if n := sent(); n != identity.PhonePerDay {
			t.Fatalf("%d codes sent, want %d", n, identity.PhonePerDay)
		}
		rl := limited(mustFail(r.svc.StartIndividual(r.ctx, u, input(idA, phone, ""))), "realname.err.sms_day")
		if want := 24*time.Hour - 5*61*time.Second; rl.RetryAfter != want {
			t.Errorf("retry after %v, want %v (when the first leaves the day)", rl.RetryAfter, want)
		}
		if n := sent(); n != identity.PhonePerDay {
			t.Fatalf("a refused start sent a code: %d", n)
		}
		r.clock.advance(rl.RetryAfter)
		if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, phone, "")); err != nil {
			t.Fatalf("a day later: %v", err)
		}

		// Per address: ten codes an hour, whatever the numbers and users.
		r.clock.advance(48 * time.Hour)
		ip := "198.51.100.7"
		for i := 0; i < identity.IPPerHour; i++ {
			p := "1590000000" + string(rune('0'+i))
			if _, err := r.svc.StartIndividual(r.ctx, r.user(fmt.Sprintf("ip%d@example.com", i)), input(idA, p, ip)); err != nil {
				t.Fatalf("address code %d: %v", i+1, err)
			}
			r.clock.advance(time.Minute)
		}
		rl = limited(mustFail(r.svc.StartIndividual(r.ctx, u, input(idA, "15811112222", ip))), "realname.err.sms_ip")
		if rl.RetryAfter != 50*time.Minute {
			t.Errorf("retry after %v, want 50m", rl.RetryAfter)
		}
		if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, "15811112222", "198.51.100.8")); err != nil {
			t.Errorf("another address: %v", err)
		}
	})
}

// An ID number verified on one account cannot be verified on another:
// the blind index finds it without the number.
func TestOneIDNumberOneVerifiedAccount(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		a, b := r.user("a@example.com"), r.user("b@example.com")
		r.verify(a, idA, "13800138000")
		_, err := r.svc.StartIndividual(r.ctx, b, input(strings.ToLower(idA), "13900139000", ""))
		if apperr.Code(err) != apperr.ECONFLICT || !slices.Equal(fieldsOf(err), []string{"id_number"}) {
			t.Fatalf("the same ID on another account: %v, want conflict on id_number", err)
		}
		// Both pending at once: the second confirmation is refused.
		c, d := r.user("c@example.com"), r.user("d@example.com")
		for _, x := range []struct {
			u     *models.User
			phone string
		}{{c, "13600136000"}, {d, "13600136001"}} {
			if _, err := r.svc.StartIndividual(r.ctx, x.u, input(idB, x.phone, "")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.svc.ConfirmIndividual(r.ctx, c, r.code("13600136000")); err != nil {
			t.Fatal(err)
		}
		if _, err := r.svc.ConfirmIndividual(r.ctx, d, r.code("13600136001")); apperr.Code(err) != apperr.ECONFLICT {
			t.Fatalf("second confirmation of one ID: %v, want conflict", err)
		}
		if r.status(d) != identitystore.Pending {
			t.Errorf("d: %s", r.status(d))
		}
	})
}

// The operator's verification stores no ID number and is audited; an
// admin's rejection needs a reason and lets the user start again.
func TestOperatorVerificationAndRejection(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("ops@example.com")
		for i := 0; i < 2; i++ { // idempotent
			if err := r.svc.VerifyByOperator(r.ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		row, err := identitystore.IndividualOf(r.ctx, db, u.ID)
		if err != nil || row.Status != identitystore.Verified || row.Method != identitystore.MethodOperator || row.IDSealed != "" || row.IDDigest != nil {
			t.Fatalf("operator's row %+v %v", row, err)
		}
		if es := auditCount(t, db, audit.RealNameVerified); len(es) != 1 || !strings.Contains(es[0].Detail, "operator") {
			t.Errorf("audit %+v", es)
		}

		admin, p := r.admin("root@example.com"), r.user("p@example.com")
		if _, err := r.svc.StartIndividual(r.ctx, p, input(idB, "13500135000", "")); err != nil {
			t.Fatal(err)
		}
		if err := r.svc.RejectIndividual(r.ctx, p, p.ID, "no"); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a user rejects: %v", err)
		}
		if err := r.svc.RejectIndividual(r.ctx, admin, p.ID, "  "); !slices.Equal(fieldsOf(err), []string{"reason"}) {
			t.Errorf("no reason: %v", err)
		}
		if err := r.svc.RejectIndividual(r.ctx, admin, p.ID, "the name does not match the ID card"); err != nil {
			t.Fatal(err)
		}
		v, _ := r.svc.Status(r.ctx, p.ID)
		if v.Status != identitystore.Rejected || v.RejectReason != "the name does not match the ID card" {
			t.Fatalf("rejected: %+v", v)
		}
		if err := r.svc.RejectIndividual(r.ctx, admin, p.ID, "again"); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("rejecting a rejection: %v", err)
		}
		r.clock.advance(time.Minute)
		r.verify(p, idB, "13500135000")
	})
}
