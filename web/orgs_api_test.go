package web_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/models"
	"suanli/routenames"
)

// consoleAPICovered lists the API routes added for parity with the
// console (web/parity_test.go) whose authorisation their own tests check
// (another organisation's or provider's user gets 404, a role too weak
// 403): TestOrganisationsThroughTheAPI, TestWalletRefundsAndBillingThroughTheAPI,
// TestSharesAndTokensThroughTheAPI, TestLogsAndFilesThroughTheAPI and
// TestProviderPortalThroughTheAPI.
var consoleAPICovered = []string{
	routenames.APIOrgsCreate, routenames.APIOrgsShow, routenames.APIOrgsBudget, routenames.APIOrgsIdlePolicy,
	routenames.APIOrgsInvite, routenames.APIOrgsInvitationsRevoke, routenames.APIOrgsMembersRemove,
	routenames.APIInvitationsMine, routenames.APIInvitationsAccept, routenames.APIInvitationsAcceptToken, routenames.APILabsApply,
	routenames.APIWalletRefunds, routenames.APIWalletRefundsCreate, routenames.APIWalletBilling, routenames.APIWalletBillingSet,
	routenames.APIRentalsSharesList, routenames.APIRentalsSharesCreate, routenames.APIRentalsSharesRevoke,
	routenames.APITokensList, routenames.APITokensRevoke,
	routenames.APIRentalsLogs, routenames.APIRentalsFilesList, routenames.APIRentalsFilesDownload, routenames.APIRentalsFilesUpload,
	routenames.APIProviderSignup, routenames.APIProviderProfile, routenames.APIProviderProfileUpdate,
	routenames.APIProviderDatacentersUpdate, routenames.APIProviderNodesUpdate, routenames.APIProviderNodesToken,
	routenames.APIProviderConnect, routenames.APIProviderStatement,
}

// apiOrg is the Org of the API, as the tests read it.
type apiOrg struct {
	ID               int64  `json:"id"`
	Kind             string `json:"kind"`
	Name             string `json:"name"`
	Status           string `json:"status"`
	Role             string `json:"role"`
	MonthlyBudgetFen *int64 `json:"monthly_budget_fen"`
	MemberCapFen     *int64 `json:"member_cap_fen"`
	IdlePolicy       *struct {
		GPUUtilBelowPct int `json:"gpu_util_below_pct"`
		Minutes         int `json:"minutes"`
	} `json:"idle_policy"`
	Members []struct {
		UserID int64  `json:"user_id"`
		Email  string `json:"email"`
		Role   string `json:"role"`
	} `json:"members"`
	Invitations []struct {
		ID    int64  `json:"id"`
		Email string `json:"email"`
		Role  string `json:"role"`
	} `json:"invitations"`
}

// verifiedWithToken is a verified user with an API token.
func verifiedWithToken(t *testing.T, a *app, email string) (*models.User, string) {
	t.Helper()
	u, _ := fundedRenter(t, a.db, email, testPassword, 0)
	tok, _, err := (&accounts.Service{DB: a.db}).CreateAPIToken(context.Background(), u, "orgs")
	must(t, err == nil, "token: %v", err)
	return u, tok
}

// mustStatus fails unless the call answered want; it returns the body.
func mustStatus(t *testing.T, a *app, token, method, path, body string, want int) string {
	t.Helper()
	st, _, raw := apiCall(a, token, method, path, body)
	if st != want {
		t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, st, raw, want)
	}
	return raw
}

// mustInvalid fails unless the call is refused as bad input (400 or 422)
// naming param.
func mustInvalid(t *testing.T, a *app, token, method, path, body string, want int, param string) {
	t.Helper()
	raw := mustStatus(t, a, token, method, path, body, want)
	code, p, _ := errorCode(t, raw)
	if code != "invalid" || p != param {
		t.Fatalf("%s %s %s: code %s param %q, want invalid %q (%s)", method, path, body, code, p, param, raw)
	}
}

