package accounts_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/audit"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/providers"
)

// signUpVerified signs up and verifies an address, as its owner would.
func (f *fixture) signUpVerified(email string) *models.User {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.s.SignUp(ctx, accounts.SignUpInput{Email: email, Password: "tianfu-gpu-2026!", Name: "Test", IP: "10.1.1.1"}); err != nil {
		f.t.Fatal(err)
	}
	u, err := f.s.VerifyEmail(ctx, f.link(email, "/verify"))
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// walletTotal is what the user's organisations hold in their wallets.
func walletTotal(t *testing.T, db *models.DB, userID int64) int64 {
	t.Helper()
	orgs, err := db.OrgsOfUser(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, o := range orgs {
		b, err := ledger.WalletBalance(context.Background(), db, o.Org.ID)
		if err != nil {
			t.Fatal(err)
		}
		sum += b
	}
	return sum
}

// Organisations are no source of credit: the trial credit is once per
// verified person, whatever they own when they verify.
func TestTrialCreditIsOncePerPerson(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		u, err := f.s.SignUp(ctx, accounts.SignUpInput{Email: "many@example.com", Password: "tianfu-gpu-2026!", Name: "Many", IP: "10.1.1.1"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := f.s.CreateOrg(ctx, u, models.OrgTeam, fmt.Sprintf("Team %d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.s.VerifyEmail(ctx, f.link(u.Email, "/verify")); err != nil {
			t.Fatal(err)
		}
		if got := walletTotal(t, db, u.ID); got != 2000 {
			t.Errorf("the user's organisations hold %d fen of trial credit, want 2000 once", got)
		}
		// A password reset (which also proves the address) grants nothing more.
		if err := f.s.RequestPasswordReset(ctx, u.Email, "10.1.1.1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.ResetPassword(ctx, f.link(u.Email, "/password/reset"), "another-pass-2026"); err != nil {
			t.Fatal(err)
		}
		if got := walletTotal(t, db, u.ID); got != 2000 {
			t.Errorf("after a reset the organisations hold %d fen, want 2000", got)
		}
	})
}

// A user may create DefaultOrgsPerDay organisations a day — teams, labs
// and providers together, racing requests included — and more only when
// an admin allows it.
func TestOrganisationsPerDayAreLimited(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		u := f.signUpVerified("orgs@example.com")
		var wg sync.WaitGroup
		var mu sync.Mutex
		made, refused := 0, 0
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.s.CreateOrg(ctx, u, models.OrgTeam, fmt.Sprintf("Racing team %d", i))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					made++
				case fieldOf(err) == "name" && apperr.Code(err) == apperr.ERATELIMIT:
					refused++
				default:
					t.Errorf("create: %v", err)
				}
			}()
		}
		wg.Wait()
		if made != accounts.DefaultOrgsPerDay || refused != 20-accounts.DefaultOrgsPerDay {
			t.Errorf("20 racing creations: %d made, %d refused; want %d made", made, refused, accounts.DefaultOrgsPerDay)
		}
		// A lab application and a provider sign-up count as well.
		app := accounts.LabApplication{Institution: "SCU", LabName: "Lab", Supervisor: "Prof", EmailDomain: "scu.edu.cn", EduEmail: "x@scu.edu.cn"}
		if _, err := f.s.ApplyLab(ctx, u, app); fieldOf(err) != "lab_name" {
			t.Errorf("a lab past the limit: %v", err)
		}
		prov := &providers.Service{DB: db}
		if _, err := prov.SignUp(ctx, u, providers.Profile{CompanyName: "GPU Co", ContactName: "Li", ContactPhone: "+86 28 1234 5678",
			ContactEmail: u.Email, LicenceNo: "91510100MA61234567", BankName: "Bank", BankAccountName: "GPU Co", BankAccountNo: "6222 0000 1111 2222"}); fieldOf(err) != "company_name" {
			t.Errorf("a provider past the limit: %v", err)
		}
		// An admin allows two more.
		admin, _ := f.s.CreateUser(ctx, "admin@suanli.test", "admin-pass-2026", "Admin", true)
		n := accounts.DefaultOrgsPerDay + 2
		if err := f.s.SetOrgsPerDay(ctx, u, u.ID, &n); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a user raised their own limit: %v", err)
		}
		if err := f.s.SetOrgsPerDay(ctx, admin, u.ID, &n); err != nil {
			t.Fatal(err)
		}
		entries, _, err := db.AuditLog(ctx, models.AuditFilter{Subject: "user:" + strconv.FormatInt(u.ID, 10)})
		if err != nil || len(entries) != 1 || entries[0].Action != audit.OrgsPerDay {
			t.Errorf("audit of the new limit: %+v %v", entries, err)
		}
		u, _ = db.UserByID(ctx, u.ID)
		for i := range 3 {
			_, err := f.s.CreateOrg(ctx, u, models.OrgTeam, fmt.Sprintf("More %d", i))
			if (i < 2) != (err == nil) {
				t.Errorf("organisation %d after the limit was raised to %d: %v", accounts.DefaultOrgsPerDay+i+1, n, err)
			}
		}
		// A day later the count starts again.
		f.now = f.now.Add(25 * 60 * 60 * 1e9)
		if _, err := f.s.CreateOrg(ctx, u, models.OrgTeam, "Tomorrow"); err != nil {
			t.Errorf("a day later: %v", err)
		}
	})
}

