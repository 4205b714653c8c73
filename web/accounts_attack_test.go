package web_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
	"suanli/routenames"
)

// accountTables are the tables an attack must leave as they were.
var accountTables = []string{"users", "orgs", "memberships", "email_tokens", "api_tokens", "outbox"}

// rowCounts counts the rows of each account table.
func rowCounts(t *testing.T, db *models.DB) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	for _, table := range accountTables {
		var n int64
		if err := db.W.Table(table).Count(&n).Error; err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		counts[table] = n
	}
	return counts
}

// unchanged fails if any account table gained or lost rows since before.
func unchanged(t *testing.T, db *models.DB, before map[string]int64, what string) {
	t.Helper()
	after := rowCounts(t, db)
	for _, table := range accountTables {
		if after[table] != before[table] {
			t.Errorf("%s changed %s: %d rows, was %d", what, table, after[table], before[table])
		}
	}
}

// fieldError returns the message shown beside a form field.
func fieldError(body, field string) string {
	m := regexp.MustCompile(`id="err-` + regexp.QuoteMeta(field) + `" role="alert">([^<]*)</small>`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// rawDo sends a request from a browser without a cookie jar: headers
// (name, value pairs) are sent exactly, a forged Cookie header included.
func rawDo(a *app, method, path string, form url.Values, headers ...string) (*http.Response, string) {
	a.t.Helper()
	ac := &actor{name: "raw", a: a, c: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	return ac.do(method, path, form, headers...)
}

// mailedToken returns the token of the newest one-time link mailed to the
// address for the path (e.g. "/password/reset").
func mailedToken(t *testing.T, db *models.DB, to, path string) string {
	t.Helper()
	ms, err := db.Outbox(context.Background(), to, 1)
	if err != nil || len(ms) == 0 {
		t.Fatalf("no mail to %s: %v", to, err)
	}
	m := regexp.MustCompile(`http://suanli\.test` + regexp.QuoteMeta(path) + `\?token=([A-Za-z0-9_-]+)`).FindStringSubmatch(ms[0].Body)
	if m == nil {
		t.Fatalf("no %s link in the mail to %s: %q", path, to, ms[0].Body)
	}
	return m[1]
}

// passwordIs reports whether the stored password of the user is pw.
func passwordIs(t *testing.T, db *models.DB, email, pw string) bool {
	t.Helper()
	u, err := db.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return accounts.CheckPassword(u.PasswordHash, pw)
}

// randomToken is 32 random bytes as a cookie-safe string (the shape of real
// session and CSRF tokens).
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// notLoggedIn asserts that the actor is anonymous: /account sends it to log in.
func notLoggedIn(t *testing.T, ac *actor, what string) {
	t.Helper()
	res, _ := ac.do("GET", ac.a.url(routenames.AccountShow), nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login?next=") {
		t.Errorf("%s: GET /account: %d Location %q, want 303 to the login page", what, res.StatusCode, res.Header.Get("Location"))
	}
}

// Sign-up refuses bad input with 422 and a message beside the field, and
// creates nothing.
func TestAttackSignupBadInput(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	mustUser(t, a.db, "dup@example.com", "Dana Dup", false)
	ac := newActor(a, "visitor")
	before := rowCounts(t, a.db)
	cases := []struct {
		rule, email, password, field, msg string
	}{
		{"common password", "new1@example.com", "1234567890", "password", "too common"},
		{"one character repeated", "new1@example.com", "aaaaaaaaaaaa", "password", "too common"},
		{"password equal to the email", "new1@example.com", "new1@example.com", "password", "too common"},
		{"nine-character password", "new2@example.com", "abcdefgh9", "password", "at least 10"},
		{"ten-thousand-character password", "new3@example.com", strings.Repeat("ab1", 3334), "password", "at most 128"},
		{"email without a domain", "a@", testPassword, "email", "valid email"},
		{"email without a local part", "@b.cn", testPassword, "email", "valid email"},
		{"email with a space", "a b@c.cn", testPassword, "email", "valid email"},
		{"email without a dot in the domain", "x@y", testPassword, "email", "valid email"},
		{"email with a display name", "Eve <eve@example.com>", testPassword, "email", "valid email"},
		{"email with an injected header", "eve@example.com\r\nBcc: all@example.com", testPassword, "email", "valid email"},
		{"empty email", "", testPassword, "email", "Required"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			res, body := ac.post(a.url(routenames.AuthSignupPost), url.Values{"email": {c.email}, "name": {"Mallory"}, "password": {c.password}, "lang": {"en"}})
			must(t, res.StatusCode == http.StatusUnprocessableEntity, "POST /signup: %d, want 422\n%s", res.StatusCode, snippet(body))
			if msg := fieldError(body, c.field); !strings.Contains(msg, c.msg) {
				t.Errorf("message beside %s: %q, want one containing %q", c.field, msg, c.msg)
			}
			if c.password != c.email && strings.Contains(body, c.password) {
				t.Errorf("the password is shown again")
			}
		})
	}
	t.Run("ten-thousand-character password at login", func(t *testing.T) {
		res, body := ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {"dup@example.com"}, "password": {strings.Repeat("x", 10000)}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "POST /login: %d, want 422\n%s", res.StatusCode, snippet(body))
		contains(t, body, "Wrong email or password")
	})
	unchanged(t, a.db, before, "bad sign-ups")
	notLoggedIn(t, ac, "after bad sign-ups")
}

// Duplicate emails and one-time reset links, on both databases (case
// folding and timestamps differ between them).
func TestAttackDuplicateEmailAndResetLinks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		const email = "rita@example.com"
		mustUser(t, db, email, "Rita Reset", false)

		t.Run("duplicate email in another case creates nothing", func(t *testing.T) {
			before := rowCounts(t, db)
			ac := newActor(a, "visitor")
			for _, dup := range []string{"Rita@EXAMPLE.com", "  rita@example.com  "} {
				// Answered as a new address would be (nothing says it exists).
				res, body := ac.post(a.url(routenames.AuthSignupPost), url.Values{"email": {dup}, "name": {"Rita Again"}, "password": {"another-good-pass-1"}})
				must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "Check your email"), "POST /signup %q: %d, want the check-your-email page\n%s", dup, res.StatusCode, snippet(body))
			}
			// Only the owner is told, by mail.
			before["outbox"] += 2
			unchanged(t, db, before, "a duplicate sign-up")
			must(t, passwordIs(t, db, email, testPassword), "the existing account's password changed")
			notLoggedIn(t, ac, "after a duplicate sign-up")
		})

		// PostgreSQL refuses NUL bytes and invalid UTF-8 in text; such input
		// must be refused as input (400, before any handler runs), not fail
		// in the database.
		t.Run("bytes the database cannot store", func(t *testing.T) {
			before := rowCounts(t, db)
			ac := newActor(a, "fuzzer")
			for _, bad := range []string{"a\x00b@example.com", "\xff\xfe@example.com", "rita@example.com\x00"} {
				res, body := ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {bad}, "password": {"wrong-password"}})
				if !refused(res.StatusCode, body) {
					t.Errorf("POST /login with email %q: %d, want 400 malformed\n%s", bad, res.StatusCode, snippet(body))
				}
				res, body = ac.post(a.url(routenames.PasswordForgotPost), url.Values{"email": {bad}})
				if !refused(res.StatusCode, body) {
					t.Errorf("POST /password/forgot with email %q: %d, want 400 malformed\n%s", bad, res.StatusCode, snippet(body))
				}
				res, body = ac.post(a.url(routenames.AuthSignupPost), url.Values{"email": {bad}, "name": {"Fuzz"}, "password": {testPassword}})
				if !refused(res.StatusCode, body) {
					t.Errorf("POST /signup with email %q: %d, want 400 malformed\n%s", bad, res.StatusCode, snippet(body))
				}
			}
			for _, bad := range []string{"Nul\x00Name", "Bad\xffUTF8"} {
				res, body := ac.post(a.url(routenames.AuthSignupPost), url.Values{"email": {"fuzz@example.com"}, "name": {bad}, "password": {testPassword}})
				if !refused(res.StatusCode, body) {
					t.Errorf("POST /signup with name %q: %d, want 400 malformed\n%s", bad, res.StatusCode, snippet(body))
				}
			}
			unchanged(t, db, before, "undecodable input")
		})

		const first, second = "first-new-pass-1", "second-new-pass-2"
		t.Run("a reset link works once", func(t *testing.T) {
			ac := newActor(a, "rita")
			res, body := ac.post(a.url(routenames.PasswordForgotPost), url.Values{"email": {"RITA@example.com"}})
			must(t, res.StatusCode == 200, "POST /password/forgot: %d\n%s", res.StatusCode, snippet(body))
			token := mailedToken(t, db, email, "/password/reset")
			res, _ = ac.do("GET", a.url(routenames.PasswordReset)+query("token", token), nil)
			must(t, res.StatusCode == 200, "GET /password/reset: %d", res.StatusCode)

			// A weak password is refused without spending the link.
			res, body = ac.post(a.url(routenames.PasswordResetPost), url.Values{"token": {token}, "password": {"short"}})
			must(t, res.StatusCode == http.StatusUnprocessableEntity, "weak reset: %d, want 422\n%s", res.StatusCode, snippet(body))
			must(t, fieldError(body, "password") != "", "no message beside the password")
			must(t, passwordIs(t, db, email, testPassword), "a refused reset changed the password")

			res, body = ac.post(a.url(routenames.PasswordResetPost), url.Values{"token": {token}, "password": {first}})
			must(t, res.StatusCode == http.StatusSeeOther, "first use: %d, want 303\n%s", res.StatusCode, snippet(body))
			must(t, passwordIs(t, db, email, first), "the reset did not set the password")

			// The same link again, from another browser: refused, nothing changes.
			before := rowCounts(t, db)
			attacker := newActor(a, "attacker")
			res, body = attacker.post(a.url(routenames.PasswordResetPost), url.Values{"token": {token}, "password": {second}})
			must(t, res.StatusCode == http.StatusUnprocessableEntity, "reused link: %d, want 422\n%s", res.StatusCode, snippet(body))
			contains(t, body, "invalid, used or expired")
			must(t, passwordIs(t, db, email, first), "a reused link changed the password")
			notLoggedIn(t, attacker, "after a reused link")
			unchanged(t, db, before, "a reused link")
		})

		t.Run("an expired reset link is refused", func(t *testing.T) {
			ac := newActor(a, "rita")
			res, _ := ac.post(a.url(routenames.PasswordForgotPost), url.Values{"email": {email}})
			must(t, res.StatusCode == 200, "POST /password/forgot: %d", res.StatusCode)
			token := mailedToken(t, db, email, "/password/reset")
			err := db.W.Exec("UPDATE email_tokens SET expires_at = ? WHERE purpose = ? AND used_at IS NULL",
				time.Now().UTC().Add(-time.Minute), models.TokenReset).Error
			must(t, err == nil, "expire the link: %v", err)
			before := rowCounts(t, db)
			res, body := ac.post(a.url(routenames.PasswordResetPost), url.Values{"token": {token}, "password": {second}})
			must(t, res.StatusCode == http.StatusUnprocessableEntity, "expired link: %d, want 422\n%s", res.StatusCode, snippet(body))
			contains(t, body, "invalid, used or expired")
			must(t, passwordIs(t, db, email, first), "an expired link changed the password")
			notLoggedIn(t, ac, "after an expired link")
			unchanged(t, db, before, "an expired link")
		})

		t.Run("a reset link is not a verification link", func(t *testing.T) {
			ac := newActor(a, "rita")
			res, _ := ac.post(a.url(routenames.PasswordForgotPost), url.Values{"email": {email}})
			must(t, res.StatusCode == 200, "POST /password/forgot: %d", res.StatusCode)
			token := mailedToken(t, db, email, "/password/reset")
			res, body := ac.do("GET", a.url(routenames.AuthVerify)+query("token", token), nil)
			must(t, res.StatusCode == http.StatusBadRequest, "GET /verify with a reset token: %d, want 400\n%s", res.StatusCode, snippet(body))
			for _, bogus := range []string{"", "x", strings.Repeat("A", 5000), "' OR '1'='1"} {
				res, body = ac.post(a.url(routenames.PasswordResetPost), url.Values{"token": {bogus}, "password": {second}})
				must(t, res.StatusCode == http.StatusUnprocessableEntity, "reset with token %.20q: %d, want 422\n%s", bogus, res.StatusCode, snippet(body))
			}
			must(t, passwordIs(t, db, email, first), "a bogus link changed the password")
		})
	})
}

