package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/models"
	"suanli/routenames"
)

// The provider portal's other actions through the API, each as its page
// does it: signing up, the profile, a datacentre's details, draining,
// resuming and removing a node, a node's new registration token, Stripe
// Connect onboarding and the monthly statement. Another provider gets
// 404 for all of it, a member of the provider who is not an admin 403
// for every change, and bad input a 400 or 422 naming the field with
// nothing changed.
func TestProviderPortalThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProviderAPIFixture(t, db)
		a := f.a
		ctx := context.Background()
		pidA := idParam(f.provA.Provider.ID)
		// A plain member of provider A.
		member, err := db.UserByEmail(ctx, "renter@example.com")
		must(t, err == nil, "the renter: %v", err)
		must(t, db.W.Create(&models.Membership{OrgID: *f.provA.Provider.OrgID, UserID: member.ID, Role: models.RoleMember, CreatedAt: db.Now()}).Error == nil, "add the member")

		// Signing up.
		newcomer := mustUser(t, db, "new@prov-new.example", "Newcomer", false)
		newTok, _, err := (&accounts.Service{DB: db}).CreateAPIToken(ctx, newcomer, "signup")
		must(t, err == nil, "token: %v", err)
		signup := a.url(routenames.APIProviderSignup)
		mustInvalid(t, a, newTok, "POST", signup, `{"company_name":"","contact_name":"Zhao","contact_email":"zhao@prov-new.example"}`, http.StatusUnprocessableEntity, "company_name")
		mustInvalid(t, a, newTok, "POST", signup, `{"provider_id":1,"company_name":"X","contact_name":"Zhao","contact_email":"zhao@prov-new.example"}`, http.StatusBadRequest, "provider_id")
		mustStatus(t, a, newTok, "GET", a.url(routenames.APIProviderProfile), "", http.StatusNotFound)
		type profile struct {
			ProviderID  int64  `json:"provider_id"`
			Status      string `json:"status"`
			Role        string `json:"role"`
			CompanyName string `json:"company_name"`
			ContactName string `json:"contact_name"`
		}
		p := decode[profile](t, mustStatus(t, a, newTok, "POST", signup, `{"company_name":"Tianfu GPU Co","contact_name":"Zhao","contact_phone":"+86 28 8888 0000","contact_email":"zhao@prov-new.example","licence_no":"91510100MA61ABCD1X"}`, http.StatusCreated))
		must(t, p.ProviderID > 0 && p.Status == models.OrgPending && p.Role == "owner" && p.CompanyName == "Tianfu GPU Co", "signed up: %+v", p)

		// The profile.
		prof := a.url(routenames.APIProviderProfile)
		p = decode[profile](t, mustStatus(t, a, f.tokA, "GET", prof, "", http.StatusOK))
		must(t, p.ProviderID == f.provA.Provider.ID && p.Status == models.OrgApproved && p.CompanyName == "Provider A", "A's profile: %+v", p)
		mustStatus(t, a, f.tokB, "GET", prof+"?provider_id="+pidA, "", http.StatusNotFound)
		mustStatus(t, a, f.tokB, "PUT", prof, `{"provider_id":`+pidA+`,"company_name":"Mine now","contact_name":"B","contact_email":"b@prov-b.example"}`, http.StatusNotFound)
		mustStatus(t, a, f.tokRenter, "GET", prof+"?provider_id="+pidA, "", http.StatusOK)
		mustStatus(t, a, f.tokRenter, "PUT", prof, `{"provider_id":`+pidA+`,"company_name":"Member's","contact_name":"M","contact_email":"m@example.com"}`, http.StatusForbidden)
		mustInvalid(t, a, f.tokA, "PUT", prof, `{"company_name":"","contact_name":"Li","contact_email":"ops@prov-a.example"}`, http.StatusUnprocessableEntity, "company_name")
		must(t, decode[profile](t, mustStatus(t, a, f.tokA, "GET", prof, "", http.StatusOK)).CompanyName == "Provider A", "a refused profile was stored")
		p = decode[profile](t, mustStatus(t, a, f.tokA, "PUT", prof, `{"company_name":"Provider A Ltd","contact_name":"Li","contact_phone":"+86 28 6666 0000","contact_email":"ops@prov-a.example","licence_no":"91510100MA61ABCD2Y"}`, http.StatusOK))
		must(t, p.CompanyName == "Provider A Ltd" && p.ContactName == "Li", "A's new profile: %+v", p)

		// A datacentre's details.
		dc := a.url(routenames.APIProviderDatacentersUpdate, idParam(f.dcA))
		mustStatus(t, a, f.tokB, "PUT", dc, `{"name":"抢来的","city":"chengdu"}`, http.StatusNotFound)
		mustStatus(t, a, f.tokRenter, "PUT", dc, `{"provider_id":`+pidA+`,"name":"成员的","city":"chengdu"}`, http.StatusForbidden)
		mustInvalid(t, a, f.tokA, "PUT", dc, `{"name":"天府机房","city":"atlantis"}`, http.StatusUnprocessableEntity, "city")
		mustInvalid(t, a, f.tokA, "PUT", dc, `{"name":"天府机房","city":"chengdu","uplink_gbps":"fast"}`, http.StatusBadRequest, "uplink_gbps")
		out := decode[struct {
			ID       int64  `json:"id"`
			Name     string `json:"name"`
			District string `json:"district"`
			Tier     string `json:"tier"`
		}](t, mustStatus(t, a, f.tokA, "PUT", dc, `{"name":"天府机房","city":"chengdu","district":"天府软件园","tier":"Tier III"}`, http.StatusOK))
		must(t, out.ID == f.dcA && out.Name == "天府机房" && out.District == "天府软件园" && out.Tier == "Tier III", "the datacentre: %+v", out)

		// A node's status and token.
		node := a.url(routenames.APIProviderNodesUpdate, idParam(f.nodeA))
		type nodeOut struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
		}
		mustStatus(t, a, f.tokB, "PATCH", node, `{"status":"draining"}`, http.StatusNotFound)
		mustStatus(t, a, f.tokRenter, "PATCH", node, `{"status":"draining"}`, http.StatusForbidden)
		mustInvalid(t, a, f.tokA, "PATCH", node, `{"status":"asleep"}`, http.StatusUnprocessableEntity, "status")
		must(t, decode[nodeOut](t, mustStatus(t, a, f.tokA, "GET", a.url(routenames.APIProviderNodesShow, idParam(f.nodeA)), "", http.StatusOK)).Status == string(models.NodeActive), "a refused status was stored")
		n := decode[nodeOut](t, mustStatus(t, a, f.tokA, "PATCH", node, `{"status":"draining"}`, http.StatusOK))
		must(t, n.ID == f.nodeA && n.Status == string(models.NodeDraining), "drained: %+v", n)
		n = decode[nodeOut](t, mustStatus(t, a, f.tokA, "PATCH", node, `{"status":"resume"}`, http.StatusOK))
		must(t, n.Status == string(models.NodeActive), "resumed: %+v", n)

		token := a.url(routenames.APIProviderNodesToken, idParam(f.nodeA))
		mustStatus(t, a, f.tokB, "POST", token, "", http.StatusNotFound)
		mustStatus(t, a, f.tokRenter, "POST", token, "", http.StatusForbidden)
		renewed := decode[struct {
			ID      int64             `json:"id"`
			Token   string            `json:"token"`
			Install map[string]string `json:"install"`
		}](t, mustStatus(t, a, f.tokA, "POST", token, "", http.StatusCreated))
		must(t, renewed.ID == f.nodeA && strings.HasPrefix(renewed.Token, "snr_") && strings.Contains(renewed.Install["shell"], renewed.Token), "renewed: %+v", renewed)

		n = decode[nodeOut](t, mustStatus(t, a, f.tokA, "PATCH", node, `{"status":"removed"}`, http.StatusOK))
		must(t, n.Status == string(models.NodeRemoved), "removed: %+v", n)
		mustStatus(t, a, f.tokA, "POST", token, "", http.StatusConflict)

		// Stripe Connect is not set up here: a link cannot be made (503),
		// but only the provider's admins learn that.
		connect := a.url(routenames.APIProviderConnect)
		mustStatus(t, a, f.tokB, "POST", connect, `{"provider_id":`+pidA+`}`, http.StatusNotFound)
		mustStatus(t, a, f.tokRenter, "POST", connect, `{"provider_id":`+pidA+`}`, http.StatusForbidden)
		mustStatus(t, a, f.tokA, "POST", connect, "", http.StatusServiceUnavailable)

		// The statement.
		st := a.url(routenames.APIProviderStatement)
		mustStatus(t, a, f.tokB, "GET", st+"?provider_id="+pidA, "", http.StatusNotFound)
		mustInvalid(t, a, f.tokA, "GET", st+"?month=2026-13", "", http.StatusBadRequest, "month")
		s := decode[struct {
			ProviderID int64    `json:"provider_id"`
			Month      string   `json:"month"`
			GrossFen   int64    `json:"gross_fen"`
			Lines      []any    `json:"lines"`
			Months     []string `json:"months"`
		}](t, mustStatus(t, a, f.tokA, "GET", st+"?month=2026-01", "", http.StatusOK))
		must(t, s.ProviderID == f.provA.Provider.ID && s.Month == "2026-01" && s.GrossFen == 0 && s.Lines != nil, "the statement: %+v", s)
		mustStatus(t, a, f.tokRenter, "GET", st+"?provider_id="+pidA, "", http.StatusOK)
	})
}