// An organisation's whole life through the API, as its page lives it:
// made, people invited (by id from the invitee's list, and by the mailed
// token), an invitation revoked, a member removed, the owner kept; a lab
// applied for, its budget and idle-stop policy set and cleared. Members
// with too weak a role get 403, other organisations' users 404, and bad
// input a 400 or 422 naming the field with nothing changed.
func TestOrganisationsThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		sfx := strings.ToLower(randomHex(t))
		owner, ownerTok := verifiedWithToken(t, a, "org-owner-"+sfx+"@example.com")
		bob, bobTok := verifiedWithToken(t, a, "org-bob-"+sfx+"@example.com")
		_, carolTok := verifiedWithToken(t, a, "org-carol-"+sfx+"@example.com")
		orgs := func() int {
			oms, err := db.OrgsOfUser(context.Background(), owner.ID)
			must(t, err == nil, "orgs: %v", err)
			return len(oms)
		}
		before := orgs()

		// Bad input makes nothing.
		mustInvalid(t, a, ownerTok, "POST", "/api/v1/orgs", `{"name":"","kind":"club"}`, http.StatusUnprocessableEntity, "name")
		mustInvalid(t, a, ownerTok, "POST", "/api/v1/orgs", `{"name":7,"kind":"team"}`, http.StatusBadRequest, "name")
		mustInvalid(t, a, ownerTok, "POST", "/api/v1/orgs", `{"name":"x","kind":"team","colour":"red"}`, http.StatusBadRequest, "body")
		must(t, orgs() == before, "a refused organisation was made")

		org := decode[apiOrg](t, mustStatus(t, a, ownerTok, "POST", a.url(routenames.APIOrgsCreate), `{"name":"Crew `+sfx+`","kind":"team"}`, http.StatusCreated))
		must(t, org.Kind == "team" && org.Role == "owner" && len(org.Members) == 1 && org.Invitations != nil && len(org.Invitations) == 0, "the team: %+v", org)
		path := a.url(routenames.APIOrgsShow, idParam(org.ID))

		// Invitations.
		invite := a.url(routenames.APIOrgsInvite, idParam(org.ID))
		mustInvalid(t, a, ownerTok, "POST", invite, `{"email":"`+bob.Email+`","role":"king"}`, http.StatusUnprocessableEntity, "role")
		mustInvalid(t, a, ownerTok, "POST", invite, `{"email":"not-an-address","role":"member"}`, http.StatusUnprocessableEntity, "email")
		must(t, len(decode[apiOrg](t, mustStatus(t, a, ownerTok, "GET", path, "", http.StatusOK)).Invitations) == 0, "a refused invitation was made")
		mustStatus(t, a, carolTok, "POST", invite, `{"email":"x@example.com","role":"member"}`, http.StatusNotFound)
		var personal int64
		for _, om := range mustOrgs(t, db, owner.ID) {
			if om.Org.Personal {
				personal = om.Org.ID
			}
		}
		mustStatus(t, a, ownerTok, "POST", a.url(routenames.APIOrgsInvite, idParam(personal)), `{"email":"`+bob.Email+`","role":"member"}`, http.StatusConflict)

		inv := decode[struct {
			ID    int64  `json:"id"`
			Email string `json:"email"`
			Role  string `json:"role"`
		}](t, mustStatus(t, a, ownerTok, "POST", invite, `{"email":"`+bob.Email+`","role":"member"}`, http.StatusCreated))
		must(t, inv.ID > 0 && inv.Email == bob.Email && inv.Role == "member", "the invitation: %+v", inv)
		mine := mustStatus(t, a, bobTok, "GET", a.url(routenames.APIInvitationsMine), "", http.StatusOK)
		must(t, strings.Contains(mine, `"id":`+idParam(inv.ID)) && strings.Contains(mine, "Crew "+sfx), "bob's invitations: %s", mine)
		mustStatus(t, a, carolTok, "POST", a.url(routenames.APIInvitationsAccept, idParam(inv.ID)), "", http.StatusNotFound)
		joined := decode[apiOrg](t, mustStatus(t, a, bobTok, "POST", a.url(routenames.APIInvitationsAccept, idParam(inv.ID)), "", http.StatusOK))
		must(t, joined.ID == org.ID && joined.Role == "member" && len(joined.Members) == 2 && joined.Invitations == nil, "bob joined: %+v", joined)

		// A member may look, not invite or remove; others see nothing.
		mustStatus(t, a, bobTok, "POST", invite, `{"email":"x@example.com","role":"member"}`, http.StatusForbidden)
		mustStatus(t, a, bobTok, "DELETE", a.url(routenames.APIOrgsMembersRemove, idParam(org.ID), idParam(owner.ID)), "", http.StatusForbidden)
		mustStatus(t, a, carolTok, "GET", path, "", http.StatusNotFound)
		mustStatus(t, a, carolTok, "DELETE", a.url(routenames.APIOrgsMembersRemove, idParam(org.ID), idParam(bob.ID)), "", http.StatusNotFound)

		// Revoked, an invitation cannot be taken; by its mailed token, one can.
		dave := "org-dave-" + sfx + "@example.com"
		dinv := decode[struct {
			ID int64 `json:"id"`
		}](t, mustStatus(t, a, ownerTok, "POST", invite, `{"email":"`+dave+`","role":"admin"}`, http.StatusCreated))
		mustStatus(t, a, carolTok, "DELETE", a.url(routenames.APIOrgsInvitationsRevoke, idParam(org.ID), idParam(dinv.ID)), "", http.StatusNotFound)
		mustStatus(t, a, ownerTok, "DELETE", a.url(routenames.APIOrgsInvitationsRevoke, idParam(org.ID), idParam(dinv.ID)), "", http.StatusNoContent)
		mustStatus(t, a, ownerTok, "DELETE", a.url(routenames.APIOrgsInvitationsRevoke, idParam(org.ID), idParam(dinv.ID)), "", http.StatusNotFound)
		_, daveTok := verifiedWithToken(t, a, dave)
		mustStatus(t, a, daveTok, "POST", a.url(routenames.APIInvitationsAccept, idParam(dinv.ID)), "", http.StatusNotFound)
		erin := "org-erin-" + sfx + "@example.com"
		mustStatus(t, a, ownerTok, "POST", invite, `{"email":"`+erin+`","role":"member"}`, http.StatusCreated)
		token := mailedToken(t, db, erin, "/invitations/accept")
		_, erinTok := verifiedWithToken(t, a, erin)
		mustInvalid(t, a, erinTok, "POST", a.url(routenames.APIInvitationsAcceptToken), `{"token":"nonsense"}`, http.StatusBadRequest, "token")
		mustStatus(t, a, carolTok, "POST", a.url(routenames.APIInvitationsAcceptToken), `{"token":"`+token+`"}`, http.StatusForbidden)
		got := decode[apiOrg](t, mustStatus(t, a, erinTok, "POST", a.url(routenames.APIInvitationsAcceptToken), `{"token":"`+token+`"}`, http.StatusOK))
		must(t, got.ID == org.ID && got.Role == "member", "erin joined: %+v", got)

		// Removing: a member goes, the owner stays.
		mustStatus(t, a, ownerTok, "DELETE", a.url(routenames.APIOrgsMembersRemove, idParam(org.ID), idParam(owner.ID)), "", http.StatusConflict)
		mustStatus(t, a, ownerTok, "DELETE", a.url(routenames.APIOrgsMembersRemove, idParam(org.ID), idParam(bob.ID)), "", http.StatusNoContent)
		mustStatus(t, a, bobTok, "GET", path, "", http.StatusNotFound)

		// A lab: applied for, its budget and idle policy.
		mustInvalid(t, a, ownerTok, "POST", a.url(routenames.APILabsApply), `{"institution":"Sichuan University","lab_name":"Vision","supervisor":"Prof. Wang","email_domain":"example.com","edu_email":"li@example.com"}`, http.StatusUnprocessableEntity, "email_domain")
		lab := decode[apiOrg](t, mustStatus(t, a, ownerTok, "POST", a.url(routenames.APILabsApply), `{"institution":"Sichuan University","lab_name":"Vision `+sfx+`","supervisor":"Prof. Wang","email_domain":"scu.edu.cn","edu_email":"li-`+sfx+`@scu.edu.cn"}`, http.StatusCreated))
		must(t, lab.Kind == "lab" && lab.Status == "pending" && lab.Role == "owner", "the lab: %+v", lab)
		budget := a.url(routenames.APIOrgsBudget, idParam(lab.ID))
		mustStatus(t, a, ownerTok, "PUT", a.url(routenames.APIOrgsBudget, idParam(org.ID)), `{"monthly_budget_fen":100,"member_cap_fen":null}`, http.StatusNotFound) // a team has no budget
		mustStatus(t, a, carolTok, "PUT", budget, `{"monthly_budget_fen":100,"member_cap_fen":null}`, http.StatusNotFound)
		mustInvalid(t, a, ownerTok, "PUT", budget, `{"monthly_budget_fen":100000,"member_cap_fen":200000}`, http.StatusUnprocessableEntity, "member_cap_fen")
		mustInvalid(t, a, ownerTok, "PUT", budget, `{"monthly_budget_fen":-1,"member_cap_fen":null}`, http.StatusUnprocessableEntity, "monthly_budget_fen")
		mustInvalid(t, a, ownerTok, "PUT", budget, `{"monthly_budget_fen":"lots","member_cap_fen":null}`, http.StatusBadRequest, "monthly_budget_fen")
		must(t, decode[apiOrg](t, mustStatus(t, a, ownerTok, "GET", a.url(routenames.APIOrgsShow, idParam(lab.ID)), "", http.StatusOK)).MonthlyBudgetFen == nil, "a refused budget was stored")
		lab = decode[apiOrg](t, mustStatus(t, a, ownerTok, "PUT", budget, `{"monthly_budget_fen":500000,"member_cap_fen":100000}`, http.StatusOK))
		must(t, lab.MonthlyBudgetFen != nil && *lab.MonthlyBudgetFen == 500000 && lab.MemberCapFen != nil && *lab.MemberCapFen == 100000, "the budget: %+v", lab)
		lab = decode[apiOrg](t, mustStatus(t, a, ownerTok, "PUT", budget, `{"monthly_budget_fen":null,"member_cap_fen":null}`, http.StatusOK))
		must(t, lab.MonthlyBudgetFen == nil && lab.MemberCapFen == nil, "the budget cleared: %+v", lab)

		idle := a.url(routenames.APIOrgsIdlePolicy, idParam(lab.ID))
		mustStatus(t, a, carolTok, "PUT", idle, `{"idle_policy":null}`, http.StatusNotFound)
		mustInvalid(t, a, ownerTok, "PUT", idle, `{"idle_policy":{"gpu_util_below_pct":0,"minutes":0}}`, http.StatusBadRequest, "idle_policy")
		mustInvalid(t, a, ownerTok, "PUT", idle, `{"idle_policy":{"gpu_util_below_pct":10,"minutes":1}}`, http.StatusBadRequest, "idle_policy")
		mustInvalid(t, a, ownerTok, "PUT", idle, `{"idle_policy":{"pct":10}}`, http.StatusBadRequest, "idle_policy")
		mustInvalid(t, a, ownerTok, "PUT", idle, `{}`, http.StatusBadRequest, "idle_policy")
		lab = decode[apiOrg](t, mustStatus(t, a, ownerTok, "PUT", idle, `{"idle_policy":{"gpu_util_below_pct":10,"minutes":30}}`, http.StatusOK))
		must(t, lab.IdlePolicy != nil && lab.IdlePolicy.GPUUtilBelowPct == 10 && lab.IdlePolicy.Minutes == 30, "the policy: %+v", lab.IdlePolicy)
		lab = decode[apiOrg](t, mustStatus(t, a, ownerTok, "PUT", idle, `{"idle_policy":null}`, http.StatusOK))
		must(t, lab.IdlePolicy == nil, "the policy cleared: %+v", lab.IdlePolicy)
	})
}

