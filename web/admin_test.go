package web_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/audit"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/providers"
	"suanli/routenames"
)

// matrixSuspendUser is the user the matrix's suspension rows suspend and
// restore (made on first use): no other row's actor.
func matrixSuspendUser(f *matrixFixture) []any {
	u, err := f.a.db.UserByEmail(context.Background(), "suspend-me@matrix.example")
	if err != nil {
		u = mustUser(f.a.t, f.a.db, "suspend-me@matrix.example", "Suspend Me", false)
	}
	return []any{idParam(u.ID)}
}

// matrixSuspendOrg is the organisation the matrix's suspension rows
// suspend and restore: the personal organisation of a user made for them.
func matrixSuspendOrg(f *matrixFixture) []any {
	ctx := context.Background()
	u, err := f.a.db.UserByEmail(ctx, "suspend-org@matrix.example")
	if err != nil {
		u = mustUser(f.a.t, f.a.db, "suspend-org@matrix.example", "Suspend Org", false)
	}
	oms, err := f.a.db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(oms) == 0 {
		f.a.t.Fatalf("the organisations of %s: %v %v", u.Email, oms, err)
	}
	return []any{idParam(oms[0].Org.ID)}
}

// mustParam returns the one numeric path parameter in params.
func mustParam(t *testing.T, params []any) int64 {
	t.Helper()
	n, err := strconv.ParseInt(params[0].(string), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// matrixPayoutPeriod is the month a payout run now pays.
func matrixPayoutPeriod() string { return providers.PayoutPeriod(time.Now()) }

// inLang is the header that asks for a language.
func inLang(lang string) []string { return []string{"Accept-Language", lang} }

// seedFailedJob stores a discarded River job with an error, as River
// would after its last attempt failed.
func seedFailedJob(t *testing.T, db *models.DB, kind, msg string) {
	t.Helper()
	errs := `{"at":"2026-11-30T02:00:00Z","attempt":3,"error":"` + msg + `","trace":""}`
	var err error
	if db.Dialect == "postgres" {
		err = db.W.Exec(`INSERT INTO river_job (args, kind, max_attempts, state, errors, attempt, finalized_at)
			VALUES ('{}', ?, 3, 'discarded', ARRAY[?::jsonb], 3, now())`, kind, errs).Error
	} else {
		err = db.W.Exec(`INSERT INTO river_job (args, kind, max_attempts, state, errors, attempt, finalized_at)
			VALUES (jsonb('{}'), ?, 3, 'discarded', jsonb(?), 3, CURRENT_TIMESTAMP)`, kind, "["+errs+"]").Error
	}
	if err != nil {
		t.Fatalf("seed a failed job: %v", err)
	}
}

// seedPayout stores a pending bank payout of the first provider.
func seedPayout(t *testing.T, db *models.DB, period string, fen int64) *models.Payout {
	t.Helper()
	var p models.Provider
	if err := db.R.Order("id").First(&p).Error; err != nil {
		t.Fatal(err)
	}
	po := &models.Payout{ProviderID: p.ID, Period: period, AmountFen: fen, Method: models.PayoutBank, Status: models.PayoutPending, CreatedAt: time.Now().UTC()}
	if err := db.W.Create(po).Error; err != nil {
		t.Fatal(err)
	}
	return po
}

// Every console page renders for a platform admin, in both languages,
// with what its queues and tables hold. (Who else may see them is the
// authorisation matrix's business.)
func TestAdminConsolePagesRender(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		admin := loggedIn(a, "platform admin", mustUser(t, db, "root@suanli.example", "Pat Platform", true))
		seedFailedJob(t, db, "admin_test_kind", "boom from the admin test")
		var node models.Node
		if err := db.R.Order("id").First(&node).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Create(&models.Incident{NodeID: node.ID, Kind: "node_silent", Reasons: "missed three heartbeats", OpenedAt: time.Now().UTC()}).Error; err != nil {
			t.Fatal(err)
		}
		seedPayout(t, db, "2026-10", 123456)

		pages := []struct {
			route, query string
			wants        []string // besides the tab's name
		}{
			{routenames.AdminHome, "", []string{"missed three heartbeats", "¥1,234.56", node.Name}},
			{routenames.AdminUsers, "?q=root", []string{"root@suanli.example"}},
			{routenames.AdminOrgs, "", []string{"Pat Platform"}},
			{routenames.AdminPayouts, "", []string{"¥1,234.56", "2026-10"}},
			{routenames.AdminPayouts, "?status=failed", nil},
			{routenames.AdminOutbox, "?page=2", nil},
			{routenames.AdminJobs, "", []string{"admin_test_kind", "boom from the admin test"}},
			{routenames.AdminAudit, "?action=role.", []string{"role.changed", "root@suanli.example"}},
		}
		tabs := map[string]string{routenames.AdminHome: "admin.tab.home", routenames.AdminUsers: "admin.tab.users", routenames.AdminOrgs: "admin.tab.orgs",
			routenames.AdminPayouts: "admin.tab.payouts", routenames.AdminOutbox: "admin.tab.outbox", routenames.AdminJobs: "admin.tab.jobs", routenames.AdminAudit: "admin.tab.audit"}
		for _, lang := range locales.Supported {
			for _, p := range pages {
				res, body := admin.do("GET", a.url(p.route)+p.query, nil, inLang(lang)...)
				if res.StatusCode != http.StatusOK {
					t.Errorf("%s GET %s%s: %d\n%s", lang, a.url(p.route), p.query, res.StatusCode, snippet(body))
					continue
				}
				contains(t, body, append([]string{locales.T(lang, tabs[p.route]), locales.T(lang, "admin.title")}, p.wants...)...)
			}
		}
		// The audit page says the log is append-only, in both languages.
		for _, lang := range locales.Supported {
			_, body := admin.do("GET", a.url(routenames.AdminAudit), nil, inLang(lang)...)
			contains(t, body, locales.T(lang, "admin.audit.append_only"))
		}
	})
}

