package accounts_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
)

type fixture struct {
	t   *testing.T
	db  *models.DB
	s   *accounts.Service
	now time.Time
}

func newFixture(t *testing.T, db *models.DB) *fixture {
	f := &fixture{t: t, db: db, s: &accounts.Service{DB: db, BaseURL: "https://suanli.test", TrialCreditFen: 2000}, now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	db.Now = func() time.Time { return f.now }
	return f
}

var linkRe = regexp.MustCompile(`https://suanli\.test(/[a-z/]+)\?token=([A-Za-z0-9_-]+)`)

// link returns the path and token of the newest mailed link to addr.
func (f *fixture) link(addr, path string) string {
	f.t.Helper()
	ms, err := f.db.Outbox(context.Background(), addr, 10)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, m := range ms {
		if mm := linkRe.FindStringSubmatch(m.Body); mm != nil && mm[1] == path {
			return mm[2]
		}
	}
	f.t.Fatalf("no %s link mailed to %s", path, addr)
	return ""
}

func fieldOf(err error) string {
	var fe accounts.FieldErrors
	if errors.As(err, &fe) && len(fe) > 0 {
		return fe[0].Field
	}
	if e, ok := apperr.As(err); ok {
		return e.Field
	}
	return ""
}

func TestSignUpVerifyAndLogin(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		u, err := f.s.SignUp(ctx, accounts.SignUpInput{Email: "Li.Wei@Example.com ", Password: "tianfu-gpu-2026!", Name: "李伟", Lang: "zh-CN"})
		if err != nil {
			t.Fatal(err)
		}
		if u.Email != "li.wei@example.com" || u.Verified() {
			t.Fatalf("user %+v", u)
		}
		orgs, _ := db.OrgsOfUser(ctx, u.ID)
		if len(orgs) != 1 || !orgs[0].Org.Personal || orgs[0].Membership.Role != models.RoleOwner {
			t.Errorf("personal organisation %+v", orgs)
		}
		ms, _ := db.Outbox(ctx, u.Email, 5)
		if len(ms) != 1 || !strings.Contains(ms[0].Subject, "验证") {
			t.Errorf("verification mail in Chinese: %+v", ms)
		}
		// An address that has an account is answered as a new one (nothing
		// tells the caller it exists); its owner is mailed instead.
		again, err := f.s.SignUp(ctx, accounts.SignUpInput{Email: "LI.WEI@example.COM", Password: "another-pass-2026", Name: "x"})
		if err != nil || again != nil {
			t.Errorf("duplicate email (other case): %+v, %v; want the answer of a sign-up, no user", again, err)
		}
		// Not verified yet: that mail is a fresh verification link.
		if ms, _ := db.Outbox(ctx, u.Email, 5); len(ms) != 2 || !strings.Contains(ms[0].Body, "/verify?token=") {
			t.Errorf("the unverified owner of a signed-up-again address gets one mail with a fresh link: %+v", ms)
		}
		tok := f.link(u.Email, "/verify")
		if v, err := f.s.VerifyEmail(ctx, tok); err != nil || !v.Verified() {
			t.Fatalf("verify: %v", err)
		}
		if _, err := f.s.VerifyEmail(ctx, tok); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("a used link must fail: %v", err)
		}
		// The trial credit: once, to the personal organisation, as promotional credit.
		if bal, _ := ledger.WalletBalance(ctx, db, orgs[0].Org.ID); bal != 2000 {
			t.Errorf("trial credit: balance %d, want 2000", bal)
		}
		if err := f.s.ResendVerification(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.VerifyEmail(ctx, f.link(u.Email, "/verify")); err != nil {
			t.Fatal(err)
		}
		if bal, _ := ledger.WalletBalance(ctx, db, orgs[0].Org.ID); bal != 2000 {
			t.Errorf("a second verification granted more: %d", bal)
		}
		if _, err := f.s.Login(ctx, "LI.WEI@example.com", "tianfu-gpu-2026!", "10.0.0.1"); err != nil {
			t.Errorf("login: %v", err)
		}
		if _, err := f.s.Login(ctx, "li.wei@example.com", "wrong-password", "10.0.0.1"); fieldOf(err) != "password" {
			t.Errorf("wrong password: %v", err)
		}
		if _, err := f.s.Login(ctx, "nobody@example.com", "tianfu-gpu-2026!", "10.0.0.1"); fieldOf(err) != "password" {
			t.Errorf("unknown account must look like a wrong password: %v", err)
		}
	})
}

