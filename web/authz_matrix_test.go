package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/billing"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/routenames"
)

// testPassword is every fixture user's password (long enough, not common).
const testPassword = "violet-kettle-1984"

// actor is one person's browser: its own cookie jar, logged in or not.
// Every request asks for English, so messages can be asserted.
type actor struct {
	name string
	a    *app
	c    *http.Client
	user *models.User
}

// newActor opens a browser on the login page, which hands it the
// suanli_csrf cookie.
func newActor(a *app, name string) *actor {
	a.t.Helper()
	jar, _ := cookiejar.New(nil)
	ac := &actor{name: name, a: a, c: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	res, _ := ac.do("GET", a.url(routenames.AuthLogin), nil)
	must(a.t, res.StatusCode == 200 && ac.csrf() != "", "%s: GET /login: %d, csrf cookie %q", name, res.StatusCode, ac.csrf())
	return ac
}

// loggedIn returns an actor logged in as u through POST /login.
func loggedIn(a *app, name string, u *models.User) *actor {
	a.t.Helper()
	ac := newActor(a, name)
	res, body := ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {u.Email}, "password": {testPassword}})
	must(a.t, res.StatusCode == http.StatusSeeOther, "%s: log in: %d %s", name, res.StatusCode, snippet(body))
	ac.user = u
	return ac
}

