package identity_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"suanli/apperr"
	"suanli/audit"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
)

// failingSender refuses every message, as a provider that is down does.
type failingSender struct{ tries int }

func (f *failingSender) Send(context.Context, identity.SMS) error {
	f.tries++
	return errors.New("the provider is down")
}

// hookSender keeps messages in the outbox, running hook (once) before
// the first: what another request does while a message is on its way.
type hookSender struct {
	db   *models.DB
	hook func()
}

func (h *hookSender) Send(ctx context.Context, m identity.SMS) error {
	if f := h.hook; f != nil {
		h.hook = nil
		f()
	}
	return identity.OutboxSender{DB: h.db}.Send(ctx, m)
}

// A start whose text message cannot be sent changes nothing of the
// verification (name, ID number, phone stay the earlier start's), and
// the earlier start's code, sent to the earlier number, no longer works:
// a code never confirms a number it was not sent to.
func TestFailedSendLeavesTheVerificationAsItWas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("stale@example.com")
		if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, "13800138000", "")); err != nil {
			t.Fatal(err)
		}
		first := r.code("13800138000")
		r.clock.advance(2 * time.Minute)

		down := &failingSender{}
		failing := &identity.Service{DB: db, Ring: r.svc.Ring, Mode: r.svc.Mode, SMS: down}
		if _, err := failing.StartIndividual(r.ctx, u, input(idB, "13900139000", "")); apperr.Code(err) != apperr.EUNAVAILABLE || down.tries != 1 {
			t.Fatalf("a start whose message fails: %v (%d tries), want unavailable", err, down.tries)
		}
		if _, err := r.svc.ConfirmIndividual(r.ctx, u, first); !isField(err, "code") {
			t.Fatalf("the first code after a failed start: %v, want refused on code", err)
		}
		if st := r.status(u); st == identitystore.Verified {
			t.Fatal("a stale code verified the user")
		}
		row, err := identitystore.IndividualOf(r.ctx, db, u.ID)
		if err != nil || row.Phone != "13800138000" || row.IDMask != "5101**********1236" || row.Status != identitystore.Pending ||
			!row.SubmittedAt.Equal(r.clock.now.Add(-2*time.Minute)) {
			t.Fatalf("the verification after a failed send: %+v %v, want the first start's", row, err)
		}
		if n := len(auditCount(t, db, audit.RealNameSubmitted)); n != 1 {
			t.Errorf("%d submitted entries, want 1 (the failed start wrote none)", n)
		}
		if v, err := r.svc.Status(r.ctx, u.ID); err != nil || v.CodeExpiresAt != nil {
			t.Errorf("the page offers a live code: %+v %v", v, err)
		}

		// A new code to the number on record works.
		if _, err := r.svc.ResendCode(r.ctx, u, ""); err != nil {
			t.Fatal(err)
		}
		if v, err := r.svc.ConfirmIndividual(r.ctx, u, r.code("13800138000")); err != nil || v.Status != identitystore.Verified || v.IDMask != "5101**********1236" {
			t.Fatalf("confirm the resent code: %+v %v", v, err)
		}
	})
}

// A code that went to another number than the verification's (a row the
// earlier request wrote, a code a later one stored) confirms nothing.
func TestCodeToAnotherNumberConfirmsNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("other-phone@example.com")
		if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, "13800138000", "")); err != nil {
			t.Fatal(err)
		}
		const code = "424242"
		stray := identitystore.SMSCode{UserID: u.ID, Purpose: "realname", Phone: "13900139000",
			CodeHash: r.svc.Ring.Digest([]byte("sms-code:13900139000:" + code)), CreatedAt: r.clock.now, ExpiresAt: r.clock.now.Add(identity.CodeTTL)}
		if err := db.W.Create(&stray).Error; err != nil {
			t.Fatal(err)
		}
		_, err := r.svc.ConfirmIndividual(r.ctx, u, code)
		if ae, _ := apperr.As(err); !isField(err, "code") || ae.Key != "realname.err.code_other_phone" {
			t.Fatalf("a code to another number: %v, want code_other_phone", err)
		}
		if st := r.status(u); st != identitystore.Pending {
			t.Fatalf("status %s", st)
		}
	})
}

// A start whose code was voided while it was on its way (the user asked
// for a new code meanwhile) writes nothing: the newer request wins.
func TestStartSupersededWhileSending(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("superseded@example.com")
		if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, "13800138000", "")); err != nil {
			t.Fatal(err)
		}
		r.clock.advance(2 * time.Minute)
		hooked := &identity.Service{DB: db, Ring: r.svc.Ring, Mode: r.svc.Mode}
		hooked.SMS = &hookSender{db: db, hook: func() {
			if _, err := hooked.ResendCode(r.ctx, u, ""); err != nil {
				t.Errorf("the resend meanwhile: %v", err)
			}
		}}
		_, err := hooked.StartIndividual(r.ctx, u, input(idB, "13900139000", ""))
		if ae, _ := apperr.As(err); apperr.Code(err) != apperr.ECONFLICT || ae.Key != "realname.err.superseded" {
			t.Fatalf("a start superseded while sending: %v, want superseded", err)
		}
		row, err := identitystore.IndividualOf(r.ctx, db, u.ID)
		if err != nil || row.Phone != "13800138000" || row.IDMask != "5101**********1236" {
			t.Fatalf("row %+v %v, want the first start's", row, err)
		}
		if _, err := r.svc.ConfirmIndividual(r.ctx, u, r.code("13900139000")); !isField(err, "code") {
			t.Errorf("the superseded start's code: %v, want refused", err)
		}
	})
}