func TestPasswordRules(t *testing.T) {
	f := newFixture(t, dbtest.SQLite(t))
	cases := map[string]string{
		"short9chr":                "password",
		strings.Repeat("a", 129):   "password",
		strings.Repeat("x", 10000): "password",
		"1234567890":               "password",
		"aaaaaaaaaaaa":             "password",
	}
	for pw, field := range cases {
		_, err := f.s.SignUp(context.Background(), accounts.SignUpInput{Email: "a@example.com", Password: pw, Name: "A"})
		if fieldOf(err) != field {
			t.Errorf("password of %d chars: %v", len(pw), err)
		}
	}
	for _, email := range []string{"a@", "@b.cn", "a b@c.cn", "x@y", "", "a@b.", strings.Repeat("a", 250) + "@b.cn"} {
		_, err := f.s.SignUp(context.Background(), accounts.SignUpInput{Email: email, Password: "good-pass-2026", Name: "A"})
		if fieldOf(err) != "email" {
			t.Errorf("email %q: %v", email, err)
		}
	}
	var n int64
	f.db.R.Model(&models.User{}).Count(&n)
	if n != 0 {
		t.Errorf("%d users created by bad input", n)
	}
}

func TestLoginThrottle(t *testing.T) {
	f := newFixture(t, dbtest.SQLite(t))
	ctx := context.Background()
	if _, err := f.s.CreateUser(ctx, "ops@example.com", "right-pass-2026", "Ops", false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < accounts.MaxFailsAccount; i++ {
		if _, err := f.s.Login(ctx, "ops@example.com", "wrong", "10.0.0.1"); errors.Is(err, accounts.ErrThrottled) {
			t.Fatalf("throttled after %d failures", i)
		}
		f.now = f.now.Add(time.Minute)
	}
	_, err := f.s.Login(ctx, "ops@example.com", "right-pass-2026", "10.0.0.2")
	var th *accounts.Throttled
	if !errors.As(err, &th) || th.RetryAfter != 10*time.Minute {
		t.Fatalf("6th attempt: %v, want throttled for the 10 minutes left of the window", err)
	}
	f.now = f.now.Add(10 * time.Minute)
	if _, err := f.s.Login(ctx, "ops@example.com", "right-pass-2026", "10.0.0.2"); err != nil {
		t.Errorf("after the window: %v", err)
	}
	// 20 failures from one address over many accounts.
	for i := 0; i < accounts.MaxFailsAddress; i++ {
		f.s.Login(ctx, "probe"+string(rune('a'+i))+"@example.com", "x", "10.9.9.9")
	}
	if _, err := f.s.Login(ctx, "ops@example.com", "right-pass-2026", "10.9.9.9"); !errors.Is(err, accounts.ErrThrottled) {
		t.Errorf("address throttle: %v", err)
	}
}

func TestPasswordReset(t *testing.T) {
	f := newFixture(t, dbtest.SQLite(t))
	ctx := context.Background()
	u, _ := f.s.CreateUser(ctx, "ops@example.com", "old-pass-2026", "Ops", false)
	if err := f.s.RequestPasswordReset(ctx, "nobody@example.com", "10.0.0.1"); err != nil {
		t.Errorf("unknown address must look the same: %v", err)
	}
	if err := f.s.RequestPasswordReset(ctx, "OPS@example.com", "10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	tok := f.link(u.Email, "/password/reset")
	if _, err := f.s.ResetPassword(ctx, tok, "short"); fieldOf(err) != "password" {
		t.Errorf("weak new password: %v", err)
	}
	// The rejected attempt rolled back: the link still works once.
	if _, err := f.s.ResetPassword(ctx, tok, "new-pass-2026!"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ResetPassword(ctx, tok, "third-pass-2026"); apperr.Code(err) != apperr.EINVALID {
		t.Errorf("reused link: %v", err)
	}
	if _, err := f.s.Login(ctx, "ops@example.com", "new-pass-2026!", "10.0.0.1"); err != nil {
		t.Errorf("new password: %v", err)
	}
	f.s.RequestPasswordReset(ctx, "ops@example.com", "10.0.0.1")
	tok = f.link(u.Email, "/password/reset")
	f.now = f.now.Add(accounts.ResetTTL + time.Second)
	if _, err := f.s.ResetPassword(ctx, tok, "expired-pass-2026"); apperr.Code(err) != apperr.EINVALID {
		t.Errorf("expired link: %v", err)
	}
	if _, err := f.s.Login(ctx, "ops@example.com", "new-pass-2026!", "10.0.0.1"); err != nil {
		t.Errorf("the expired link changed the password: %v", err)
	}
}

// The lab journey at the rule level: apply, confirm the institutional
// address, approval by a platform admin → student prices; invitations on
// the lab's domain confirm by acceptance; roles gate every action.
func TestLabsAndStudentPricing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		owner, _ := f.s.CreateUser(ctx, "li.wei@example.com", "owner-pass-2026", "Li Wei", false)
		admin, _ := f.s.CreateUser(ctx, "admin@suanli.test", "admin-pass-2026", "Admin", true)
		outsider, _ := f.s.CreateUser(ctx, "other@example.com", "other-pass-2026", "Other", false)
		app := accounts.LabApplication{Institution: "Sichuan University", LabName: "Vision Lab", Supervisor: "Prof. Zhang", EmailDomain: "scu.edu.cn", EduEmail: "li.wei@scu.edu.cn"}
		bad := app
		bad.EmailDomain = "gmail.com"
		if _, err := f.s.ApplyLab(ctx, owner, bad); fieldOf(err) != "email_domain" {
			t.Errorf("non-institutional domain: %v", err)
		}
		bad = app
		bad.EduEmail = "li.wei@pku.edu.cn"
		if _, err := f.s.ApplyLab(ctx, owner, bad); fieldOf(err) != "edu_email" {
			t.Errorf("address off the lab's domain: %v", err)
		}
		lab, err := f.s.ApplyLab(ctx, owner, app)
		if err != nil || lab.Status != models.OrgPending {
			t.Fatalf("apply: %+v %v", lab, err)
		}
		student := func(u *models.User) bool {
			ok, err := db.StudentPricing(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		tok := f.link("li.wei@scu.edu.cn", "/labs/confirm")
		if _, err := f.s.ConfirmLabAddress(ctx, outsider, tok); err == nil {
			t.Error("another user confirmed the owner's address")
		}
		// That failed attempt did not consume the link (its transaction rolled back).
		if _, err := f.s.ConfirmLabAddress(ctx, owner, tok); err != nil {
			t.Fatalf("confirm: %v", err)
		}
		if student(owner) {
			t.Error("student prices before approval")
		}
		if err := f.s.Review(ctx, owner, lab.ID, true, ""); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a non-admin approved: %v", err)
		}
		if err := f.s.Review(ctx, admin, lab.ID, false, " "); fieldOf(err) != "reason" {
			t.Errorf("reject without a reason: %v", err)
		}
		// A reason that is not text is a message beside the field, not a
		// database error (PostgreSQL refuses NUL bytes).
		if err := f.s.Review(ctx, admin, lab.ID, false, "bad\x00reason"); fieldOf(err) != "reason" {
			t.Errorf("reject with a NUL in the reason: %v", err)
		}
		if err := f.s.Review(ctx, admin, lab.ID, true, ""); err != nil {
			t.Fatal(err)
		}
		if !student(owner) {
			t.Error("no student prices after approval")
		}

		// Invitations: only on the lab's domain; accepting confirms.
		if _, err := f.s.Invite(ctx, owner, lab.ID, "someone@gmail.com", models.RoleMember); fieldOf(err) != "email" {
			t.Errorf("invite off-domain: %v", err)
		}
		if _, err := f.s.Invite(ctx, outsider, lab.ID, "x@scu.edu.cn", models.RoleMember); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("outsider invites: %v", err)
		}
		if _, err := f.s.Invite(ctx, owner, lab.ID, "wang@cs.scu.edu.cn", models.RoleMember); err != nil {
			t.Fatal(err)
		}
		// The link is no bearer token: someone else who has it cannot join.
		invite := f.link("wang@cs.scu.edu.cn", "/invitations/accept")
		if _, err := f.s.AcceptInvite(ctx, outsider, invite); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("another person used the invitation: %v", err)
		}
		member, _ := f.s.CreateUser(ctx, "wang@cs.scu.edu.cn", "member-pass-2026", "Wang", false)
		if _, err := f.s.AcceptInvite(ctx, member, invite); err != nil {
			t.Fatal(err)
		}
		if !student(member) {
			t.Error("an invited lab member on the lab's domain has no student prices")
		}
		if student(outsider) {
			t.Error("an outsider has student prices")
		}

		// Budget: admins of the lab; members may not; the cap fits the budget.
		budget, capFen, over := int64(500000), int64(100000), int64(600000)
		if err := f.s.SetLabBudget(ctx, member, lab.ID, &budget, &capFen); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("member sets budget: %v", err)
		}
		if err := f.s.SetLabBudget(ctx, owner, lab.ID, &budget, &over); fieldOf(err) != "member_cap" {
			t.Errorf("cap over budget: %v", err)
		}
		if err := f.s.SetLabBudget(ctx, owner, lab.ID, &budget, &capFen); err != nil {
			t.Fatal(err)
		}
		got, _ := db.OrgByID(ctx, lab.ID)
		if *got.MonthlyBudgetFen != budget || *got.MemberCapFen != capFen {
			t.Errorf("budget %+v", got)
		}

		// Removal: owners only, never the owner.
		if err := f.s.RemoveMember(ctx, member, lab.ID, owner.ID); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("member removes owner: %v", err)
		}
		if err := f.s.RemoveMember(ctx, owner, lab.ID, owner.ID); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("owner removes self: %v", err)
		}
		if err := f.s.RemoveMember(ctx, owner, lab.ID, member.ID); err != nil {
			t.Fatal(err)
		}
		if student(member) {
			t.Error("a removed member keeps student prices")
		}
	})
}