// cookie returns the value of the actor's cookie with the name, or "".
func (ac *actor) cookie(name string) string {
	u, _ := url.Parse(ac.a.srv.URL)
	for _, ck := range ac.c.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// csrf returns the actor's CSRF token (the double-submit cookie).
func (ac *actor) csrf() string { return ac.cookie("suanli_csrf") }

// do sends a request as it is: form (if not nil) is the urlencoded body;
// headers are name, value pairs.
func (ac *actor) do(method, path string, form url.Values, headers ...string) (*http.Response, string) {
	ac.a.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, ac.a.srv.URL+path, body)
	if err != nil {
		ac.a.t.Fatal(err)
	}
	req.Header.Set("Accept-Language", "en")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := ac.c.Do(req)
	if err != nil {
		ac.a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// post sends a form with the actor's CSRF token, as the pages' forms do.
func (ac *actor) post(path string, form url.Values, headers ...string) (*http.Response, string) {
	ac.a.t.Helper()
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set("_csrf", ac.csrf())
	return ac.do("POST", path, f, headers...)
}

// postJSON sends a JSON body with the actor's cookies and CSRF token, as
// a script on the site's pages would.
func (ac *actor) postJSON(path, body string) (*http.Response, string) {
	ac.a.t.Helper()
	return ac.sendJSON("POST", path, body)
}

// sendJSON sends a JSON body (or none) with the actor's CSRF token.
func (ac *actor) sendJSON(method, path, body string) (*http.Response, string) {
	ac.a.t.Helper()
	req, err := http.NewRequest(method, ac.a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		ac.a.t.Fatal(err)
	}
	req.Header.Set("Accept-Language", "en")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", ac.csrf())
	res, err := ac.c.Do(req)
	if err != nil {
		ac.a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// mustUser creates a user with a verified email, a personal organisation
// and testPassword, as `suanli admin create-user` does.
func mustUser(t *testing.T, db *models.DB, email, name string, platformAdmin bool) *models.User {
	t.Helper()
	u, err := (&accounts.Service{DB: db}).CreateUser(context.Background(), email, testPassword, name, platformAdmin)
	if err != nil {
		t.Fatalf("create user %s: %v", email, err)
	}
	return u
}

// mustMember adds u to the organisation with the role.
func mustMember(t *testing.T, db *models.DB, orgID int64, u *models.User, role string) {
	t.Helper()
	err := db.Tx(context.Background(), func(tx *gorm.DB) error {
		return models.AddMember(tx, &models.Membership{OrgID: orgID, UserID: u.ID, Role: role, CreatedAt: db.Now().UTC()})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mustRental stores a pending rental of the offer for the organisation,
// rented by the user, as rentals.Service.Rent would before provisioning
// (no node yet, so stopping it settles at once).
func mustRental(t *testing.T, db *models.DB, orgID, userID int64, o models.Offer) int64 {
	t.Helper()
	now := db.Now().UTC()
	r := &models.Rental{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, GPUs: 1, SLA: "standard", Term: "on_demand",
		Status: models.RentalPending, SSHPublicKey: testSSHKey(t), WorkspaceID: "ws-matrix-" + idParam(userID),
		PricePerGPUHourFen: o.PricePerGPUHourFen, OffpeakPct: o.OffpeakDiscountPct, CreatedAt: now, UpdatedAt: now}
	if err := db.W.Create(r).Error; err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// mustRunningRental stores an on-demand rental of one GPU of the offer
// that has run since now (no node: a change is quoted, never applied).
func mustRunningRental(t *testing.T, db *models.DB, orgID, userID int64, o models.Offer) int64 {
	t.Helper()
	now := db.Now().UTC()
	r := &models.Rental{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, GPUs: 1, SLA: "standard", Term: "on_demand",
		Status: models.RentalRunning, SSHPublicKey: testSSHKey(t), WorkspaceID: "ws-matrix-running-" + idParam(userID),
		PricePerGPUHourFen: o.PricePerGPUHourFen, OffpeakPct: o.OffpeakDiscountPct, RunningSince: &now, BilledUntil: &now, CreatedAt: now, UpdatedAt: now}
	if err := db.W.Create(r).Error; err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// mustVolume stores an active volume of the organisation in the offer's
// datacentre, made by the user.
func mustVolume(t *testing.T, db *models.DB, orgID, userID int64, o models.Offer) int64 {
	t.Helper()
	now := db.Now().UTC()
	v := &models.Volume{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, DatacenterID: o.DatacenterID, NodeID: &o.NodeID,
		Storage: models.StorageLocal, WorkspaceKey: "ws-matrix-volume", SizeGB: 10, PricePerGBMonthFen: 30, Status: models.VolumeActive,
		BilledUntil: &now, CreatedAt: now}
	if err := db.W.Create(v).Error; err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// testSSHKey returns a fresh OpenSSH public key line.
func testSSHKey(t testing.TB) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " renter@laptop"
}

// rentalsOf counts an organisation's rentals.
func rentalsOf(t *testing.T, db *models.DB, orgID int64) int64 {
	t.Helper()
	var n int64
	if err := db.R.Model(&models.Rental{}).Where("org_id = ?", orgID).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// rentalStatus reads a rental's status.
func rentalStatus(t *testing.T, db *models.DB, id int64) models.RentalStatus {
	t.Helper()
	r, err := db.RentalByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// snippet shortens a body for a failure message.
func snippet(body string) string {
	if len(body) > 300 {
		return body[:300] + "…"
	}
	return body
}

func idParam(n int64) string { return strconv.FormatInt(n, 10) }

// The actors of the matrix, in the order each row runs them: the owner
// last, because its successful removal of the member must come after every
// other cell.
const (
	asAnon = iota
	asOther
	asMember
	asOrgAdmin
	asPlatform
	asOwner
	nActors
)

var actorNames = [nActors]string{"anonymous", "member of another org", "member", "admin of the org", "platform admin", "owner"}

// matrixFixture is org A (a lab, so budget routes apply) with an owner, an
// admin and a member; a user whose only organisation is B; a platform
// admin; and a logged-in browser for each, plus an anonymous one.
type matrixFixture struct {
	a           *app
	orgA        *models.Org
	memberUser  *models.User
	memberToken int64 // an API token of the member
	topup       int64 // a pending bank transfer into org A's wallet
	// Two pending rentals of org A: one the owner rented (the member may
	// see it but not stop it) and one the member rented.
	ownerRental, memberRental int64
	// A running on-demand rental of one GPU that the owner rented: it may
	// be switched or resized.
	runningRental int64
	// An active volume of org A that the owner made.
	volume int64
	offer  int64 // a listed demo offer
	actors [nActors]*actor
}

// orgAName is distinctive, so a response can be searched for it.
const orgAName = "Zephyr Quantum Lab"

func newMatrixFixture(t *testing.T) *matrixFixture {
	t.Helper()
	a := newSQLiteApp(t)
	ctx := context.Background()
	svc := &accounts.Service{DB: a.db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
	ownerU := mustUser(t, a.db, "owner@pku.edu.cn", "Olga Owner", false)
	adminU := mustUser(t, a.db, "admin@pku.edu.cn", "Ada Admin", false)
	memberU := mustUser(t, a.db, "member@pku.edu.cn", "Mo Member", false)
	otherU := mustUser(t, a.db, "bob@beta.example", "Bob Beta", false)
	platformU := mustUser(t, a.db, "root@suanli.example", "Pat Platform", true)
	org, err := svc.ApplyLab(ctx, ownerU, accounts.LabApplication{
		Institution: "Peking University", LabName: orgAName, Supervisor: "Prof. Zhang",
		EmailDomain: "pku.edu.cn", EduEmail: "owner@pku.edu.cn",
	})
	if err != nil {
		t.Fatal(err)
	}
	mustMember(t, a.db, org.ID, adminU, models.RoleAdmin)
	mustMember(t, a.db, org.ID, memberU, models.RoleMember)
	_, tok, err := svc.CreateAPIToken(ctx, memberU, "member's laptop")
	if err != nil {
		t.Fatal(err)
	}
	w := &billing.Wallet{DB: a.db}
	topup, _, err := w.StartTopup(ctx, ownerU, org.ID, 10000, models.MethodBank, "en")
	if err != nil {
		t.Fatal(err)
	}
	f := &matrixFixture{a: a, orgA: org, memberUser: memberU, memberToken: tok.ID, topup: topup.ID}
	var offer models.Offer
	if err := a.db.R.Where("status = ?", models.OfferListed).Order("id").First(&offer).Error; err != nil {
		t.Fatal(err)
	}
	f.offer = offer.ID
	f.ownerRental = mustRental(t, a.db, org.ID, ownerU.ID, offer)
	f.memberRental = mustRental(t, a.db, org.ID, memberU.ID, offer)
	var multi models.Offer
	if err := a.db.R.Where("status = ? AND max_gpus >= 2", models.OfferListed).Order("id").First(&multi).Error; err != nil {
		t.Fatal(err)
	}
	f.runningRental = mustRunningRental(t, a.db, org.ID, ownerU.ID, multi)
	f.volume = mustVolume(t, a.db, org.ID, ownerU.ID, offer)
	f.actors[asAnon] = newActor(a, actorNames[asAnon])
	for i, u := range map[int]*models.User{asOther: otherU, asMember: memberU, asOrgAdmin: adminU, asPlatform: platformU, asOwner: ownerU} {
		f.actors[i] = loggedIn(a, actorNames[i], u)
	}
	return f
}

// expect is one row's expected status per actor.
type expect struct{ Anon, Other, Member, Admin, Platform, Owner int }

func (e expect) of(actor int) int {
	return [nActors]int{e.Anon, e.Other, e.Member, e.Admin, e.Platform, e.Owner}[actor]
}

// matrixRow is one protected route: how to call it, and what each actor gets.
type matrixRow struct {
	route  string                               // the route's name in the route table
	params func(f *matrixFixture) []any         // path parameters, in order
	query  string                               // appended to the path
	form   url.Values                           // the body of a POST (the CSRF token is added)
	json   func(f *matrixFixture) string        // or a JSON body (the CSRF token goes in X-CSRF-Token)
	want   expect                               //
	after  func(t *testing.T, f *matrixFixture) // checks the effect of the successful cells
}

func orgAParam(f *matrixFixture) []any         { return []any{idParam(f.orgA.ID)} }
func offerParam(f *matrixFixture) []any        { return []any{idParam(f.offer)} }
func ownerRentalParam(f *matrixFixture) []any  { return []any{idParam(f.ownerRental)} }
func memberRentalParam(f *matrixFixture) []any { return []any{idParam(f.memberRental)} }
func runningRentalParam(f *matrixFixture) []any {
	return []any{idParam(f.runningRental)}
}

// readyBenchNode marks the offer's node and its GPUs healthy and free, as
// its agent's heartbeats would, and returns its id.
func readyBenchNode(f *matrixFixture) []any {
	var o models.Offer
	if err := f.a.db.R.First(&o, f.offer).Error; err != nil {
		f.a.t.Fatal(err)
	}
	f.a.db.W.Model(&models.Node{}).Where("id = ?", o.NodeID).Update("health", models.NodeHealthy)
	f.a.db.W.Model(&models.GPU{}).Where("node_id = ?", o.NodeID).Updates(map[string]any{"health": models.GPUHealthy, "state": models.GPUFree})
	return []any{idParam(o.NodeID)}
}

// Common expectations.
var (
	// Any logged-in user may: pages and actions on the user's own things.
	anyUserPage = expect{Anon: 303, Other: 200, Member: 200, Admin: 200, Platform: 200, Owner: 200}
	anyUserPost = expect{Anon: 401, Other: 303, Member: 303, Admin: 303, Platform: 303, Owner: 303}
	// Admins or owners of org A may; its members are forbidden; everyone
	// else, platform admins included, is told it does not exist.
	orgAdminPost = expect{Anon: 401, Other: 404, Member: 403, Admin: 303, Platform: 404, Owner: 303}
	// Platform admins only.
	platformPage = expect{Anon: 303, Other: 403, Member: 403, Admin: 403, Platform: 200, Owner: 403}
	platformPost = expect{Anon: 401, Other: 403, Member: 403, Admin: 403, Platform: 303, Owner: 403}
	// Working in org A's running rental without a container: its renter
	// and admins are told it cannot open (409), its members may not (403).
	workspaceGet = expect{Anon: 303, Other: 404, Member: 403, Admin: 409, Platform: 404, Owner: 409}
)

// matrix lists every protected route. Rows run in this order, and the
// destructive one (removing the member) comes last.
var matrix = []matrixRow{
	{route: routenames.AccountShow, want: anyUserPage},
	{route: routenames.APIMe, want: expect{Anon: 401, Other: 200, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.OrgsShow, params: orgAParam, want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.LabsApply, want: anyUserPage},
	// A bogus link is a 400 for anyone logged in; what matters here is who gets past the guard.
	{route: routenames.LabsConfirm, query: "?token=not-a-real-token", want: expect{Anon: 303, Other: 400, Member: 400, Admin: 400, Platform: 400, Owner: 400}},
	{route: routenames.InvitationsAccept, query: "?token=not-a-real-token", want: anyUserPage},
	{route: routenames.AdminHome, want: platformPage},
	{route: routenames.AdminUsers, query: "?q=pku", want: platformPage},
	{route: routenames.AdminOrgs, query: "?q=zephyr", want: platformPage},
	{route: routenames.AdminPayouts, query: "?status=pending", want: platformPage},
	{route: routenames.AdminOutbox, want: platformPage},
	{route: routenames.AdminJobs, want: platformPage},
	{route: routenames.AdminAudit, query: "?action=topup.", want: platformPage},
	{route: routenames.AdminAuditCSV, want: platformPage},
	// Real-name verification: each user's own (bad input is past the
	// guard: 422; nothing pending to resend: 409); the review and the SMS
	// outbox are the platform's (the member has no identity: 404 past it).
	{route: routenames.RealNameShow, want: anyUserPage},
	{route: routenames.RealNameStart, form: url.Values{"kind": {"individual"}}, want: expect{Anon: 401, Other: 422, Member: 422, Admin: 422, Platform: 422, Owner: 422}},
	{route: routenames.RealNameConfirm, form: url.Values{"code": {"1"}}, want: expect{Anon: 401, Other: 422, Member: 422, Admin: 422, Platform: 422, Owner: 422}},
	{route: routenames.RealNameResend, want: expect{Anon: 401, Other: 409, Member: 409, Admin: 409, Platform: 409, Owner: 409}},
	{route: routenames.APIMeRealName, json: func(*matrixFixture) string { return `{"kind":"individual"}` },
		want: expect{Anon: 401, Other: 422, Member: 422, Admin: 422, Platform: 422, Owner: 422}},
	{route: routenames.APIMeRealNameConfirm, json: func(*matrixFixture) string { return `{"code":"1"}` },
		want: expect{Anon: 401, Other: 422, Member: 422, Admin: 422, Platform: 422, Owner: 422}},
	// Withdrawing: each user's own, done at once (nothing held: 303, 204).
	{route: routenames.RealNameWithdraw, form: url.Values{"confirm": {"1"}}, want: anyUserPost},
	{route: routenames.APIMeRealNameWithdraw, want: expect{Anon: 401, Other: 204, Member: 204, Admin: 204, Platform: 204, Owner: 204}},
	{route: routenames.AdminSMS, want: platformPage},
	{route: routenames.AdminRealName, params: func(f *matrixFixture) []any { return []any{idParam(f.memberUser.ID)} }, want: platformPage},
	{route: routenames.AdminRealNameReveal, params: func(f *matrixFixture) []any { return []any{idParam(f.memberUser.ID)} },
		want: expect{Anon: 401, Other: 403, Member: 403, Admin: 403, Platform: 404, Owner: 403}},
	{route: routenames.AdminRealNameReject, params: func(f *matrixFixture) []any { return []any{idParam(f.memberUser.ID)} }, form: url.Values{"reason": {"matrix"}},
		want: expect{Anon: 401, Other: 403, Member: 403, Admin: 403, Platform: 404, Owner: 403}},
	// Everyone logged in is sent to their own wallet.
	{route: routenames.WalletMine, want: expect{Anon: 303, Other: 303, Member: 303, Admin: 303, Platform: 303, Owner: 303}},
	{route: routenames.WalletShow, params: orgAParam, want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.WalletCSV, params: orgAParam, want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.TopupsShow, params: func(f *matrixFixture) []any { return []any{idParam(f.topup)} },
		want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	// Without org_id the API means the caller's personal organisation.
	{route: routenames.APIWallet, want: expect{Anon: 401, Other: 200, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIWalletLedger, want: expect{Anon: 401, Other: 200, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIWalletAlerts, want: expect{Anon: 401, Other: 200, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	// Org A's top-ups through the API: as its wallet page and top-up page.
	{route: routenames.APIWalletTopupsList, query: "?org_id=ORG_A", want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIWalletTopupsShow, params: func(f *matrixFixture) []any { return []any{idParam(f.topup)} },
		want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},

	// Rentals. These rows run while lab A still waits for review (admin.review
	// comes later), so nobody may rent with it yet.
	{route: routenames.Console, want: anyUserPage},
	{route: routenames.RentalsNew, params: offerParam, want: anyUserPage},
	// Renting with org A: its members are told the lab may not rent yet, and
	// everyone else that they may not use it (beside the field, 422); nothing
	// is rented either way.
	{route: routenames.RentalsCreate, params: offerParam,
		form: url.Values{"org_id": {"ORG_A"}, "gpus": {"1"}, "term": {"on_demand"}, "sla": {"standard"}, "ssh_public_key": {"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBX0WTRDS1bwPQDn9dBnlzyHG0fWBz2Xvjs7g2KGUVmW matrix@test"}},
		want: expect{Anon: 401, Other: 422, Member: 422, Admin: 422, Platform: 422, Owner: 422},
		after: func(t *testing.T, f *matrixFixture) {
			must(t, rentalsOf(t, f.a.db, f.orgA.ID) == 3, "org A has %d rentals after refused rent requests, want the fixture's 3", rentalsOf(t, f.a.db, f.orgA.ID))
		}},
	{route: routenames.RentalsShow, params: ownerRentalParam, want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.RentalsLive, params: ownerRentalParam, want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.RentalsEvents, params: ownerRentalParam, want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.RentalsUsage, params: ownerRentalParam, want: expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIRentalsList, query: "?org_id=ORG_A", want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIRentalsShow, params: memberRentalParam, want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIRentalsUsage, params: memberRentalParam, want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIRentalsSLA, params: ownerRentalParam, want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	// A platform admin may look but is no member: renting with org A is
	// "not found" for them as for any outsider; its members are refused while
	// the lab waits for review.
	{route: routenames.APIRentalsCreate, json: func(f *matrixFixture) string {
		return `{"offer_id":` + idParam(f.offer) + `,"gpus":1,"org_id":` + idParam(f.orgA.ID) + `,"ssh_public_key":"` + testSSHKey(f.a.t) + `"}`
	}, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 403, Platform: 404, Owner: 403},
		after: func(t *testing.T, f *matrixFixture) {
			must(t, rentalsOf(t, f.a.db, f.orgA.ID) == 3, "org A has %d rentals after refused API rent requests, want the fixture's 3", rentalsOf(t, f.a.db, f.orgA.ID))
		}},
	// A form body is not the JSON the API wants (400 is past the guard).
	{route: routenames.APIRentalsChange, params: memberRentalParam, form: url.Values{"gpus": {"2"}},
		want: expect{Anon: 401, Other: 400, Member: 400, Admin: 400, Platform: 400, Owner: 400}},
	// The renter and the organisation's admins may switch or resize a
	// rental (here: the quote for two GPUs); other members and platform
	// admins may not. A preview changes nothing.
	{route: routenames.RentalsChange, params: runningRentalParam, form: url.Values{"gpus": {"2"}},
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 200, Platform: 403, Owner: 200},
		after: func(t *testing.T, f *matrixFixture) {
			r, err := f.a.db.RentalByID(context.Background(), f.runningRental)
			must(t, err == nil && r.Status == models.RentalRunning && r.GPUs == 1, "a previewed change changed the rental: %v %s × %d", err, r.Status, r.GPUs)
		}},
	// Working in a container (Jupyter, ports, the terminal, output,
	// files, share links): the renter and the organisation's admins, on a
	// running rental with a container (this one has none: 409); other
	// members are refused; everyone else, platform admins included, is
	// told it does not exist. TestWorkspaceThroughTheTunnel covers the
	// answers past these checks, with a real container.
	{route: routenames.RentalsJupyterRoot, params: runningRentalParam, want: expect{Anon: 303, Other: 307, Member: 307, Admin: 307, Platform: 307, Owner: 307}},
	{route: routenames.RentalsJupyter, params: func(f *matrixFixture) []any { return []any{idParam(f.runningRental), "api/status"} }, want: workspaceGet},
	{route: routenames.RentalsPortRoot, params: func(f *matrixFixture) []any { return []any{idParam(f.runningRental), "6006"} },
		want: expect{Anon: 303, Other: 307, Member: 307, Admin: 307, Platform: 307, Owner: 307}},
	{route: routenames.RentalsPort, params: func(f *matrixFixture) []any { return []any{idParam(f.runningRental), "6006", ""} }, want: workspaceGet},
	{route: routenames.RentalsTerminal, params: runningRentalParam, want: workspaceGet},
	{route: routenames.RentalsTerminalSocket, params: runningRentalParam, want: workspaceGet},
	{route: routenames.RentalsLogs, params: runningRentalParam, want: workspaceGet},
	{route: routenames.RentalsFiles, params: runningRentalParam, want: workspaceGet},
	{route: routenames.RentalsFilesList, params: runningRentalParam, want: workspaceGet},
	{route: routenames.RentalsFilesDownload, params: runningRentalParam, query: "?path=x", want: workspaceGet},
	{route: routenames.RentalsFilesUpload, params: runningRentalParam, form: url.Values{"dir": {"x"}},
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 409, Platform: 404, Owner: 409}},
	// A share link of a port it never declared is refused on the field.
	{route: routenames.RentalsSharesCreate, params: runningRentalParam, form: url.Values{"port": {"6006"}, "hours": {"24"}},
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 422, Platform: 404, Owner: 422}},
	{route: routenames.RentalsSharesRevoke, params: func(f *matrixFixture) []any { return []any{idParam(f.runningRental), "999999"} },
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 404, Platform: 404, Owner: 404}},
	// The renter and the organisation's admins may change a rental's idle
	// stop, as they may stop it; other members and platform admins may not.
	{route: routenames.RentalsIdleStop, params: runningRentalParam,
		form: url.Values{"idle_stop": {"1"}, "idle_stop_below_pct": {"10"}, "idle_stop_minutes": {"30"}},
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 303, Platform: 403, Owner: 303},
		after: func(t *testing.T, f *matrixFixture) {
			r, err := f.a.db.RentalByID(context.Background(), f.runningRental)
			must(t, err == nil && r.IdleStop == models.IdleStop{BelowPct: 10, Minutes: 30}, "the idle stop set: %v %+v", err, r.IdleStop)
		}},
	{route: routenames.APIRentalsIdleStop, params: memberRentalParam, json: func(*matrixFixture) string { return `{"gpu_util_below_pct":20,"minutes":60}` },
		want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 403, Owner: 200},
		after: func(t *testing.T, f *matrixFixture) {
			r, err := f.a.db.RentalByID(context.Background(), f.memberRental)
			must(t, err == nil && r.IdleStop == models.IdleStop{BelowPct: 20, Minutes: 60}, "the idle stop set: %v %+v", err, r.IdleStop)
		}},
	// Raising a bid: the renter and the organisation's admins get as far
	// as the rental (not on a bid: refused beside the bid, 422 on the
	// page, 400 in the API); other members and platform admins may not.
	{route: routenames.RentalsBid, params: runningRentalParam, form: url.Values{"bid": {"1.00"}},
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 422, Platform: 403, Owner: 422}},
	{route: routenames.APIRentalsBid, params: memberRentalParam, json: func(*matrixFixture) string { return `{"bid_per_gpu_hour_fen":100}` },
		want: expect{Anon: 401, Other: 404, Member: 400, Admin: 400, Platform: 403, Owner: 400}},
	// The renter and the organisation's admins may stop a rental; other
	// members and platform admins may not. Stopping twice is fine.
	{route: routenames.RentalsStop, params: ownerRentalParam, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 303, Platform: 403, Owner: 303},
		after: func(t *testing.T, f *matrixFixture) {
			must(t, rentalStatus(t, f.a.db, f.ownerRental) == models.RentalStopped, "the owner's rental is %s, want stopped", rentalStatus(t, f.a.db, f.ownerRental))
		}},
	{route: routenames.APIRentalsStop, params: memberRentalParam, want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 403, Owner: 200},
		after: func(t *testing.T, f *matrixFixture) {
			must(t, rentalStatus(t, f.a.db, f.memberRental) == models.RentalStopped, "the member's rental is %s, want stopped", rentalStatus(t, f.a.db, f.memberRental))
		}},
	// Start and release as stop: the renter and the organisation's admins.
	// The stopped rental has no volume (it never ran), so it cannot start.
	{route: routenames.APIRentalsStart, params: memberRentalParam, json: func(*matrixFixture) string { return `{}` },
		want: expect{Anon: 401, Other: 404, Member: 409, Admin: 409, Platform: 403, Owner: 409}},
	{route: routenames.RentalsStart, params: memberRentalParam, want: expect{Anon: 401, Other: 404, Member: 409, Admin: 409, Platform: 403, Owner: 409}},
	{route: routenames.APIRentalsRelease, params: memberRentalParam, json: func(*matrixFixture) string { return `{"delete_volume":true}` },
		want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 403, Owner: 200},
		after: func(t *testing.T, f *matrixFixture) {
			r, err := f.a.db.RentalByID(context.Background(), f.memberRental)
			must(t, err == nil && r.ReleasedAt != nil, "the member's rental is not released: %v", err)
		}},
	{route: routenames.RentalsRelease, params: ownerRentalParam, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 303, Platform: 403, Owner: 303}},
	// Volumes: members see them; making one is renting (org A may not
	// rent yet); the member who made one or an admin deletes it.
	{route: routenames.APIVolumesList, query: "?org_id=ORG_A", want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIVolumesCreate, json: func(f *matrixFixture) string {
		return `{"offer_id":` + idParam(f.offer) + `,"size_gb":10,"org_id":` + idParam(f.orgA.ID) + `}`
	}, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 403, Platform: 404, Owner: 403}},
	{route: routenames.APIVolumesDelete, params: func(f *matrixFixture) []any { return []any{idParam(f.volume)} },
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 200, Platform: 404, Owner: 404},
		after: func(t *testing.T, f *matrixFixture) {
			var v models.Volume
			must(t, f.a.db.R.First(&v, f.volume).Error == nil && v.Status == models.VolumeDeleted, "the volume is %s, want deleted", v.Status)
		}},
	// Standing orders (web/standingorders_test.go): members see org A's;
	// placing one is renting (org A may not rent yet); the member who
	// placed one or an admin cancels it.
	{route: routenames.StandingOrders, want: anyUserPage},
	{route: routenames.StandingOrdersNotices, want: anyUserPage},
	{route: routenames.StandingOrdersCreate, form: standingOrderForm, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 403, Platform: 404, Owner: 403}},
	{route: routenames.StandingOrdersCancel, params: ownerStandingOrder, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 303, Platform: 404, Owner: 404}, after: standingOrderGone},
	{route: routenames.APIStandingOrdersList, query: "?org_id=ORG_A", want: expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}},
	{route: routenames.APIStandingOrdersCreate, json: func(f *matrixFixture) string {
		return `{"org_id":` + idParam(f.orgA.ID) + `,"filters":{"gpu":"b200","max_price_fen":100},"gpus":1,"action":"notify","expires_at":"2099-01-01T00:00:00Z"}`
	}, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 403, Platform: 404, Owner: 403}},
	{route: routenames.APIStandingOrdersDelete, params: ownerStandingOrder, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 200, Platform: 404, Owner: 404}, after: standingOrderGone},

	// The same password again: allowed, and it leaves every login working.
	{route: routenames.AccountPassword, form: url.Values{"current_password": {testPassword}, "password": {testPassword}}, want: anyUserPost},
	{route: routenames.AccountResend, want: anyUserPost},
	// Each actor logs out their own other sessions (there are none).
	{route: routenames.AccountSessionsEnd, want: anyUserPost},
	{route: routenames.TokensCreate, form: url.Values{"name": {"matrix"}},
		want: expect{Anon: 401, Other: 201, Member: 201, Admin: 201, Platform: 201, Owner: 201}},
	// Only the member owns the token; revoking it twice is fine.
	{route: routenames.TokensRevoke, params: func(f *matrixFixture) []any { return []any{idParam(f.memberToken)} },
		want: expect{Anon: 401, Other: 404, Member: 303, Admin: 404, Platform: 404, Owner: 404},
		after: func(t *testing.T, f *matrixFixture) {
			ts, err := f.a.db.APITokensOf(context.Background(), f.memberUser.ID)
			must(t, err == nil && slices.ContainsFunc(ts, func(tk models.APIToken) bool { return tk.ID == f.memberToken && tk.RevokedAt != nil }),
				"the member's token is not revoked: %v %+v", err, ts)
		}},
	{route: routenames.OrgsCreate, form: url.Values{"kind": {"team"}, "name": {"Side Project"}}, want: anyUserPost},
	{route: routenames.OrgsInvite, params: orgAParam, form: url.Values{"email": {"newcomer@pku.edu.cn"}, "role": {"member"}}, want: orgAdminPost,
		after: func(t *testing.T, f *matrixFixture) {
			ms, err := f.a.db.Outbox(context.Background(), "newcomer@pku.edu.cn", 10)
			must(t, err == nil && len(ms) == 2, "invitations mailed: %d (%v), want 2 (admin and owner)", len(ms), err)
		}},
	{route: routenames.OrgsBudget, params: orgAParam, form: url.Values{"monthly_budget": {"5000"}, "member_cap": {"800"}}, want: orgAdminPost,
		after: func(t *testing.T, f *matrixFixture) {
			o, err := f.a.db.OrgByID(context.Background(), f.orgA.ID)
			must(t, err == nil && o.MonthlyBudgetFen != nil && *o.MonthlyBudgetFen == 500000 && o.MemberCapFen != nil && *o.MemberCapFen == 80000,
				"budget not stored: %v %+v", err, o)
		}},
	{route: routenames.OrgsIdlePolicy, params: orgAParam, form: url.Values{"idle_policy_below_pct": {"20"}, "idle_policy_minutes": {"60"}}, want: orgAdminPost,
		after: func(t *testing.T, f *matrixFixture) {
			o, err := f.a.db.OrgByID(context.Background(), f.orgA.ID)
			must(t, err == nil && o.IdlePolicy == models.IdleStop{BelowPct: 20, Minutes: 60}, "policy not stored: %v %+v", err, o.IdlePolicy)
		}},
	{route: routenames.LabsApplyPost, form: url.Values{"institution": {"Tsinghua University"}, "lab_name": {"Matrix Lab"}, "supervisor": {"Prof. Li"},
		"email_domain": {"tsinghua.edu.cn"}, "edu_email": {"someone@tsinghua.edu.cn"}}, want: anyUserPost},
	{route: routenames.InvitationsAcceptPost, form: url.Values{"token": {"not-a-real-token"}},
		want: expect{Anon: 401, Other: 400, Member: 400, Admin: 400, Platform: 400, Owner: 400}},
	// Any member may top up the organisation's wallet.
	{route: routenames.WalletTopup, params: orgAParam, form: url.Values{"amount": {"100"}, "method": {"bank_transfer"}},
		want: expect{Anon: 401, Other: 404, Member: 303, Admin: 303, Platform: 404, Owner: 303}},
	// Refunds are for its admins; nothing is refundable yet (422 is past the guard).
	{route: routenames.WalletRefund, params: orgAParam, form: url.Values{"refund_amount": {"1"}},
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 422, Platform: 404, Owner: 422}},
	{route: routenames.OrgsBilling, params: orgAParam, form: url.Values{"hourly_cap": {"300"}, "invoice_title": {"北京大学"}, "tax_id": {"12100000400000624D"}},
		want: orgAdminPost,
		after: func(t *testing.T, f *matrixFixture) {
			o, err := f.a.db.OrgByID(context.Background(), f.orgA.ID)
			must(t, err == nil && o.HourlyCapFen != nil && *o.HourlyCapFen == 30000 && o.TaxID == "12100000400000624D", "billing not stored: %v %+v", err, o)
		}},
	// A form body is not the JSON the API wants (400 is past the guard).
	{route: routenames.APIWalletTopups, form: url.Values{"amount_fen": {"10000"}},
		want: expect{Anon: 401, Other: 400, Member: 400, Admin: 400, Platform: 400, Owner: 400}},
	// Spending alerts are set by the organisation's owner and admins.
	{route: routenames.OrgsAlerts, params: orgAParam, form: url.Values{"limit_pcts": {"50, 90"}, "low_balance": {"20"}, "runway_hours": {"12"}},
		want: orgAdminPost},
	{route: routenames.APIWalletAlertsSet, form: url.Values{"limit_pcts": {"50"}},
		want: expect{Anon: 401, Other: 400, Member: 400, Admin: 400, Platform: 400, Owner: 400}},
	{route: routenames.AdminTopupsConfirm, params: func(f *matrixFixture) []any { return []any{idParam(f.topup)} }, form: url.Values{"received": {"100"}},
		want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			bal, err := ledger.WalletBalance(context.Background(), f.a.db, f.orgA.ID)
			must(t, err == nil && bal == 10000, "org A's balance after the admin confirmed ¥100: %d %v", bal, err)
		}},
	{route: routenames.AdminRefundsPaid, params: func(*matrixFixture) []any { return []any{"999999"} },
		want: expect{Anon: 401, Other: 403, Member: 403, Admin: 403, Platform: 404, Owner: 403}},
	{route: routenames.AdminReview, params: orgAParam, form: url.Values{"decision": {"approve"}}, want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			o, err := f.a.db.OrgByID(context.Background(), f.orgA.ID)
			must(t, err == nil && o.Status == models.OrgApproved, "lab not approved: %v %+v", err, o)
		}},
	// Suspensions: of a user and an organisation made for these rows, so
	// that no other row's actor is affected.
	{route: routenames.AdminUsersSuspend, params: matrixSuspendUser, form: url.Values{"reason": {"matrix"}}, want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			u, err := f.a.db.UserByEmail(context.Background(), "suspend-me@matrix.example")
			must(t, err == nil && u.SuspendedAt != nil, "the user is not suspended: %v %+v", err, u)
		}},
	{route: routenames.AdminUsersUnsuspend, params: matrixSuspendUser, want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			u, err := f.a.db.UserByEmail(context.Background(), "suspend-me@matrix.example")
			must(t, err == nil && u.SuspendedAt == nil, "the user is still suspended: %v %+v", err, u)
		}},
	{route: routenames.AdminOrgsSuspend, params: matrixSuspendOrg, form: url.Values{"reason": {"matrix"}}, want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			o, err := f.a.db.OrgByID(context.Background(), mustParam(t, matrixSuspendOrg(f)))
			must(t, err == nil && o.SuspendedAt != nil, "the organisation is not suspended: %v %+v", err, o)
		}},
	{route: routenames.AdminOrgsUnsuspend, params: matrixSuspendOrg, want: platformPost,
		after: func(t *testing.T, f *matrixFixture) {
			o, err := f.a.db.OrgByID(context.Background(), mustParam(t, matrixSuspendOrg(f)))
			must(t, err == nil && o.SuspendedAt == nil, "the organisation is still suspended: %v %+v", err, o)
		}},
	// No demo provider has an organisation, so the run pays nobody; a
	// payout that does not exist is a 404 once past the guard.
	{route: routenames.AdminPayoutsRun, form: url.Values{"period": {matrixPayoutPeriod()}}, want: platformPost},
	{route: routenames.AdminPayoutsPaid, params: func(*matrixFixture) []any { return []any{"999999"} }, form: url.Values{"bank_reference": {"ICBC-1"}},
		want: expect{Anon: 401, Other: 403, Member: 403, Admin: 403, Platform: 404, Owner: 403}},
	{route: routenames.AdminPayoutsFailed, params: func(*matrixFixture) []any { return []any{"999999"} }, form: url.Values{"reason": {"bounced"}},
		want: expect{Anon: 401, Other: 403, Member: 403, Admin: 403, Platform: 404, Owner: 403}},
	// Only platform admins run a benchmark on demand (the provider portal
	// comes later); the node is made ready as its agent would.
	{route: routenames.APINodesBenchmarksRequest, params: readyBenchNode,
		want: expect{Anon: 401, Other: 403, Member: 403, Admin: 403, Platform: 202, Owner: 403},
		after: func(t *testing.T, f *matrixFixture) {
			var n int64
			f.a.db.R.Model(&models.AgentTask{}).Where("kind = ?", "benchmark").Count(&n)
			must(t, n == 1, "%d benchmark tasks after the admin asked once, want 1", n)
		}},
	// An invitation by number is only for the invited address: nobody in
	// the fixture is invited, so everyone logged in is told none exists.
	{route: routenames.InvitationsAcceptID, params: func(*matrixFixture) []any { return []any{"999999"} },
		want: expect{Anon: 401, Other: 404, Member: 404, Admin: 404, Platform: 404, Owner: 404}},
	// Only platform admins set how many organisations a user may create.
	{route: routenames.AdminUsersOrgsPerDay, params: func(f *matrixFixture) []any { return []any{idParam(f.memberUser.ID)} },
		form: url.Values{"per_day": {"12"}}, want: platformPost},
	// A pending invitation of org A, revoked by its admin; the owner's turn
	// then finds it gone.
	{route: routenames.OrgsInvitationsRevoke, params: func(f *matrixFixture) []any {
		svc := &accounts.Service{DB: f.a.db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
		owner, err := f.a.db.UserByEmail(context.Background(), "owner@pku.edu.cn")
		if err != nil {
			panic(err)
		}
		if _, err := svc.Invite(context.Background(), owner, f.orgA.ID, "revoked@pku.edu.cn", models.RoleMember); err != nil {
			panic(err)
		}
		invs, err := svc.PendingInvitations(context.Background(), owner, f.orgA.ID)
		if err != nil || len(invs) == 0 {
			panic(fmt.Sprint("no pending invitation: ", err))
		}
		return []any{idParam(f.orgA.ID), idParam(invs[0].ID)}
	}, want: expect{Anon: 401, Other: 404, Member: 403, Admin: 303, Platform: 404, Owner: 404}},
	// Last: the owner removes the member (the owner's cell runs last of the row).
	{route: routenames.OrgsMembersRemove, params: func(f *matrixFixture) []any { return []any{idParam(f.orgA.ID), idParam(f.memberUser.ID)} },
		want: expect{Anon: 401, Other: 404, Member: 403, Admin: 403, Platform: 404, Owner: 303},
		after: func(t *testing.T, f *matrixFixture) {
			_, err := f.a.db.MembershipOf(context.Background(), f.orgA.ID, f.memberUser.ID)
			must(t, apperr.Code(err) == apperr.ENOTFOUND, "the member was not removed: %v", err)
		}},
}