// One user asks for at most UserPerDay codes in 24 hours, whatever the
// numbers: 429 (ERATELIMIT) until the oldest leaves the day.
func TestSendingIsThrottledPerUser(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		u := r.user("many-phones@example.com")
		for i := 0; i < identity.UserPerDay; i++ {
			if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, fmt.Sprintf("1350000%04d", i), "")); err != nil {
				t.Fatalf("code %d: %v", i+1, err)
			}
			r.clock.advance(time.Minute)
		}
		err := mustFail(r.svc.StartIndividual(r.ctx, u, input(idA, "13611112222", "")))
		var rl *identity.RateLimited
		if !errorsAs(err, &rl) || apperr.Code(err) != apperr.ERATELIMIT {
			t.Fatalf("code %d: %v, want rate_limited", identity.UserPerDay+1, err)
		}
		if ae, _ := apperr.As(err); ae.Key != "realname.err.sms_user" {
			t.Errorf("%v, want sms_user", err)
		}
		if want := 24*time.Hour - time.Duration(identity.UserPerDay)*time.Minute; rl.RetryAfter != want {
			t.Errorf("retry after %v, want %v", rl.RetryAfter, want)
		}
		if _, err := r.svc.ResendCode(r.ctx, u, ""); apperr.Code(err) != apperr.ERATELIMIT {
			t.Errorf("a resend over the cap: %v", err)
		}
		if _, err := r.svc.StartIndividual(r.ctx, r.user("someone-else@example.com"), input(idB, "13611112222", "")); err != nil {
			t.Errorf("another user: %v", err)
		}
		r.clock.advance(rl.RetryAfter)
		if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, "13611113333", "")); err != nil {
			t.Errorf("a day later: %v", err)
		}
	})
}

// IPv6 clients are counted by their /64 network: walking the addresses
// of one's own network does not get more codes; another /64 does.
func TestSendingIsThrottledPerIPv6Network(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db)
		for i := 0; i < identity.IPPerHour; i++ {
			u := r.user(fmt.Sprintf("v6-%d@example.com", i))
			ip := fmt.Sprintf("2001:db8:1:2::%x", i+1)
			if _, err := r.svc.StartIndividual(r.ctx, u, input(idA, fmt.Sprintf("1370000%04d", i), ip)); err != nil {
				t.Fatalf("code %d: %v", i+1, err)
			}
		}
		for i, ip := range []string{"2001:db8:1:2:ffff:ffff:ffff:fffe", "2001:DB8:1:2::abcd"} {
			err := mustFail(r.svc.StartIndividual(r.ctx, r.user(fmt.Sprintf("v6-same-%d@example.com", i)), input(idA, "13711112222", ip)))
			if ae, _ := apperr.As(err); apperr.Code(err) != apperr.ERATELIMIT || ae.Key != "realname.err.sms_ip" {
				t.Errorf("%s, in the same /64: %v, want sms_ip", ip, err)
			}
		}
		if _, err := r.svc.StartIndividual(r.ctx, r.user("v6-next@example.com"), input(idA, "13711112222", "2001:db8:1:3::1")); err != nil {
			t.Errorf("another /64: %v", err)
		}
		// An IPv4 address, bare or mapped into IPv6, is one address.
		for i := 0; i < identity.IPPerHour; i++ {
			if _, err := r.svc.StartIndividual(r.ctx, r.user(fmt.Sprintf("v4-%d@example.com", i)), input(idA, fmt.Sprintf("1380000%04d", i), "198.51.100.20")); err != nil {
				t.Fatalf("v4 code %d: %v", i+1, err)
			}
		}
		if _, err := r.svc.StartIndividual(r.ctx, r.user("v4-mapped@example.com"), input(idA, "13811112222", "::ffff:198.51.100.20")); apperr.Code(err) != apperr.ERATELIMIT {
			t.Errorf("the mapped address: %v, want rate_limited", err)
		}
		if _, err := r.svc.StartIndividual(r.ctx, r.user("v4-next@example.com"), input(idA, "13811112222", "198.51.100.21")); err != nil {
			t.Errorf("the next IPv4 address: %v", err)
		}
	})
}

// isField reports whether err is a refusal naming field.
func isField(err error, field string) bool {
	fs := fieldsOf(err)
	return len(fs) == 1 && fs[0] == field
}