// A session cookie the server did not issue, or one that was logged out,
// makes the request anonymous; a cookie planted before login is not kept.
func TestForgedSessionCookie(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	u := mustUser(t, a.db, "sam@example.com", "Sam Session", false)
	forged := []struct{ rule, value string }{
		{"random token", randomToken()},
		{"short value", "x"},
		{"empty value", ""},
		{"SQL in the value", "'%20OR%20'1'='1"},
		{"very long value", strings.Repeat("A", 4000)},
	}
	for _, f := range forged {
		t.Run(f.rule, func(t *testing.T) {
			res, body := rawDo(a, "GET", a.url(routenames.AccountShow), nil, "Cookie", "suanli_session="+f.value)
			must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == "/login?next=%2Faccount",
				"GET /account with a forged session: %d Location %q\n%s", res.StatusCode, res.Header.Get("Location"), snippet(body))
		})
	}

	t.Run("logged-out session replayed", func(t *testing.T) {
		ac := loggedIn(a, "sam", u)
		old := ac.cookie("suanli_session")
		must(t, old != "", "no session cookie after login")
		res, _ := ac.post(a.url(routenames.AuthLogout), nil)
		must(t, res.StatusCode == http.StatusSeeOther, "POST /logout: %d", res.StatusCode)
		res, _ = rawDo(a, "GET", a.url(routenames.AccountShow), nil, "Cookie", "suanli_session="+old)
		must(t, res.StatusCode == http.StatusSeeOther, "GET /account with a logged-out session: %d, want 303", res.StatusCode)
	})

	t.Run("planted cookie is replaced at login", func(t *testing.T) {
		ac := newActor(a, "victim")
		planted := randomToken()
		base, _ := url.Parse(a.srv.URL)
		ac.c.Jar.SetCookies(base, []*http.Cookie{{Name: "suanli_session", Value: planted, Path: "/"}})
		res, _ := ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {u.Email}, "password": {testPassword}})
		must(t, res.StatusCode == http.StatusSeeOther, "login: %d", res.StatusCode)
		must(t, ac.cookie("suanli_session") != planted, "the planted session token survived the login (session fixation)")
		res, _ = rawDo(a, "GET", a.url(routenames.AccountShow), nil, "Cookie", "suanli_session="+planted)
		must(t, res.StatusCode == http.StatusSeeOther, "the planted token is logged in: %d", res.StatusCode)
	})
}