// publicRoutes are the routes anyone may use without logging in.
var publicRoutes = []string{
	routenames.Home, routenames.OffersList, routenames.OffersShow, routenames.DatacentersShow, routenames.LangSwitch, routenames.SLA,
	routenames.AuthSignup, routenames.AuthSignupPost, routenames.AuthLogin, routenames.AuthLoginPost, routenames.AuthLogout, routenames.AuthVerify, routenames.AuthVerifyPost,
	routenames.PasswordForgot, routenames.PasswordForgotPost, routenames.PasswordReset, routenames.PasswordResetPost,
	routenames.APIOffersList, routenames.APIOffersShow, routenames.APIOffersQuote, routenames.APIImagesList, routenames.WebhooksStripe, routenames.Healthz, routenames.Readyz, routenames.Metrics, routenames.Static,
	routenames.APICatalog, routenames.APIInstanceTypes,
	routenames.BenchmarksShow, routenames.NodesBenchmarks, routenames.APIBenchmarksShow, routenames.APINodesBenchmarks,
	routenames.TCO,
	routenames.Ping,
	routenames.APIOpenAPI, routenames.APIOpenAPI30, routenames.APIDocs,
	// A share link is its own credential (TestShareLinks, TestWorkspaceThroughTheTunnel).
	routenames.ShareRoot, routenames.Share,
	// A ticket is its own credential, on an apps origin only (TestWorkspaceAppsOnTheirOwnOrigin).
	routenames.AppsLogin,
	// A rental's verify token is its own credential (TestWitnessResultsEndpoint).
	routenames.WitnessResults,
}