func TestAPITokens(t *testing.T) {
	f := newFixture(t, dbtest.SQLite(t))
	ctx := context.Background()
	u, _ := f.s.CreateUser(ctx, "ops@example.com", "right-pass-2026", "Ops", false)
	plain, tok, err := f.s.CreateAPIToken(ctx, u, "ci")
	if err != nil || !strings.HasPrefix(plain, accounts.TokenPrefix) || strings.Contains(tok.TokenHash, plain) {
		t.Fatalf("token %q %+v %v", plain, tok, err)
	}
	if got, err := f.s.UserByAPIToken(ctx, plain); err != nil || got.ID != u.ID {
		t.Fatalf("authenticate: %v", err)
	}
	other, _ := f.s.CreateUser(ctx, "other@example.com", "other-pass-2026", "Other", false)
	if err := f.db.RevokeAPIToken(ctx, other.ID, tok.ID, f.now); apperr.Code(err) != apperr.ENOTFOUND {
		t.Errorf("another user revoked the token: %v", err)
	}
	if err := f.db.RevokeAPIToken(ctx, u.ID, tok.ID, f.now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.UserByAPIToken(ctx, plain); apperr.Code(err) != apperr.EUNAUTHORIZED {
		t.Errorf("revoked token: %v", err)
	}
}