// A state-changing request without the right CSRF token gets 403 and
// changes nothing.
func TestCSRFMissingOrWrongToken(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	u := mustUser(t, a.db, "cora@example.com", "Cora Csrf", false)
	ac := loggedIn(a, "cora", u)
	attacker := newActor(a, "attacker")
	path := a.url(routenames.TokensCreate)
	before := rowCounts(t, a.db)
	cases := []struct {
		rule    string
		form    url.Values
		headers []string
	}{
		{"no token", url.Values{"name": {"ci"}}, nil},
		{"empty token", url.Values{"name": {"ci"}, "_csrf": {""}}, nil},
		{"wrong token in the form", url.Values{"name": {"ci"}, "_csrf": {randomToken()}}, nil},
		{"wrong token in the header", url.Values{"name": {"ci"}}, []string{"X-CSRF-Token", randomToken()}},
		{"another browser's token", url.Values{"name": {"ci"}, "_csrf": {attacker.csrf()}}, nil},
		{"wrong header beats a right form field", url.Values{"name": {"ci"}, "_csrf": {ac.csrf()}}, []string{"X-CSRF-Token", randomToken()}},
		{"right token from a cross-site page", url.Values{"name": {"ci"}, "_csrf": {ac.csrf()}}, []string{"Sec-Fetch-Site", "cross-site"}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			res, body := ac.do("POST", path, c.form, c.headers...)
			must(t, res.StatusCode == http.StatusForbidden, "POST %s: %d, want 403\n%s", path, res.StatusCode, snippet(body))
			contains(t, body, "This page expired")
		})
	}
	t.Run("right token without its cookie", func(t *testing.T) {
		res, _ := rawDo(a, "POST", path, url.Values{"name": {"ci"}, "_csrf": {ac.csrf()}}, "Cookie", "suanli_session="+ac.cookie("suanli_session"))
		must(t, res.StatusCode == http.StatusForbidden, "POST without the CSRF cookie: %d, want 403", res.StatusCode)
	})
	t.Run("logout without a token keeps the session", func(t *testing.T) {
		res, _ := ac.do("POST", a.url(routenames.AuthLogout), url.Values{})
		must(t, res.StatusCode == http.StatusForbidden, "POST /logout without a token: %d, want 403", res.StatusCode)
		res, _ = ac.do("GET", a.url(routenames.AccountShow), nil)
		must(t, res.StatusCode == 200, "logged out by a forged request: GET /account %d", res.StatusCode)
	})
	t.Run("sign-up without a token", func(t *testing.T) {
		res, _ := attacker.do("POST", a.url(routenames.AuthSignupPost), url.Values{"email": {"csrf@example.com"}, "name": {"X"}, "password": {testPassword}})
		must(t, res.StatusCode == http.StatusForbidden, "POST /signup without a token: %d, want 403", res.StatusCode)
	})
	unchanged(t, a.db, before, "requests without a valid CSRF token")

	// The same requests with the token work, by form field and by header (htmx).
	res, body := ac.post(path, url.Values{"name": {"ci"}})
	must(t, res.StatusCode == http.StatusCreated, "POST with the token: %d\n%s", res.StatusCode, snippet(body))
	res, body = ac.do("POST", path, url.Values{"name": {"ci2"}}, "X-CSRF-Token", ac.csrf())
	must(t, res.StatusCode == http.StatusCreated, "POST with the header: %d\n%s", res.StatusCode, snippet(body))
	after := rowCounts(t, a.db)
	must(t, after["api_tokens"] == before["api_tokens"]+2, "api tokens: %d, want %d", after["api_tokens"], before["api_tokens"]+2)
}

