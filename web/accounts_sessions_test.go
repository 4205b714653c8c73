package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/models"
	"suanli/routenames"
)

// loggedInAs asserts that the actor's session is the user's: /account
// answers 200 with their address.
func loggedInAs(t *testing.T, ac *actor, email, what string) {
	t.Helper()
	res, body := ac.do("GET", ac.a.url(routenames.AccountShow), nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, email) {
		t.Errorf("%s: GET /account: %d, want 200 as %s", what, res.StatusCode, email)
	}
}

// A password change, a reset and "log out other sessions" end every other
// session of the user; the session that did it goes on.
func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		u := mustUser(t, db, "sessions@example.com", "Sam Sessions", false)
		laptop, phone := loggedIn(a, "laptop", u), loggedIn(a, "phone", u)

		const changed = "changed-kettle-2026"
		res, body := laptop.post(a.url(routenames.AccountPassword), url.Values{"current_password": {testPassword}, "password": {changed}})
		must(t, res.StatusCode == http.StatusSeeOther, "change password: %d\n%s", res.StatusCode, snippet(body))
		loggedInAs(t, laptop, u.Email, "the browser that changed the password")
		notLoggedIn(t, phone, "another browser after the password change")

		// Logged in again on the phone; the laptop logs out the others.
		res, body = phone.post(a.url(routenames.AuthLoginPost), url.Values{"email": {u.Email}, "password": {changed}})
		must(t, res.StatusCode == http.StatusSeeOther, "log in with the new password: %d\n%s", res.StatusCode, snippet(body))
		loggedInAs(t, phone, u.Email, "the phone, logged in again")
		res, body = laptop.post(a.url(routenames.AccountSessionsEnd), nil)
		must(t, res.StatusCode == http.StatusSeeOther, "log out other sessions: %d\n%s", res.StatusCode, snippet(body))
		_, page := laptop.do("GET", a.url(routenames.AccountShow), nil)
		contains(t, page, "Every other session is logged out.")
		loggedInAs(t, laptop, u.Email, "the browser that logged out the others")
		notLoggedIn(t, phone, "the phone after 'log out other sessions'")

		// A reset from a third browser ends the laptop's session too.
		res, _ = phone.post(a.url(routenames.PasswordForgotPost), url.Values{"email": {u.Email}})
		must(t, res.StatusCode == http.StatusOK, "forgot: %d", res.StatusCode)
		res, body = phone.post(a.url(routenames.PasswordResetPost), url.Values{"token": {mailedToken(t, db, u.Email, "/password/reset")}, "password": {"reset-kettle-2026"}})
		must(t, res.StatusCode == http.StatusSeeOther, "reset: %d\n%s", res.StatusCode, snippet(body))
		loggedInAs(t, phone, u.Email, "the browser that reset the password")
		notLoggedIn(t, laptop, "the laptop after a reset")
	})
}

// Sign-up answers a taken address exactly as a new one: the same page,
// nobody logged in; the address's owner is told by mail.
func TestSignupDoesNotRevealTakenAddresses(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		taken := mustUser(t, db, "taken@example.com", "Tina Taken", false)
		answer := func(email string) (int, string) {
			ac := newActor(a, "visitor "+email)
			res, body := ac.post(a.url(routenames.AuthSignupPost), url.Values{"email": {email}, "name": {"Someone"}, "password": {"another-kettle-1"}, "lang": {"en"}})
			notLoggedIn(t, ac, "after signing up "+email)
			// The page says which address to look in; nothing else differs.
			main := regexp.MustCompile(`(?s)<main.*</main>`).FindString(body)
			return res.StatusCode, strings.ReplaceAll(main, email, "ADDRESS")
		}
		newStatus, newPage := answer("fresh@example.com")
		takenStatus, takenPage := answer(taken.Email)
		must(t, newStatus == http.StatusOK && takenStatus == http.StatusOK, "sign-up answers %d (new) and %d (taken), want 200 both", newStatus, takenStatus)
		if newPage != takenPage || !strings.Contains(newPage, "Check your email") {
			t.Errorf("the answers differ:\nnew:   %s\ntaken: %s", newPage, takenPage)
		}
		ms, err := db.Outbox(t.Context(), taken.Email, 5)
		// In the owner's language (zh-CN), with the way to log in and no link that does anything.
		must(t, err == nil && len(ms) == 1 && strings.Contains(ms[0].Body, "已有账户") && strings.Contains(ms[0].Body, "/login") && !strings.Contains(ms[0].Body, "token="),
			"mail to the taken address: %+v %v", ms, err)
		must(t, passwordIs(t, db, taken.Email, testPassword), "the taken account's password changed")

		// The new address's link, opened on another device: it asks for the
		// password (whoever typed one at sign-up proved nothing), then
		// verifies and logs in.
		ac := newActor(a, "fresh")
		token := mailedToken(t, db, "fresh@example.com", "/verify")
		res, body := ac.do("GET", "/verify?token="+token, nil)
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "Choose your password") && !strings.Contains(body, "Email verified"),
			"the link away from the sign-up: %d\n%s", res.StatusCode, snippet(body))
		notLoggedIn(t, ac, "before the password is chosen")
		res, body = ac.post(a.url(routenames.AuthVerifyPost), url.Values{"token": {token}, "password": {"short"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldError(body, "password") != "", "a weak password: %d\n%s", res.StatusCode, snippet(body))
		res, body = ac.post(a.url(routenames.AuthVerifyPost), url.Values{"token": {token}, "password": {"fresh-kettle-2026"}})
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "Email verified"), "verify with a password: %d\n%s", res.StatusCode, snippet(body))
		loggedInAs(t, ac, "fresh@example.com", "after the verification link")
		must(t, passwordIs(t, db, "fresh@example.com", "fresh-kettle-2026"), "the chosen password was not set")
	})
}