// Suspending a user stops their session, their API tokens and their
// logins, with a message; lifting it restores all three. Both are audited.
func TestAdminSuspendUser(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	rootU := mustUser(t, a.db, "root@suanli.example", "Pat Platform", true)
	admin := loggedIn(a, "platform admin", rootU)
	u := mustUser(t, a.db, "renter@beta.example", "Rita Renter", false)
	renter := loggedIn(a, "renter", u)
	plain, _, err := (&accounts.Service{DB: a.db}).CreateAPIToken(ctx, u, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	isSuspended := func() bool {
		got, err := a.db.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.SuspendedAt != nil
	}
	suspendURL := a.url(routenames.AdminUsersSuspend, idParam(u.ID))

	t.Run("bad input shows a message and changes nothing", func(t *testing.T) {
		res, body := admin.post(suspendURL, url.Values{"reason": {"  "}, "q": {"renter"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "no reason: %d", res.StatusCode)
		contains(t, body, "Give a reason for the suspension.", "renter@beta.example")
		res, body = admin.post(a.url(routenames.AdminUsersSuspend, idParam(rootU.ID)), url.Values{"reason": {"testing"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "suspending oneself: %d", res.StatusCode)
		contains(t, body, "You cannot suspend yourself.")
		res, _ = admin.post(a.url(routenames.AdminUsersSuspend, "999999"), url.Values{"reason": {"ghost"}})
		must(t, res.StatusCode == http.StatusNotFound, "a user that does not exist: %d", res.StatusCode)
		res, _ = admin.post(a.url(routenames.AdminUsersSuspend, "abc"), url.Values{"reason": {"ghost"}})
		must(t, res.StatusCode == http.StatusNotFound, "a user id that is no number: %d", res.StatusCode)
		must(t, !isSuspended(), "a refused suspension suspended the user")
	})

	t.Run("suspended: session, API token and login refused", func(t *testing.T) {
		res, body := admin.post(suspendURL, url.Values{"reason": {"chargeback fraud"}, "q": {"renter"}})
		must(t, res.StatusCode == http.StatusSeeOther, "suspend: %d %s", res.StatusCode, snippet(body))
		must(t, isSuspended(), "the user is not suspended")
		res, body = admin.do("GET", res.Header.Get("Location"), nil)
		must(t, res.StatusCode == 200, "after suspending: %d", res.StatusCode)
		contains(t, body, "User suspended", "Suspended since")

		res, body = renter.do("GET", a.url(routenames.AccountShow), nil)
		must(t, res.StatusCode == http.StatusForbidden, "the suspended user's session on /account: %d", res.StatusCode)
		contains(t, body, "This account is suspended")
		res, body = renter.do("GET", a.url(routenames.APIMe), nil)
		must(t, res.StatusCode == http.StatusForbidden, "the suspended user's session on the API: %d %s", res.StatusCode, body)
		// Public pages still answer, as to anyone logged out.
		res, _ = renter.do("GET", a.url(routenames.OffersList), nil)
		must(t, res.StatusCode == http.StatusOK, "a public page for the suspended user: %d", res.StatusCode)

		res, body = rawDo(a, "GET", a.url(routenames.APIMe), nil, "Authorization", "Bearer "+plain)
		must(t, res.StatusCode == http.StatusForbidden, "the suspended user's API token: %d %s", res.StatusCode, body)
		contains(t, body, `"code":"forbidden"`, "suspended")

		fresh := newActor(a, "login while suspended")
		res, body = fresh.post(a.url(routenames.AuthLoginPost), url.Values{"email": {u.Email}, "password": {testPassword}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "login while suspended: %d", res.StatusCode)
		contains(t, body, "This account is suspended")
	})

	t.Run("lifted: everything works again", func(t *testing.T) {
		res, _ := admin.post(a.url(routenames.AdminUsersUnsuspend, idParam(u.ID)), url.Values{"reason": {"resolved"}})
		must(t, res.StatusCode == http.StatusSeeOther, "unsuspend: %d", res.StatusCode)
		must(t, !isSuspended(), "the user is still suspended")
		res, _ = renter.do("GET", a.url(routenames.AccountShow), nil)
		must(t, res.StatusCode == http.StatusOK, "the session after the suspension was lifted: %d", res.StatusCode)
		res, _ = rawDo(a, "GET", a.url(routenames.APIMe), nil, "Authorization", "Bearer "+plain)
		must(t, res.StatusCode == http.StatusOK, "the API token after the suspension was lifted: %d", res.StatusCode)
		loggedIn(a, "login after the suspension", u)
	})

	t.Run("audited on the page and in the CSV", func(t *testing.T) {
		q := "?subject=user:" + idParam(u.ID)
		res, body := admin.do("GET", a.url(routenames.AdminAudit)+q, nil)
		must(t, res.StatusCode == http.StatusOK, "audit page: %d", res.StatusCode)
		contains(t, body, "user.suspended", "user.unsuspended", "chargeback fraud", "root@suanli.example", "2 found")
		must(t, strings.Index(body, "user.unsuspended") < strings.Index(body, "user.suspended"), "the audit log is not newest first")
		_, body = admin.do("GET", a.url(routenames.AdminAudit)+"?actor=root@suanli.example&action=user.", nil)
		contains(t, body, "2 found")
		_, body = admin.do("GET", a.url(routenames.AdminAudit)+"?actor=nobody@nowhere.example", nil)
		contains(t, body, "0 found")
		_, body = admin.do("GET", a.url(routenames.AdminAudit)+"?actor=system&action=user.", nil)
		contains(t, body, "0 found")

		res, csvBody := admin.do("GET", a.url(routenames.AdminAuditCSV)+q, nil)
		must(t, res.StatusCode == http.StatusOK, "audit CSV: %d", res.StatusCode)
		must(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv"), "audit CSV type %q", res.Header.Get("Content-Type"))
		must(t, strings.HasPrefix(csvBody, "\xEF\xBB\xBFid,time_asia_shanghai,"), "the CSV does not start with a BOM and its header: %q", snippet(csvBody))
		contains(t, csvBody, "user.suspended", "user.unsuspended", "chargeback fraud", "root@suanli.example")
		must(t, strings.Count(csvBody, "\n") == 3, "CSV lines: %d, want a header and 2 entries\n%s", strings.Count(csvBody, "\n"), csvBody)
	})

	t.Run("bad filters show a message", func(t *testing.T) {
		res, body := admin.do("GET", a.url(routenames.AdminAudit)+"?from=yesterday&actor=x%27y", nil)
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "bad audit filters: %d", res.StatusCode)
		contains(t, body, "Use a date like", "A user id, an email address")
		res, _ = admin.do("GET", a.url(routenames.AdminAuditCSV)+"?to=2026-13-45", nil)
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "bad CSV filter: %d", res.StatusCode)
		res, _ = admin.do("GET", a.url(routenames.AdminAudit)+"?from=2026-01-01&to=2026-01-31&page=-3", nil)
		must(t, res.StatusCode == http.StatusOK, "good dates, silly page: %d", res.StatusCode)
	})
}

// A suspended organisation may not rent or top up; lifting it restores.
func TestAdminSuspendOrg(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	admin := loggedIn(a, "platform admin", mustUser(t, a.db, "root@suanli.example", "Pat Platform", true))
	u := mustUser(t, a.db, "owner@beta.example", "Beta Owner", false)
	owner := loggedIn(a, "owner", u)
	oms, err := a.db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(oms) != 1 {
		t.Fatalf("the owner's organisations: %v %v", oms, err)
	}
	org := oms[0].Org.ID
	var offer models.Offer
	if err := a.db.R.Where("status = ?", models.OfferListed).Order("id").First(&offer).Error; err != nil {
		t.Fatal(err)
	}
	topups := func() int {
		ts, err := a.db.TopupsOf(ctx, org, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(ts)
	}

	res, body := admin.post(a.url(routenames.AdminOrgsSuspend, idParam(org)), url.Values{"reason": {""}})
	must(t, res.StatusCode == http.StatusUnprocessableEntity, "suspending without a reason: %d", res.StatusCode)
	contains(t, body, "Give a reason for the suspension.")
	res, _ = admin.post(a.url(routenames.AdminOrgsSuspend, idParam(org)), url.Values{"reason": {"unpaid invoices"}})
	must(t, res.StatusCode == http.StatusSeeOther, "suspend: %d", res.StatusCode)

	res, body = owner.post(a.url(routenames.WalletTopup, idParam(org)), url.Values{"amount": {"100"}, "method": {models.MethodBank}})
	must(t, res.StatusCode == http.StatusForbidden, "top-up of a suspended organisation: %d", res.StatusCode)
	contains(t, body, "This organisation is suspended")
	res, body = owner.post(a.url(routenames.RentalsCreate, idParam(offer.ID)), url.Values{"org_id": {idParam(org)}, "gpus": {"1"}, "term": {"on_demand"},
		"sla": {"standard"}, "ssh_public_key": {testSSHKey(t)}})
	must(t, res.StatusCode >= 400 && res.StatusCode < 500, "renting with a suspended organisation: %d", res.StatusCode)
	contains(t, body, "This organisation is suspended")
	res, body = owner.postJSON(a.url(routenames.APIRentalsCreate), `{"offer_id":`+idParam(offer.ID)+`,"gpus":1,"org_id":`+idParam(org)+`,"ssh_public_key":"`+testSSHKey(t)+`"}`)
	must(t, res.StatusCode == http.StatusForbidden, "API rent with a suspended organisation: %d %s", res.StatusCode, body)
	contains(t, body, "suspended")
	must(t, rentalsOf(t, a.db, org) == 0 && topups() == 0, "a suspended organisation rented or topped up")
	_, body = admin.do("GET", a.url(routenames.AdminOrgs)+"?q=beta+owner", nil)
	contains(t, body, "Suspended since", "1 found")

	res, _ = admin.post(a.url(routenames.AdminOrgsUnsuspend, idParam(org)), nil)
	must(t, res.StatusCode == http.StatusSeeOther, "unsuspend: %d", res.StatusCode)
	res, _ = owner.post(a.url(routenames.WalletTopup, idParam(org)), url.Values{"amount": {"100"}, "method": {models.MethodBank}})
	must(t, res.StatusCode == http.StatusSeeOther, "top-up after the suspension was lifted: %d", res.StatusCode)
	must(t, topups() == 1, "top-ups after the suspension was lifted: %d", topups())

	_, body = admin.do("GET", a.url(routenames.AdminAudit)+"?subject=org:"+idParam(org), nil)
	contains(t, body, "org.suspended", "org.unsuspended", "unpaid invoices")
}

// Searching users by email or name and organisations by name; LIKE's
// wildcards in a search are plain characters.
func TestAdminSearch(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	admin := loggedIn(a, "platform admin", mustUser(t, a.db, "root@suanli.example", "Pat Platform", true))
	mustUser(t, a.db, "alice@alpha.example", "Alice Anders", false)
	mustUser(t, a.db, "bob@beta.example", "Bob Brown", false)
	cases := []struct {
		route, q      string
		want, wantNot []string
		count         string
	}{
		{routenames.AdminUsers, "ALPHA", []string{"alice@alpha.example"}, []string{"bob@beta.example"}, "1 found"},
		{routenames.AdminUsers, "bob brown", []string{"bob@beta.example"}, []string{"alice@alpha.example"}, "1 found"},
		{routenames.AdminUsers, "%", nil, []string{"alice@alpha.example", "bob@beta.example"}, "0 found"},
		{routenames.AdminUsers, "_", nil, []string{"alice@alpha.example"}, "0 found"},
		{routenames.AdminUsers, "", []string{"alice@alpha.example", "bob@beta.example", "root@suanli.example"}, nil, "3 found"},
		{routenames.AdminOrgs, "alice", []string{"Alice Anders"}, []string{"Bob Brown"}, "1 found"},
		{routenames.AdminOrgs, strings.Repeat("x", 5000), nil, []string{"Alice Anders"}, "0 found"},
	}
	for _, c := range cases {
		res, body := admin.do("GET", a.url(c.route)+"?q="+url.QueryEscape(c.q), nil)
		must(t, res.StatusCode == http.StatusOK, "%s q=%q: %d", c.route, c.q, res.StatusCode)
		contains(t, body, append(c.want, c.count)...)
		for _, w := range c.wantNot {
			if strings.Contains(body, w) {
				t.Errorf("%s q=%q shows %q", c.route, c.q, w)
			}
		}
	}
	res, _ := admin.do("GET", a.url(routenames.AdminUsers)+"?page=abc", nil)
	must(t, res.StatusCode == http.StatusOK, "a bad page: %d", res.StatusCode)
	res, body := admin.do("GET", a.url(routenames.AdminUsers)+"?q=%ff%fe", nil)
	must(t, refused(res.StatusCode, body), "a search that is not UTF-8: %d, want 400 malformed", res.StatusCode)
}

// Marking a bank payout paid needs its bank reference; failing one needs
// a reason; a bad month is refused; each shows its message and changes nothing.
func TestAdminPayouts(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	admin := loggedIn(a, "platform admin", mustUser(t, a.db, "root@suanli.example", "Pat Platform", true))
	po := seedPayout(t, a.db, "2026-10", 880000)
	status := func(id int64) *models.Payout {
		p, err := ledger.PayoutByID(ctx, a.db, id)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	res, body := admin.post(a.url(routenames.AdminPayoutsPaid, idParam(po.ID)), url.Values{"bank_reference": {"   "}})
	must(t, res.StatusCode == http.StatusUnprocessableEntity, "mark paid without a reference: %d", res.StatusCode)
	contains(t, body, html.EscapeString(locales.T(locales.EN, "err.bank_reference_required")), `id="err-bank_reference-`+idParam(po.ID)+`"`)
	must(t, status(po.ID).Status == models.PayoutPending, "a refused mark-paid changed the payout")

	res, body = admin.post(a.url(routenames.AdminPayoutsFailed, idParam(po.ID)), url.Values{"reason": {""}})
	must(t, res.StatusCode == http.StatusUnprocessableEntity, "mark failed without a reason: %d", res.StatusCode)
	contains(t, body, html.EscapeString(locales.T(locales.EN, "err.payout_reason_required")))
	must(t, status(po.ID).Status == models.PayoutPending, "a refused mark-failed changed the payout")

	res, body = admin.post(a.url(routenames.AdminPayoutsPaid, idParam(po.ID)), url.Values{"bank_reference": {"ICBC\x00-1"}})
	must(t, refused(res.StatusCode, body), "mark paid with a NUL byte: %d, want 400 malformed", res.StatusCode)
	must(t, status(po.ID).Status == models.PayoutPending, "a refused mark-paid changed the payout")

	res, body = admin.post(a.url(routenames.AdminPayoutsRun), url.Values{"period": {"2099-13"}})
	must(t, res.StatusCode == http.StatusUnprocessableEntity, "a run for a bad month: %d", res.StatusCode)
	contains(t, body, html.EscapeString(locales.T(locales.EN, "err.payout_period")))

	res, _ = admin.post(a.url(routenames.AdminPayoutsPaid, idParam(po.ID)), url.Values{"bank_reference": {"ICBC-20261105-0001"}})
	must(t, res.StatusCode == http.StatusSeeOther, "mark paid: %d", res.StatusCode)
	p := status(po.ID)
	must(t, p.Status == models.PayoutPaid && p.BankReference == "ICBC-20261105-0001", "after mark paid: %+v", p)
	// Twice: nothing changes, and the admin is told.
	res, _ = admin.post(a.url(routenames.AdminPayoutsPaid, idParam(po.ID)), url.Values{"bank_reference": {"OTHER"}})
	must(t, res.StatusCode == http.StatusSeeOther, "mark paid twice: %d", res.StatusCode)
	_, body = admin.do("GET", res.Header.Get("Location"), nil)
	contains(t, body, "is no longer pending")
	must(t, status(po.ID).BankReference == "ICBC-20261105-0001", "marking paid twice changed the reference")

	_, body = admin.do("GET", a.url(routenames.AdminAudit)+"?action=payout.", nil)
	contains(t, body, "payout.paid", "ICBC-20261105-0001", "¥8,800.00")

	// The run for last month pays nobody here (no demo provider has an
	// organisation) and may be repeated.
	for range 2 {
		res, _ = admin.post(a.url(routenames.AdminPayoutsRun), url.Values{"period": {matrixPayoutPeriod()}})
		must(t, res.StatusCode == http.StatusSeeOther, "payout run: %d", res.StatusCode)
	}
}

// No search or filter of the console is a server error, whatever its
// bytes: PostgreSQL refuses a NUL byte (and bytes that are not UTF-8) in
// text, so such a filter is refused as input, with a 400.
func TestAdminFiltersTakeAnyBytes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		admin := loggedIn(a, "platform admin", mustUser(t, db, "root@suanli.example", "Pat Platform", true))
		for _, c := range []struct{ route, query string }{
			{routenames.AdminUsers, "?q=ro%00ot"},
			{routenames.AdminOrgs, "?q=Pat%00"},
			{routenames.AdminAudit, "?action=role.%00"},
			{routenames.AdminAudit, "?subject=org:%001"},
			{routenames.AdminAudit, "?actor=root%00@suanli.example"},
			{routenames.AdminAuditCSV, "?action=%00role.&subject=%ff"},
		} {
			res, body := admin.do("GET", a.url(c.route)+c.query, nil)
			must(t, refused(res.StatusCode, body), "GET %s%s: %d, want 400 malformed\n%s", a.url(c.route), c.query, res.StatusCode, snippet(body))
		}
		_, body := admin.do("GET", a.url(routenames.AdminUsers)+"?q=root", nil)
		contains(t, body, "root@suanli.example", "1 found")
	})
}

// stripeDown is Stripe Connect not answering: every call is a network
// error, which a retry may cure.
type stripeDown struct{}

func (stripeDown) CreateExpressAccount(context.Context, string, string) (string, error) {
	return "", errors.New("dial tcp: connection refused")
}
func (stripeDown) AccountLink(context.Context, string, string, string) (string, error) {
	return "", errors.New("dial tcp: connection refused")
}
func (stripeDown) Account(context.Context, string) (bool, bool, error) {
	return false, false, errors.New("dial tcp: connection refused")
}
func (stripeDown) Transfer(context.Context, string, int64, string, int64) (string, error) {
	return "", errors.New("dial tcp: connection refused")
}

// With Stripe down, a payout run from the console records the payouts and
// says that some could not be paid; running again, as it says, says the
// same (the transfer waits for Stripe) rather than showing an error page.
func TestAdminPayoutRunWithStripeDown(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newAppWith(t, db, func(h *handlers.Handler) { h.Payouts.Connect = stripeDown{} })
		ctx := context.Background()
		admin := loggedIn(a, "platform admin", mustUser(t, db, "root@suanli.example", "Pat Platform", true))
		acc, err := (&providers.Service{DB: db}).CreateVerified(ctx, mustUser(t, db, "owner@provider.example", "Owner", false), "Tianfu GPU")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			if err := ledger.SetProviderConnect(tx, acc.Provider.ID, "acct_1", true, true); err != nil {
				return err
			}
			return ledger.Post(tx, &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: "test earnings", CreatedAt: time.Now()},
				ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -10_000},
				ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: acc.Provider.ID, AmountFen: 8_800},
				ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: 1_200})
		}); err != nil {
			t.Fatal(err)
		}
		period := matrixPayoutPeriod()
		for i, created := range []int{1, 0} {
			res, body := admin.post(a.url(routenames.AdminPayoutsRun), url.Values{"period": {period}})
			must(t, res.StatusCode == http.StatusSeeOther, "run %d with Stripe down: %d\n%s", i+1, res.StatusCode, snippet(body))
			_, body = admin.do("GET", res.Header.Get("Location"), nil)
			contains(t, body, html.EscapeString(locales.T(locales.EN, "admin.payouts.run_partial", created, period)))
		}
		ps, err := ledger.PayoutsOfProvider(ctx, db, acc.Provider.ID)
		must(t, err == nil && len(ps) == 1 && ps[0].Status == models.PayoutPending && ps[0].Method == models.PayoutStripe,
			"the payout after two runs with Stripe down: %+v %v", ps, err)
	})
}