// Another organisation's ids, in URLs and bodies, are answered as if they
// did not exist, show none of its data and change nothing.
func TestAttackOtherOrgIDs(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	svc := &accounts.Service{DB: a.db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
	alice := mustUser(t, a.db, "alice@alpha.example", "Alice Alpha", false)
	teamA, err := svc.CreateOrg(ctx, alice, models.OrgTeam, "Alpha Dynamics")
	must(t, err == nil, "create team A: %v", err)
	bruno := mustUser(t, a.db, "bruno@beta.example", "Bruno Beta", false)
	labB, err := svc.ApplyLab(ctx, bruno, accounts.LabApplication{
		Institution: "Fudan University", LabName: "Beta Secret Lab", Supervisor: "Prof. Wu",
		EmailDomain: "fudan.edu.cn", EduEmail: "bruno@fudan.edu.cn",
	})
	must(t, err == nil, "apply lab B: %v", err)
	confirmB := mailedToken(t, a.db, "bruno@fudan.edu.cn", "/labs/confirm")
	plainB, tokB, err := svc.CreateAPIToken(ctx, bruno, "bruno's ci")
	must(t, err == nil, "token of B: %v", err)
	var personalB int64
	orgsB, err := a.db.OrgsOfUser(ctx, bruno.ID)
	must(t, err == nil, "orgs of B: %v", err)
	for _, om := range orgsB {
		if om.Org.Personal {
			personalB = om.Org.ID
		}
	}
	must(t, personalB != 0, "B has no personal org")
	secrets := []string{"Beta Secret Lab", "Bruno Beta", "bruno@", "Fudan", "Prof. Wu"}

	ac := loggedIn(a, "alice", alice)
	before := rowCounts(t, a.db)
	cases := []struct {
		rule, method, path string
		form               url.Values
		want               int
	}{
		{"B's lab page", "GET", a.url(routenames.OrgsShow, idParam(labB.ID)), nil, 404},
		{"B's personal org page", "GET", a.url(routenames.OrgsShow, idParam(personalB)), nil, 404},
		{"an org that does not exist", "GET", "/orgs/999999", nil, 404},
		{"org id zero", "GET", "/orgs/0", nil, 404},
		{"negative org id", "GET", "/orgs/-1", nil, 404},
		{"org id that is not a number", "GET", "/orgs/abc", nil, 404},
		{"org id that overflows", "GET", "/orgs/99999999999999999999", nil, 404},
		{"invite into B", "POST", a.url(routenames.OrgsInvite, idParam(labB.ID)), url.Values{"email": {"spy@fudan.edu.cn"}, "role": {"admin"}}, 404},
		{"set B's budget", "POST", a.url(routenames.OrgsBudget, idParam(labB.ID)), url.Values{"monthly_budget": {"1"}, "member_cap": {"1"}}, 404},
		{"bad budget for B says nothing about the input", "POST", a.url(routenames.OrgsBudget, idParam(labB.ID)), url.Values{"monthly_budget": {"lots"}}, 404},
		{"remove B's owner from B", "POST", a.url(routenames.OrgsMembersRemove, idParam(labB.ID), idParam(bruno.ID)), nil, 404},
		{"remove B's owner from A, where he is no member", "POST", a.url(routenames.OrgsMembersRemove, idParam(teamA.ID), idParam(bruno.ID)), nil, 404},
		{"revoke B's API token", "POST", a.url(routenames.TokensRevoke, idParam(tokB.ID)), nil, 404},
		{"review B as a non-admin", "POST", a.url(routenames.AdminReview, idParam(labB.ID)), url.Values{"decision": {"reject"}, "reason": {"spam"}}, 403},
		{"B's lab confirmation link", "GET", a.url(routenames.LabsConfirm) + query("token", confirmB), nil, 400},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			var (
				res  *http.Response
				body string
			)
			if c.method == "POST" {
				res, body = ac.post(c.path, c.form)
			} else {
				res, body = ac.do(c.method, c.path, nil)
			}
			must(t, res.StatusCode == c.want, "%s %s: %d, want %d\n%s", c.method, c.path, res.StatusCode, c.want, snippet(body))
			for _, s := range secrets {
				if strings.Contains(body, s) {
					t.Errorf("%s %s shows B's data: %q", c.method, c.path, s)
				}
			}
		})
	}
	unchanged(t, a.db, before, "requests on B's ids")

	// B is as it was.
	o, err := a.db.OrgByID(ctx, labB.ID)
	must(t, err == nil && o.Status == models.OrgPending && o.MonthlyBudgetFen == nil && o.MemberCapFen == nil, "lab B changed: %v %+v", err, o)
	m, err := a.db.MembershipOf(ctx, labB.ID, bruno.ID)
	must(t, err == nil && m.Role == models.RoleOwner && m.ConfirmedAt == nil, "B's membership changed: %v %+v", err, m)
	res, body := rawDo(a, "GET", a.url(routenames.APIMe), nil, "Authorization", "Bearer "+plainB)
	must(t, res.StatusCode == 200 && strings.Contains(body, "Beta Secret Lab"), "B's token stopped working: %d %s", res.StatusCode, snippet(body))

	// A's own view of itself lists none of B.
	res, body = ac.do("GET", a.url(routenames.APIMe), nil)
	must(t, res.StatusCode == 200 && strings.Contains(body, "Alpha Dynamics"), "GET /api/v1/me as A: %d %s", res.StatusCode, snippet(body))
	for _, s := range secrets {
		must(t, !strings.Contains(body, s), "A's /api/v1/me shows B's %q", s)
	}
	res, body = ac.do("GET", a.url(routenames.AccountShow), nil)
	must(t, res.StatusCode == 200, "GET /account as A: %d", res.StatusCode)
	for _, s := range secrets {
		must(t, !strings.Contains(body, s), "A's account page shows B's %q", s)
	}

	// B's confirmation link, tried by A, was not spent: B can still use it.
	bac := loggedIn(a, "bruno", bruno)
	res, body = bac.do("GET", a.url(routenames.LabsConfirm)+query("token", confirmB), nil)
	must(t, res.StatusCode == http.StatusSeeOther, "B's own confirmation link after A tried it: %d\n%s", res.StatusCode, snippet(body))
}