// An invitee who is not logged in and signs up keeps the invitation: the
// verification link leads back to it. The organisation page lists pending
// invitations and revokes them.
func TestInviteeWhoSignsUpKeepsTheInvitation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		owner := loggedIn(a, "owner", mustUser(t, db, "owner@example.com", "Olga Owner", false))
		res, body := owner.post(a.url(routenames.OrgsCreate), url.Values{"name": {"Alpha Dynamics"}, "kind": {"team"}})
		must(t, res.StatusCode == http.StatusSeeOther, "create team: %d\n%s", res.StatusCode, snippet(body))
		orgPath := res.Header.Get("Location")
		res, body = owner.post(orgPath+"/invitations", url.Values{"email": {"newbie@example.com"}, "role": {"member"}})
		must(t, res.StatusCode == http.StatusSeeOther, "invite: %d\n%s", res.StatusCode, snippet(body))
		_, page := owner.do("GET", orgPath, nil)
		contains(t, page, "Pending invitations", "newbie@example.com")
		link := "/invitations/accept?token=" + mailedToken(t, db, "newbie@example.com", "/invitations/accept")

		// Not logged in: to the login page, whose sign-up link keeps the way back.
		newbie := newActor(a, "newbie")
		res, _ = newbie.do("GET", link, nil)
		login := res.Header.Get("Location")
		must(t, res.StatusCode == http.StatusSeeOther && strings.HasPrefix(login, "/login?next="), "the invitation, logged out: %d to %q", res.StatusCode, login)
		_, page = newbie.do("GET", login, nil)
		m := regexp.MustCompile(`id="login-signup" href="([^"]+)"`).FindStringSubmatch(page)
		must(t, m != nil, "no sign-up link on the login page\n%s", snippet(page))
		signupURL := strings.ReplaceAll(m[1], "&amp;", "&")
		next, _ := url.Parse(signupURL)
		must(t, next.Query().Get("next") == link, "the sign-up link %q does not lead back to %q", signupURL, link)
		_, page = newbie.do("GET", signupURL, nil)
		hidden := regexp.MustCompile(`name="next" value="([^"]*)"`).FindStringSubmatch(page)
		must(t, hidden != nil && strings.ReplaceAll(hidden[1], "&amp;", "&") == link, "the sign-up form carries next %v, want %q", hidden, link)
		res, body = newbie.post(a.url(routenames.AuthSignupPost), url.Values{"email": {"newbie@example.com"}, "name": {"Nina Newbie"},
			"password": {"newbie-kettle-2026"}, "lang": {"en"}, "next": {link}})
		must(t, res.StatusCode == http.StatusOK, "sign up: %d\n%s", res.StatusCode, snippet(body))

		// The verification link, opened in the same browser, continues to the invitation.
		_, page = newbie.do("GET", "/verify?token="+mailedToken(t, db, "newbie@example.com", "/verify"), nil)
		cont := regexp.MustCompile(`<a class="button" href="([^"]+)">Continue</a>`).FindStringSubmatch(page)
		must(t, cont != nil && strings.ReplaceAll(cont[1], "&amp;", "&") == link, "the verified page does not continue to the invitation\n%s", snippet(page))
		res, body = newbie.post(a.url(routenames.InvitationsAcceptPost), url.Values{"token": {strings.TrimPrefix(link, "/invitations/accept?token=")}})
		must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == orgPath, "accept: %d to %q\n%s", res.StatusCode, res.Header.Get("Location"), snippet(body))
		_, page = owner.do("GET", orgPath, nil)
		contains(t, page, "Nina Newbie", "No invitations are waiting.")

		// A second invitation, revoked: its link is dead.
		res, _ = owner.post(orgPath+"/invitations", url.Values{"email": {"later@example.com"}, "role": {"member"}})
		must(t, res.StatusCode == http.StatusSeeOther, "invite: %d", res.StatusCode)
		_, page = owner.do("GET", orgPath, nil)
		rv := regexp.MustCompile(`action="(` + regexp.QuoteMeta(orgPath) + `/invitations/\d+/revoke)"`).FindStringSubmatch(page)
		must(t, rv != nil, "no revoke button\n%s", snippet(page))
		outsider := loggedIn(a, "outsider", mustUser(t, db, "outsider@example.com", "Otto", false))
		res, _ = outsider.post(rv[1], nil)
		must(t, res.StatusCode == http.StatusNotFound, "an outsider revoking: %d, want 404", res.StatusCode)
		res, _ = owner.post(rv[1], nil)
		must(t, res.StatusCode == http.StatusSeeOther, "revoke: %d", res.StatusCode)
		later := loggedIn(a, "later", mustUser(t, db, "later@example.com", "Lee Later", false))
		res, body = later.post(a.url(routenames.InvitationsAcceptPost), url.Values{"token": {mailedToken(t, db, "later@example.com", "/invitations/accept")}})
		must(t, res.StatusCode == http.StatusBadRequest, "a revoked invitation: %d, want 400\n%s", res.StatusCode, snippet(body))
	})
}