// nodeRoutes are the node agents' routes: public in the route table (no
// user guard) but answering only to a node credential, never to a user's
// session or API token (TestNodeRoutesNeedANodeCredential).
var nodeRoutes = []string{routenames.AgentHeartbeat, routenames.AgentTasks, routenames.AgentResult, routenames.AgentProgress, routenames.AgentTunnel}

// Every route is in the matrix, explicitly public, or a node route: adding
// a route without deciding who may use it fails here.
func TestAuthzMatrixCoversEveryRoute(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	inMatrix := map[string]bool{}
	for _, r := range matrix {
		must(t, !inMatrix[r.route], "route %q is twice in the matrix", r.route)
		inMatrix[r.route] = true
		must(t, !slices.Contains(publicRoutes, r.route), "route %q is both public and in the matrix", r.route)
		must(t, !slices.Contains(nodeRoutes, r.route), "route %q is both a node route and in the matrix", r.route)
	}
	for _, name := range nodeRoutes {
		must(t, !slices.Contains(publicRoutes, name), "route %q is both public and a node route", name)
	}
	seen := map[string]bool{}
	for _, r := range a.e.Routes() {
		if r.Name == "" || strings.HasPrefix(r.Name, "github.com/labstack/echo") {
			continue // echo's own entries
		}
		seen[r.Name] = true
		if !inMatrix[r.Name] && !slices.Contains(publicRoutes, r.Name) && !slices.Contains(nodeRoutes, r.Name) &&
			!slices.Contains(providerAPICovered, r.Name) && !slices.Contains(providerPagesCovered, r.Name) && !slices.Contains(consoleAPICovered, r.Name) &&
			!slices.Contains(pageAPICovered, r.Name) {
			t.Errorf("route %s %s (%q) is in neither the authorisation matrix, publicRoutes nor nodeRoutes", r.Method, r.Path, r.Name)
		}
	}
	for _, name := range slices.Concat(slices.Collect(maps.Keys(inMatrix)), publicRoutes, nodeRoutes, providerAPICovered, providerPagesCovered, consoleAPICovered, pageAPICovered) {
		if !seen[name] {
			t.Errorf("route %q is listed but not in the route table", name)
		}
	}
}