// apiMe is the part of GET /api/v1/me the tests read.
type apiMe struct {
	Email string `json:"email"`
	Orgs  []struct {
		Name     string `json:"name"`
		Role     string `json:"role"`
		Personal bool   `json:"personal"`
	} `json:"orgs"`
}

// A valid API token answers /api/v1/me with the user, organisations and
// roles; a revoked or otherwise bad one gets 401 in the API's JSON shape.
func TestRevokedAPIToken(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	u := mustUser(t, a.db, "tina@example.com", "Tina Token", false)
	gamma := &models.Org{Kind: models.OrgTeam, Name: "Gamma Team", Status: models.OrgActive, CreatedAt: a.db.Now().UTC()}
	must(t, a.db.Tx(ctx, func(tx *gorm.DB) error { return models.InsertOrg(tx, gamma) }) == nil, "create Gamma Team")
	mustMember(t, a.db, gamma.ID, u, models.RoleMember)

	ac := loggedIn(a, "tina", u)
	res, body := ac.post(a.url(routenames.TokensCreate), url.Values{"name": {"ci"}})
	must(t, res.StatusCode == http.StatusCreated, "POST /account/tokens: %d\n%s", res.StatusCode, snippet(body))
	plain := regexp.MustCompile(`sl_[A-Za-z0-9_-]{43}`).FindString(body)
	must(t, plain != "", "the new token is not shown")
	must(t, res.Header.Get("Cache-Control") == "no-store", "the page showing a token may be cached: %q", res.Header.Get("Cache-Control"))

	res, body = rawDo(a, "GET", a.url(routenames.APIMe), nil, "Authorization", "Bearer "+plain)
	must(t, res.StatusCode == 200, "GET /api/v1/me with a valid token: %d %s", res.StatusCode, snippet(body))
	var me apiMe
	must(t, json.Unmarshal([]byte(body), &me) == nil, "not JSON: %s", body)
	must(t, me.Email == u.Email, "email %q, want %q", me.Email, u.Email)
	roles := map[string]string{}
	for _, o := range me.Orgs {
		roles[o.Name] = o.Role
	}
	must(t, len(me.Orgs) == 2 && roles["Tina Token"] == models.RoleOwner && roles["Gamma Team"] == models.RoleMember, "orgs and roles: %+v", me.Orgs)

	tokens, err := a.db.APITokensOf(ctx, u.ID)
	must(t, err == nil && len(tokens) == 1, "tokens: %v %+v", err, tokens)
	res, _ = ac.post(a.url(routenames.TokensRevoke, idParam(tokens[0].ID)), nil)
	must(t, res.StatusCode == http.StatusSeeOther, "revoke: %d", res.StatusCode)

	bad := []struct{ rule, header string }{
		{"revoked token", "Bearer " + plain},
		{"unknown token", "Bearer sl_" + randomToken()},
		{"token with a character more", "Bearer " + plain + "x"},
		{"token without the prefix", "Bearer " + strings.TrimPrefix(plain, "sl_")},
		{"empty bearer", "Bearer "},
		{"ten-thousand-character token", "Bearer sl_" + strings.Repeat("a", 10000)},
		{"basic auth", "Basic dGluYUBleGFtcGxlLmNvbTp2aW9sZXQta2V0dGxlLTE5ODQ="},
	}
	for _, b := range bad {
		t.Run(b.rule, func(t *testing.T) {
			res, body := rawDo(a, "GET", a.url(routenames.APIMe), nil, "Authorization", b.header)
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET /api/v1/me with %s: %d, want 401\n%s", b.rule, res.StatusCode, snippet(body))
			}
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != apperr.EUNAUTHORIZED || e.Error.Message == "" {
				t.Errorf("GET /api/v1/me with %s: body %s, want {\"error\":{\"code\":%q,...}}", b.rule, snippet(body), apperr.EUNAUTHORIZED)
			}
			must(t, !strings.Contains(body, u.Email), "a bad token shows the user")
		})
	}
	t.Run("a token does not open pages", func(t *testing.T) {
		res, _ := rawDo(a, "GET", a.url(routenames.AccountShow), nil, "Authorization", "Bearer "+plain)
		must(t, res.StatusCode == http.StatusSeeOther, "GET /account with a bearer token: %d, want 303 to log in", res.StatusCode)
	})
	tokens, _ = a.db.APITokensOf(ctx, u.ID)
	must(t, len(tokens) == 1 && tokens[0].RevokedAt != nil, "the token is not revoked: %+v", tokens)
}