func throttled(err error) bool { return errors.Is(err, accounts.ErrThrottled) }

// Sign-up, reset and resend mails are throttled per address and per email;
// sign-up answers an address that has an account as it answers a new one.
func TestMailingActionsAreThrottled(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		existing := f.signUpVerified("taken@example.com")
		signUp := func(email, ip string) (*models.User, error) {
			return f.s.SignUp(ctx, accounts.SignUpInput{Email: email, Password: "tianfu-gpu-2026!", Name: "X", IP: ip})
		}
		// The taken address: answered like a new one, SignupsPerEmail times.
		for i := range accounts.SignupsPerEmail - 1 { // one was its own sign-up
			if u, err := signUp(existing.Email, fmt.Sprintf("10.2.0.%d", i)); err != nil || u != nil {
				t.Fatalf("sign-up %d with a taken address: %+v %v", i, u, err)
			}
		}
		if _, err := signUp(existing.Email, "10.2.1.1"); !throttled(err) {
			t.Errorf("sign-up past %d for one email: %v, want throttled", accounts.SignupsPerEmail, err)
		}
		var mails int64
		db.R.Model(&models.OutboxMail{}).Where("to_addr = ?", existing.Email).Count(&mails)
		if mails != int64(accounts.SignupsPerEmail) { // verification + the "someone tried" mails
			t.Errorf("%d mails to the taken address, want %d", mails, accounts.SignupsPerEmail)
		}
		// One client address: SignupsPerAddress sign-ups an hour.
		for i := range accounts.SignupsPerAddress {
			if _, err := signUp(fmt.Sprintf("bulk%d@example.com", i), "10.3.3.3"); err != nil {
				t.Fatalf("sign-up %d from one address: %v", i, err)
			}
		}
		if _, err := signUp("one-more@example.com", "10.3.3.3"); !throttled(err) {
			t.Errorf("sign-up past %d from one address: %v", accounts.SignupsPerAddress, err)
		}
		if _, err := signUp("one-more@example.com", "10.3.3.4"); err != nil {
			t.Errorf("another address: %v", err)
		}

		// Reset links: throttled per email whether or not it has an account,
		// and each new link retires the older ones.
		for _, email := range []string{existing.Email, "nobody@example.com"} {
			for i := range accounts.ResetsPerEmail {
				if err := f.s.RequestPasswordReset(ctx, email, fmt.Sprintf("10.4.0.%d", i)); err != nil {
					t.Fatalf("reset %d for %s: %v", i, email, err)
				}
			}
			if err := f.s.RequestPasswordReset(ctx, email, "10.4.1.1"); !throttled(err) {
				t.Errorf("reset past %d for %s: %v", accounts.ResetsPerEmail, email, err)
			}
		}
		ms, err := db.Outbox(ctx, existing.Email, 10)
		if err != nil {
			t.Fatal(err)
		}
		var tokens []string
		for _, m := range ms {
			if mm := linkRe.FindStringSubmatch(m.Body); mm != nil && mm[1] == "/password/reset" {
				tokens = append(tokens, mm[2]) // newest first
			}
		}
		if len(tokens) != accounts.ResetsPerEmail {
			t.Fatalf("%d reset links mailed, want %d", len(tokens), accounts.ResetsPerEmail)
		}
		for _, old := range tokens[1:] {
			if _, err := f.s.ResetPassword(ctx, old, "older-link-2026"); apperr.Code(err) != apperr.EINVALID {
				t.Errorf("an older reset link still works: %v", err)
			}
		}
		if _, err := f.s.ResetPassword(ctx, tokens[0], "newest-link-2026"); err != nil {
			t.Errorf("the newest reset link: %v", err)
		}

		// Resending the verification link.
		u, err := signUp("resend@example.com", "10.5.5.5")
		if err != nil {
			t.Fatal(err)
		}
		for i := range accounts.ResendsPerUser {
			if err := f.s.ResendVerification(ctx, u); err != nil {
				t.Fatalf("resend %d: %v", i, err)
			}
		}
		if err := f.s.ResendVerification(ctx, u); !throttled(err) {
			t.Errorf("resend past %d: %v", accounts.ResendsPerUser, err)
		}
		// Invitations mail strangers: throttled per invited address (from
		// any organisation) and per inviter; a refused one mails nothing.
		inviter, _ := db.UserByID(ctx, existing.ID)
		team, err := f.s.CreateOrg(ctx, inviter, models.OrgTeam, "Invite Co")
		if err != nil {
			t.Fatal(err)
		}
		invite := func(email string) error {
			_, err := f.s.Invite(ctx, inviter, team.ID, email, models.RoleMember)
			return err
		}
		for i := range accounts.InvitesPerEmail {
			if err := invite("stranger@example.com"); err != nil {
				t.Fatalf("invitation %d to one address: %v", i, err)
			}
		}
		if err := invite("stranger@example.com"); !throttled(err) {
			t.Errorf("invitation past %d to one address: %v", accounts.InvitesPerEmail, err)
		}
		for i := range accounts.InvitesPerUser - accounts.InvitesPerEmail {
			if err := invite(fmt.Sprintf("guest%d@example.com", i)); err != nil {
				t.Fatalf("invitation %d from one user: %v", i, err)
			}
		}
		if err := invite("one-guest-more@example.com"); !throttled(err) {
			t.Errorf("invitation past %d from one user: %v", accounts.InvitesPerUser, err)
		}
		db.R.Model(&models.OutboxMail{}).Where("to_addr IN ?", []string{"stranger@example.com", "one-guest-more@example.com"}).Count(&mails)
		if mails != int64(accounts.InvitesPerEmail) {
			t.Errorf("%d invitation mails to the refused addresses, want %d", mails, accounts.InvitesPerEmail)
		}

		// An hour later each throttle has room again.
		f.now = f.now.Add(61 * 60 * 1e9)
		if err := f.s.ResendVerification(ctx, u); err != nil {
			t.Errorf("resend an hour later: %v", err)
		}
		if err := invite("stranger@example.com"); err != nil {
			t.Errorf("an invitation an hour later: %v", err)
		}
	})
}