// The audit CSV: text cells that a spreadsheet would run as a formula
// start with an apostrophe; amounts keep their sign, unescaped.
func TestAdminAuditCSVCells(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	admin := loggedIn(a, "platform admin", mustUser(t, a.db, "root@suanli.example", "Pat Platform", true))
	for _, e := range []struct {
		detail string
		fen    int64
	}{{"=HYPERLINK(\"http://evil.example\")", -150}, {"\tcmd", 4000}, {"plain — 中文", 0}} {
		if err := a.db.Tx(ctx, func(tx *gorm.DB) error {
			return audit.Record(ctx, tx, audit.WalletCredit, "org:777", audit.Fen(e.fen), e.detail)
		}); err != nil {
			t.Fatal(err)
		}
	}
	res, body := admin.do("GET", a.url(routenames.AdminAuditCSV)+"?subject=org:777", nil)
	must(t, res.StatusCode == http.StatusOK, "audit CSV: %d", res.StatusCode)
	must(t, strings.HasPrefix(res.Header.Get("Content-Disposition"), `attachment; filename="suanli-audit-`), "disposition %q", res.Header.Get("Content-Disposition"))
	contains(t, body, `,-1.5,"'=HYPERLINK(""http://evil.example"")"`, ",40,'\tcmd", ",0,plain — 中文")
}

// The hub lists the bank payouts waiting for a reference however many
// Stripe payouts are pending before them (those finish on their own).
func TestAdminHubBankPayoutsBehindStripeOnes(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	admin := loggedIn(a, "platform admin", mustUser(t, a.db, "root@suanli.example", "Pat Platform", true))
	bank := seedPayout(t, a.db, "2026-10", 123456)
	if err := a.db.W.Model(bank).Update("created_at", time.Now().UTC().Add(-time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		po := &models.Payout{ProviderID: bank.ProviderID, Period: fmt.Sprintf("%04d-01", 2100+i), AmountFen: 100, Method: models.PayoutStripe,
			Status: models.PayoutPending, CreatedAt: time.Now().UTC()}
		if err := a.db.W.Create(po).Error; err != nil {
			t.Fatal(err)
		}
	}
	res, body := admin.do("GET", a.url(routenames.AdminHome), nil)
	must(t, res.StatusCode == http.StatusOK, "hub: %d", res.StatusCode)
	contains(t, body, "¥1,234.56", html.EscapeString(locales.T(locales.EN, "admin.payouts_waiting", 1)))
}