// A verification link opened in a browser where someone else is logged in
// (an admin reading the outbox) verifies nothing by being opened: it asks
// for the account's password, and the session stays the reader's.
func TestVerifyLinkInAnotherUsersBrowserKeepsTheirSession(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	admin := loggedIn(a, "admin", mustUser(t, a.db, "root@suanli.example", "Pat Platform", true))
	visitor := newActor(a, "visitor")
	res, _ := visitor.post(a.url(routenames.AuthSignupPost), url.Values{"email": {"new@example.com"}, "name": {"New"}, "password": {"new-kettle-2026"}, "lang": {"en"}})
	must(t, res.StatusCode == http.StatusOK, "sign up: %d", res.StatusCode)
	res, body := admin.do("GET", "/verify?token="+mailedToken(t, a.db, "new@example.com", "/verify"), nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "Choose your password"), "verify: %d\n%s", res.StatusCode, snippet(body))
	loggedInAs(t, admin, "root@suanli.example", "the admin after opening someone's verification link")
	u, err := a.db.UserByEmail(t.Context(), "new@example.com")
	must(t, err == nil && !u.Verified(), "opening the link verified the address: %+v %v", u, err)
	// In the browser that signed up, the same link verifies and logs in.
	res, body = visitor.do("GET", "/verify?token="+mailedToken(t, a.db, "new@example.com", "/verify"), nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "Email verified"), "verify where signed up: %d\n%s", res.StatusCode, snippet(body))
	loggedInAs(t, visitor, "new@example.com", "the browser that signed up")
}

// A platform admin sets how many organisations a user may create a day on
// /admin/users; bad numbers are a message beside the field.
func TestAdminSetsOrganisationsPerDay(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		u := mustUser(t, db, "busy@example.com", "Busy Bee", false)
		admin := loggedIn(a, "admin", mustUser(t, db, "root@suanli.example", "Pat Platform", true))
		path := a.url(routenames.AdminUsersOrgsPerDay, idParam(u.ID))
		for _, bad := range []string{"abc", "-3", "100000"} {
			res, body := admin.post(path, url.Values{"per_day": {bad}})
			must(t, res.StatusCode == http.StatusUnprocessableEntity && strings.Contains(body, "Give a number from 0 to 1000"), "per_day %q: %d\n%s", bad, res.StatusCode, snippet(body))
		}
		res, _ := admin.post(path, url.Values{"per_day": {"12"}})
		must(t, res.StatusCode == http.StatusSeeOther, "set 12: %d", res.StatusCode)
		got, _ := db.UserByID(t.Context(), u.ID)
		must(t, got.OrgsPerDay != nil && *got.OrgsPerDay == 12, "orgs per day %v, want 12", got.OrgsPerDay)
		res, _ = admin.post(path, url.Values{"per_day": {""}})
		must(t, res.StatusCode == http.StatusSeeOther, "back to the default: %d", res.StatusCode)
		got, _ = db.UserByID(t.Context(), u.ID)
		must(t, got.OrgsPerDay == nil, "orgs per day %v, want the default", got.OrgsPerDay)
	})
}