// A password change or reset, and "log out other sessions", raise the
// user's session epoch (the web layer ends older sessions by it).
func TestPasswordChangesEndSessions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		u := f.signUpVerified("epoch@example.com")
		epoch := func() int64 {
			got, err := db.UserByID(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got.SessionEpoch
		}
		e0 := epoch()
		if err := f.s.ChangePassword(ctx, u, "tianfu-gpu-2026!", "changed-pass-2026"); err != nil {
			t.Fatal(err)
		}
		if e := epoch(); e <= e0 || u.SessionEpoch != e {
			t.Errorf("after a password change the epoch is %d (was %d, the caller got %d)", e, e0, u.SessionEpoch)
		}
		e1 := epoch()
		if err := f.s.EndOtherSessions(ctx, u); err != nil || epoch() <= e1 {
			t.Errorf("log out other sessions: epoch %d, was %d (%v)", epoch(), e1, err)
		}
		e2 := epoch()
		if err := f.s.RequestPasswordReset(ctx, u.Email, ""); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.ResetPassword(ctx, f.link(u.Email, "/password/reset"), "reset-pass-2026!")
		if err != nil || epoch() <= e2 || got.SessionEpoch != epoch() {
			t.Errorf("after a reset: epoch %d, was %d, returned %+v (%v)", epoch(), e2, got, err)
		}
	})
}

// An invitation joins only the person it was sent to, verified; an
// organisation lists its pending invitations and can revoke them.
func TestInvitationsAreForTheInvitedAddress(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		owner := f.signUpVerified("owner@example.com")
		team, err := f.s.CreateOrg(ctx, owner, models.OrgTeam, "Alpha")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Invite(ctx, owner, team.ID, "Bob@Example.com", models.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		link := f.link("bob@example.com", "/invitations/accept")
		pending, err := f.s.PendingInvitations(ctx, owner, team.ID)
		if err != nil || len(pending) != 1 || pending[0].Email != "bob@example.com" || pending[0].Role != models.RoleAdmin {
			t.Fatalf("pending invitations %+v (%v), want Bob's", pending, err)
		}

		// Someone who got hold of the link, and Bob before he verified.
		mallory := f.signUpVerified("mallory@example.com")
		if _, err := f.s.AcceptInvite(ctx, mallory, link); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("another person accepted Bob's invitation: %v", err)
		}
		bob, err := f.s.SignUp(ctx, accounts.SignUpInput{Email: "bob@example.com", Password: "bob-pass-2026!", Name: "Bob", IP: "10.9.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.AcceptInvite(ctx, bob, link); apperr.Code(err) != apperr.EFORBIDDEN || !strings.Contains(err.Error(), "bob@example.com") {
			t.Errorf("an unverified account accepted: %v", err)
		}
		if m, _ := db.MembershipOf(ctx, team.ID, mallory.ID); m != nil {
			t.Errorf("mallory is a member: %+v", m)
		}
		// The refusals used nothing: Bob, verified, joins with the same link.
		if bob, err = f.s.VerifyEmail(ctx, f.link("bob@example.com", "/verify")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.AcceptInvite(ctx, bob, link); err != nil {
			t.Fatalf("Bob accepting: %v", err)
		}
		if pending, _ := f.s.PendingInvitations(ctx, owner, team.ID); len(pending) != 0 {
			t.Errorf("an accepted invitation is still pending: %+v", pending)
		}

		// Revoking: the link no longer works; only those who may invite.
		if _, err := f.s.Invite(ctx, owner, team.ID, "carol@example.com", models.RoleMember); err != nil {
			t.Fatal(err)
		}
		carolLink := f.link("carol@example.com", "/invitations/accept")
		pending, _ = f.s.PendingInvitations(ctx, owner, team.ID)
		if len(pending) != 1 {
			t.Fatalf("pending %+v", pending)
		}
		if err := f.s.RevokeInvitation(ctx, mallory, team.ID, pending[0].ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("an outsider revoked: %v", err)
		}
		if err := f.s.RevokeInvitation(ctx, owner, team.ID, pending[0].ID); err != nil {
			t.Fatal(err)
		}
		carol := f.signUpVerified("carol@example.com")
		if _, err := f.s.AcceptInvite(ctx, carol, carolLink); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("a revoked invitation was accepted: %v", err)
		}
	})
}