// Public GET routes without parameters really are public: anonymous
// visitors are neither redirected to the login page nor refused.
func TestAuthzMatrixPublicRoutesArePublic(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ac := newActor(a, "anonymous")
	for _, r := range a.e.Routes() {
		if r.Method != "GET" || !slices.Contains(publicRoutes, r.Name) || strings.ContainsAny(r.Path, ":*") {
			continue
		}
		res, _ := ac.do("GET", r.Path, nil)
		loc := res.Header.Get("Location")
		if res.StatusCode == 401 || res.StatusCode == 403 || res.StatusCode >= 500 || strings.HasPrefix(loc, "/login") {
			t.Errorf("public %s %s (%s): %d Location %q", r.Method, r.Path, r.Name, res.StatusCode, loc)
		}
	}
}

// The authorisation matrix: every protected route × every kind of actor.
func TestAuthzMatrix(t *testing.T) {
	t.Parallel()
	f := newMatrixFixture(t)
	a := f.a
	methods := map[string]string{}
	for _, r := range a.e.Routes() {
		// A route of every method (a proxied app's) is called with GET.
		if _, ok := methods[r.Name]; !ok || r.Method == http.MethodGet {
			methods[r.Name] = r.Method
		}
	}
	order := []int{asAnon, asOther, asMember, asOrgAdmin, asPlatform, asOwner}
	for _, row := range matrix {
		t.Run(row.route, func(t *testing.T) {
			method := methods[row.route]
			must(t, method != "", "route %q is not in the route table", row.route)
			var params []any
			if row.params != nil {
				params = row.params(f)
			}
			// ORG_A in a query or form value stands for org A's id.
			path := a.url(row.route, params...) + strings.ReplaceAll(row.query, "ORG_A", idParam(f.orgA.ID))
			if row.form != nil {
				form := url.Values{}
				for k, vs := range row.form {
					for _, v := range vs {
						form.Add(k, strings.ReplaceAll(v, "ORG_A", idParam(f.orgA.ID)))
					}
				}
				row.form = form
			}
			if method == "POST" || method == "DELETE" {
				// CSRF is checked before anything else: without the token even
				// a logged-in owner is refused, and nothing runs.
				res, _ := f.actors[asOwner].do(method, path, row.form)
				must(t, res.StatusCode == http.StatusForbidden, "owner %s %s without a CSRF token: %d, want 403", method, path, res.StatusCode)
				res, _ = f.actors[asAnon].do(method, path, row.form)
				must(t, res.StatusCode == http.StatusForbidden, "anonymous %s %s without a CSRF token: %d, want 403", method, path, res.StatusCode)
			}
			for _, who := range order {
				ac := f.actors[who]
				var (
					res  *http.Response
					body string
				)
				if method == "POST" && row.json != nil {
					res, body = ac.postJSON(path, row.json(f))
				} else if method == "POST" {
					res, body = ac.post(path, row.form)
				} else if method == "DELETE" {
					res, body = ac.sendJSON(method, path, "")
				} else {
					res, body = ac.do(method, path, nil)
				}
				want := row.want.of(who)
				if res.StatusCode != want {
					t.Errorf("%s %s as %s: %d, want %d\n%s", method, path, actorNames[who], res.StatusCode, want, snippet(body))
					continue
				}
				if who == asAnon && method == "GET" && want == http.StatusSeeOther {
					loc := res.Header.Get("Location")
					wantLoc := "/login?next=" + url.QueryEscape(path)
					if loc != wantLoc {
						t.Errorf("GET %s as anonymous: Location %q, want %q", path, loc, wantLoc)
					}
				}
				if who == asOther && strings.Contains(body, orgAName) {
					t.Errorf("%s %s as a member of another org: the response shows org A's name", method, path)
				}
				if who == asOther && strings.Contains(body, f.memberUser.Email) {
					t.Errorf("%s %s as a member of another org: the response shows org A's member", method, path)
				}
				if strings.HasPrefix(path, "/api/") && want >= 400 {
					contains(t, body, `"error":{"code":`)
				}
			}
			if row.after != nil {
				row.after(t, f)
			}
		})
	}
}