// assertThrottled asserts a throttled login's answer: 429, a Retry-After within
// the window, a clear message, and no session.
func assertThrottled(t *testing.T, ac *actor, res *http.Response, body string) {
	t.Helper()
	must(t, res.StatusCode == http.StatusTooManyRequests, "login: %d, want 429\n%s", res.StatusCode, snippet(body))
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	must(t, err == nil && secs > 0 && secs <= int(accounts.LoginWindow.Seconds()), "Retry-After %q", res.Header.Get("Retry-After"))
	contains(t, body, "Too many failed attempts")
	notLoggedIn(t, ac, "after a throttled login")
}

// After 5 wrong passwords for one account, or 20 from one address, in the
// window, even the right password gets 429.
func TestLoginThrottling(t *testing.T) {
	t.Parallel()
	t.Run("five wrong passwords for one account", func(t *testing.T) {
		a := newSQLiteApp(t)
		u := mustUser(t, a.db, "thea@example.com", "Thea Throttle", false)
		other := mustUser(t, a.db, "uma@example.com", "Uma Unrelated", false)
		ac := newActor(a, "thea")
		for i, email := range []string{"thea@example.com", "THEA@example.com", "Thea@Example.com", " thea@example.com", "thea@EXAMPLE.COM"} {
			res, body := ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {email}, "password": {fmt.Sprintf("wrong-password-%d", i)}})
			must(t, res.StatusCode == http.StatusUnprocessableEntity, "wrong password %d: %d, want 422\n%s", i+1, res.StatusCode, snippet(body))
			contains(t, body, "Wrong email or password")
		}
		res, body := ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {u.Email}, "password": {testPassword}})
		assertThrottled(t, ac, res, body)
		// The throttle is per account: another one logs in from the same address.
		loggedIn(a, "uma", other)
	})

	t.Run("twenty wrong from one address across accounts", func(t *testing.T) {
		a := newSQLiteApp(t)
		u := mustUser(t, a.db, "vera@example.com", "Vera Victim", false)
		ac := newActor(a, "prober")
		for i := range accounts.MaxFailsAddress {
			// Forwarding headers are not trusted: they cannot spread the
			// attempts over made-up addresses.
			spoofed := fmt.Sprintf("203.0.113.%d", i+1)
			res, body := ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {fmt.Sprintf("probe%02d@example.com", i)}, "password": {"wrong-password"}},
				"X-Forwarded-For", spoofed, "X-Real-IP", spoofed)
			must(t, res.StatusCode == http.StatusUnprocessableEntity, "wrong login %d: %d, want 422\n%s", i+1, res.StatusCode, snippet(body))
		}
		// A fresh browser from the same address, with the right password.
		victim := newActor(a, "vera")
		res, body := victim.post(a.url(routenames.AuthLoginPost), url.Values{"email": {u.Email}, "password": {testPassword}})
		assertThrottled(t, victim, res, body)
	})
}