// Someone who signs up with another person's address, and logs in with
// the password they typed, loses the account once the owner verifies
// away from that sign-up: the owner chooses the password, every earlier
// session ends, the other links die. Signing up again for an unverified
// address mails its owner a fresh link.
func TestVerifyingAwayFromTheSignUpSetsThePassword(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		const victim = "victim@example.com"
		if _, err := f.s.SignUp(ctx, accounts.SignUpInput{Email: victim, Password: "attacker-pass-2026", Name: "Mallory", IP: "10.6.6.6"}); err != nil {
			t.Fatal(err)
		}
		squatter, err := f.s.Login(ctx, victim, "attacker-pass-2026", "10.6.6.6")
		if err != nil {
			t.Fatal(err)
		}
		first := f.link(victim, "/verify")
		// The owner signs up too: no account is created, a fresh link is mailed.
		again, err := f.s.SignUp(ctx, accounts.SignUpInput{Email: victim, Password: "owner-pass-2026!", Name: "Vic", IP: "10.7.7.7"})
		if err != nil || again != nil {
			t.Fatalf("signing up again: %+v %v", again, err)
		}
		fresh := f.link(victim, "/verify")
		if fresh == first {
			t.Fatal("no fresh link for an unverified address signed up again")
		}
		if uid, err := f.s.VerifyLinkUser(ctx, fresh); err != nil || uid != squatter.ID {
			t.Fatalf("the fresh link's user: %d %v", uid, err)
		}
		if _, err := f.s.VerifyWithPassword(ctx, fresh, "short"); fieldOf(err) != "password" {
			t.Errorf("a weak password: %v", err)
		}
		u, err := f.s.VerifyWithPassword(ctx, fresh, "owner-chosen-2026")
		if err != nil || !u.Verified() || u.SessionEpoch <= squatter.SessionEpoch {
			t.Fatalf("verify with a password: %+v %v (epoch was %d)", u, err, squatter.SessionEpoch)
		}
		if _, err := f.s.Login(ctx, victim, "attacker-pass-2026", "10.6.6.6"); fieldOf(err) != "password" {
			t.Errorf("the squatter's password still logs in: %v", err)
		}
		if _, err := f.s.Login(ctx, victim, "owner-chosen-2026", "10.7.7.7"); err != nil {
			t.Errorf("the owner's password: %v", err)
		}
		if _, err := f.s.VerifyEmail(ctx, first); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("the first link still works after the address was verified: %v", err)
		}
	})
}

// Attempts sent at once are counted one after another: twenty reset
// requests for one address at the same moment mail it ResetsPerEmail times.
func TestThrottlesHoldForAttemptsSentAtOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		u := f.signUpVerified("burst@example.com")
		var wg sync.WaitGroup
		var mu sync.Mutex
		passed := 0
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := f.s.RequestPasswordReset(ctx, u.Email, fmt.Sprintf("10.8.0.%d", i))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					passed++
				case !throttled(err):
					t.Errorf("reset: %v", err)
				}
			}()
		}
		wg.Wait()
		var mails int64
		db.R.Model(&models.OutboxMail{}).Where("to_addr = ? AND body LIKE ?", u.Email, "%/password/reset?token=%").Count(&mails)
		if passed != accounts.ResetsPerEmail || mails != int64(accounts.ResetsPerEmail) {
			t.Errorf("20 resets at once: %d answered, %d mailed; want %d", passed, mails, accounts.ResetsPerEmail)
		}
	})
}