// Node routes answer 401 to anyone without a node credential: nobody
// logged out, no user's session (with its CSRF token), no user's API
// token (a platform admin's included) and no made-up credential. A real
// node credential gets through.
func TestNodeRoutesNeedANodeCredential(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	svc := &accounts.Service{DB: a.db}
	admin := mustUser(t, a.db, "root@suanli.example", "Pat Platform", true)
	token, _, err := svc.CreateAPIToken(ctx, admin, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	session := loggedIn(a, "platform admin", admin)
	anon := newActor(a, "anonymous")
	methods := map[string]string{}
	for _, r := range a.e.Routes() {
		methods[r.Name] = r.Method
	}
	bodies := map[string]string{"agent.heartbeat": `{"agent_version":"test"}`, "agent.result": `{"ok":true}`}
	params := map[string][]any{routenames.AgentResult: {"1"}}
	for _, name := range nodeRoutes {
		method := methods[name]
		must(t, method != "", "node route %q is not in the route table", name)
		path := a.url(name, params[name]...)
		if method == "GET" {
			path += "?wait=0"
		}
		// send calls the route as ac, with a JSON body for a POST (and ac's
		// CSRF token, so that only the credential can be what is refused).
		send := func(ac *actor, headers ...string) (*http.Response, string) {
			var body io.Reader
			if method == "POST" {
				body = strings.NewReader(bodies[name])
			}
			req, err := http.NewRequest(method, a.srv.URL+path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-CSRF-Token", ac.csrf())
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			res, err := ac.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res, string(b)
		}
		cases := []struct {
			who     string
			ac      *actor
			headers []string
		}{
			{"nobody", anon, nil},
			{"a user's session", session, nil},
			{"a user's API token", anon, []string{"Authorization", "Bearer " + token}},
			{"a made-up node credential", anon, []string{"Authorization", "Bearer snc_not-a-real-credential"}},
		}
		for _, c := range cases {
			res, body := send(c.ac, c.headers...)
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: %d, want 401\n%s", method, path, c.who, res.StatusCode, snippet(body))
				continue
			}
			contains(t, body, `"code":"unauthorised"`)
		}
	}
	// A node's own credential is let in (the long-poll answers at once with wait=0).
	var node models.Node
	if err := a.db.R.Order("id").First(&node).Error; err != nil {
		t.Fatal(err)
	}
	cred, err := testHandler(a.db, a.index).Rentals.Fleet().IssueCredential(ctx, node.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, body := anon.do("GET", a.url(routenames.AgentTasks)+"?wait=0", nil, "Authorization", "Bearer "+cred)
	must(t, res.StatusCode == http.StatusOK, "GET /agent/v1/tasks with node %d's credential: %d, want 200\n%s", node.ID, res.StatusCode, snippet(body))
}