// roundTrip sends one request with the actor's cookies and returns the
// response as it came, without reading its Location (Go's client refuses
// some that browsers follow).
func roundTrip(t *testing.T, ac *actor, method, path string, form url.Values) *http.Response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, ac.a.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	base, _ := url.Parse(ac.a.srv.URL)
	for _, ck := range ac.c.Jar.Cookies(base) {
		req.AddCookie(ck)
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// browserTarget is where a browser goes for a Location header: it drops
// tabs and newlines and reads backslashes as slashes.
func browserTarget(loc string) string {
	loc = strings.NewReplacer("\t", "", "\r", "", "\n", "").Replace(loc)
	return strings.ReplaceAll(loc, "\\", "/")
}

// The next parameter of the login form and of the language switch never
// sends a browser to another site.
func TestAttackOpenRedirect(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	u := mustUser(t, a.db, "nora@example.com", "Nora Next", false)
	ac := newActor(a, "nora")
	nexts := []string{
		"https://evil.example/", "//evil.example/", "/\\evil.example/", "\\\\evil.example/",
		"/\t/evil.example/", "/\r\n/evil.example/", "\t//evil.example/", "javascript:alert(1)",
	}
	for _, next := range nexts {
		t.Run(fmt.Sprintf("%q", next), func(t *testing.T) {
			res := roundTrip(t, ac, "POST", a.url(routenames.AuthLoginPost), url.Values{"email": {u.Email}, "password": {testPassword}, "next": {next}, "_csrf": {ac.csrf()}})
			must(t, res.StatusCode == http.StatusSeeOther, "POST /login: %d", res.StatusCode)
			if loc := browserTarget(res.Header.Get("Location")); !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") {
				t.Errorf("POST /login with next=%q redirects to %q", next, res.Header.Get("Location"))
			}
			res = roundTrip(t, ac, "GET", a.url(routenames.LangSwitch, "en")+query("next", next), nil)
			must(t, res.StatusCode == http.StatusSeeOther, "GET /lang/en: %d", res.StatusCode)
			if loc := browserTarget(res.Header.Get("Location")); !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") {
				t.Errorf("GET /lang/en with next=%q redirects to %q", next, res.Header.Get("Location"))
			}
		})
	}
}