// mustOrgs is the user's organisations.
func mustOrgs(t *testing.T, db *models.DB, userID int64) []models.OrgMembership {
	t.Helper()
	oms, err := db.OrgsOfUser(context.Background(), userID)
	must(t, err == nil, "orgs: %v", err)
	return oms
}

// Every API route added for parity asks an anonymous caller, or one with
// a bad token, to authenticate (a write without credentials meets the
// CSRF check first: 403), and gives nothing away.
func TestConsoleAPINeedsCredentials(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	param := regexp.MustCompile(`:[a-z_]+`)
	seen := map[string]bool{}
	for _, r := range a.e.Routes() {
		if !slices.Contains(consoleAPICovered, r.Name) {
			continue
		}
		seen[r.Name] = true
		path := param.ReplaceAllString(r.Path, "1")
		body := ""
		if r.Method != http.MethodGet {
			body = "{}"
		}
		st, out, raw := apiCall(a, "", r.Method, path, body)
		errObj, _ := out["error"].(map[string]any)
		if (r.Method == http.MethodGet && st != http.StatusUnauthorized) || (st != http.StatusUnauthorized && st != http.StatusForbidden) || errObj["code"] == nil {
			t.Errorf("anonymous %s %s: %d %s", r.Method, path, st, raw)
		}
		st, out, raw = apiCall(a, "sl_not-a-token", r.Method, path, body)
		errObj, _ = out["error"].(map[string]any)
		if st != http.StatusUnauthorized || errObj["code"] == nil {
			t.Errorf("a bad token, %s %s: %d %s", r.Method, path, st, raw)
		}
	}
	for _, name := range consoleAPICovered {
		must(t, seen[name], "route %q is not in the route table", name)
	}
}