// An invitee who signs up on one device and opens the verification mail
// on another still finds the invitation: the account page lists the
// invitations to their verified address, to accept there; nobody else can.
func TestInvitationsToYourAddressAreOnTheAccountPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		owner := loggedIn(a, "owner", mustUser(t, db, "owner@example.com", "Olga Owner", false))
		res, _ := owner.post(a.url(routenames.OrgsCreate), url.Values{"name": {"Alpha Dynamics"}, "kind": {"team"}})
		orgPath := res.Header.Get("Location")
		for range 2 { // sent twice: joining retires the other
			res, _ = owner.post(orgPath+"/invitations", url.Values{"email": {"phone@example.com"}, "role": {"member"}})
			must(t, res.StatusCode == http.StatusSeeOther, "invite: %d", res.StatusCode)
		}

		laptop := newActor(a, "laptop")
		res, _ = laptop.post(a.url(routenames.AuthSignupPost), url.Values{"email": {"phone@example.com"}, "name": {"Pia Phone"}, "password": {"phone-kettle-2026"}, "lang": {"en"}})
		must(t, res.StatusCode == http.StatusOK, "sign up: %d", res.StatusCode)
		phone := newActor(a, "phone")
		token := mailedToken(t, db, "phone@example.com", "/verify")
		res, body := phone.post(a.url(routenames.AuthVerifyPost), url.Values{"token": {token}, "password": {"phone-kettle-2026"}})
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "See your invitations (2)") && strings.Contains(body, `href="/account#invitations"`),
			"the verified page does not lead to the invitation: %d\n%s", res.StatusCode, snippet(body))
		_, page := phone.do("GET", a.url(routenames.AccountShow), nil)
		contains(t, page, "Invitations for you", "Alpha Dynamics")
		m := regexp.MustCompile(`action="(/invitations/\d+/accept)"`).FindStringSubmatch(page)
		must(t, m != nil, "no accept button on the account page\n%s", snippet(page))

		outsider := loggedIn(a, "outsider", mustUser(t, db, "outsider@example.com", "Otto", false))
		res, _ = outsider.post(m[1], nil)
		must(t, res.StatusCode == http.StatusNotFound, "someone else accepting by number: %d, want 404", res.StatusCode)
		res, _ = phone.post(m[1], nil)
		must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == orgPath, "accept: %d to %q", res.StatusCode, res.Header.Get("Location"))
		_, page = owner.do("GET", orgPath, nil)
		contains(t, page, "Pia Phone", "No invitations are waiting.")
		_, page = phone.do("GET", a.url(routenames.AccountShow), nil)
		must(t, !strings.Contains(page, "Invitations for you"), "a member still has invitations to the organisation listed")
		res, _ = phone.post(m[1], nil)
		must(t, res.StatusCode == http.StatusNotFound, "accepting twice: %d, want 404", res.StatusCode)
	})
}

// Inviting one address too often is refused beside the address field,
// 429 with Retry-After, in the reader's language.
func TestInvitationsAreThrottledOnTheOrganisationPage(t *testing.T) {
	t.Parallel()
	a := newApp(t, dbtest.SQLite(t))
	owner := loggedIn(a, "owner", mustUser(t, a.db, "owner@example.com", "Olga Owner", false))
	res, _ := owner.post(a.url(routenames.OrgsCreate), url.Values{"name": {"Alpha Dynamics"}, "kind": {"team"}})
	orgPath := res.Header.Get("Location")
	for range accounts.InvitesPerEmail {
		res, _ = owner.post(orgPath+"/invitations", url.Values{"email": {"many@example.com"}, "role": {"member"}})
		must(t, res.StatusCode == http.StatusSeeOther, "invite: %d", res.StatusCode)
	}
	res, body := owner.post(orgPath+"/invitations", url.Values{"email": {"many@example.com"}, "role": {"member"}})
	must(t, res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") != "", "one too many: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	msg := fieldError(body, "email")
	must(t, msg != "" && strings.Contains(body, `value="many@example.com"`), "no message beside the address (%q), or the form lost it", msg)
}
