package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/models"
	"suanli/providers"
	"suanli/routenames"
)

// providerPagesCovered lists the provider portal routes whose
// authorisation the tests in this file check.
var providerPagesCovered = []string{
	routenames.ProviderHome, routenames.ProviderSignup, routenames.ProviderDashboard, routenames.ProviderProfile, routenames.ProviderProfilePost,
	routenames.ProviderDatacenters, routenames.ProviderDatacentersCreate, routenames.ProviderDatacentersEdit, routenames.ProviderDatacentersUpdate,
	routenames.ProviderNodes, routenames.ProviderNodesLive, routenames.ProviderNodesCreate, routenames.ProviderNodesShow, routenames.ProviderNodesLiveOne,
	routenames.ProviderNodesStatus, routenames.ProviderNodesToken,
	routenames.ProviderOffers, routenames.ProviderOffersNew, routenames.ProviderOffersCreate, routenames.ProviderOffersEdit, routenames.ProviderOffersUpdate, routenames.ProviderOffersStatus,
	routenames.ProviderCapacity, routenames.ProviderEarnings, routenames.ProviderStatement, routenames.ProviderStatementCSV,
	routenames.ProviderConnect, routenames.ProviderConnectReturn,
}

// portalFixture is provider A (its owner, and a plain member), provider
// B's owner, a platform admin and an anonymous visitor; A has a
// datacentre, a node and an offer.
type portalFixture struct {
	a                  *app
	A, B               *providerFixture
	member, platform   *actor
	anon               *actor
	node, offer, dc    int64
	bNode, bOffer, bDC int64
}

func newPortalFixture(t *testing.T, a *app) *portalFixture {
	t.Helper()
	f := &portalFixture{a: a}
	f.A = newProviderFixture(t, a, "owner@provider-a.example", "Provider A")
	f.B = newProviderFixture(t, a, "owner@provider-b.example", "Provider B")
	memberU := mustUser(t, a.db, "member@provider-a.example", "Mia Member", false)
	mustMember(t, a.db, f.A.acc.Org.ID, memberU, models.RoleMember)
	f.member = loggedIn(a, "member of A", memberU)
	f.platform = loggedIn(a, "platform admin", mustUser(t, a.db, "root@suanli.example", "Pat Platform", true))
	f.anon = newActor(a, "anonymous")
	mk := func(p *providerFixture, name string) (dc, node, offer int64) {
		n, _ := p.addNode(t, name)
		o, err := p.svc.CreateOffer(context.Background(), p.owner.user, p.acc.Provider.ID, providers.OfferInput{NodeID: n.ID, GPU: "a100-40g-sxm",
			MaxGPUs: 8, PricePerGPUHourFen: 900})
		if err != nil {
			t.Fatal(err)
		}
		return p.dc, n.ID, o.ID
	}
	f.dc, f.node, f.offer = mk(f.A, "a-node-1")
	f.bDC, f.bNode, f.bOffer = mk(f.B, "b-node-1")
	return f
}

// portalRow is one portal route: its path parameters (provider A's ids),
// the body of a POST, and the owner's status (members and platform admins
// may look at pages but change nothing).
type portalRow struct {
	route string
	ids   func(f *portalFixture) []any
	form  url.Values
	owner int
}

func (f *portalFixture) pidA() []any { return []any{f.A.pid()} }

// The portal's authorisation: anonymous visitors are sent to log in (a
// POST is 401); another provider's owner is told A does not exist (404);
// A's plain member and platform admins may look (200) but not change
// (403); A's owner may do both.
func TestProviderPortalAuthorisation(t *testing.T) {
	t.Parallel()
	f := newPortalFixture(t, newSQLiteApp(t))
	a := f.a
	node := func(f *portalFixture) []any { return []any{f.A.pid(), idParam(f.node)} }
	offer := func(f *portalFixture) []any { return []any{f.A.pid(), idParam(f.offer)} }
	dc := func(f *portalFixture) []any { return []any{f.A.pid(), idParam(f.dc)} }
	pid := func(f *portalFixture) []any { return f.pidA() }
	profile := url.Values{"company_name": {"Provider A"}, "contact_name": {"Wang"}, "contact_phone": {"+86 28 1234 5678"},
		"contact_email": {"owner@provider-a.example"}, "licence_no": {"91510100MA6CXXXX1X"}}
	dcForm := url.Values{"name": {"二号机房"}, "city": {"chengdu"}, "tier": {"Tier III"}, "uplink_gbps": {"10"}}
	offerForm := url.Values{"gpu": {"a100-40g-sxm"}, "node_id": {"NODE"}, "max_gpus": {"4"}, "price": {"8"}, "sla_tiers": {"standard"}}
	rows := []portalRow{
		{routenames.ProviderDashboard, pid, nil, 200},
		{routenames.ProviderProfile, pid, nil, 200},
		{routenames.ProviderDatacenters, pid, nil, 200},
		{routenames.ProviderDatacentersEdit, dc, nil, 200},
		{routenames.ProviderNodes, pid, nil, 200},
		{routenames.ProviderNodesLive, pid, nil, 200},
		{routenames.ProviderNodesShow, node, nil, 200},
		{routenames.ProviderNodesLiveOne, node, nil, 200},
		{routenames.ProviderOffers, pid, nil, 200},
		{routenames.ProviderOffersNew, pid, nil, 200},
		{routenames.ProviderOffersEdit, offer, nil, 200},
		{routenames.ProviderCapacity, pid, nil, 200},
		{routenames.ProviderEarnings, pid, nil, 200},
		{routenames.ProviderStatement, pid, nil, 200},
		{routenames.ProviderStatementCSV, pid, nil, 200},
		{routenames.ProviderProfilePost, pid, profile, 303},
		{routenames.ProviderDatacentersCreate, pid, dcForm, 303},
		{routenames.ProviderDatacentersUpdate, dc, dcForm, 303},
		{routenames.ProviderNodesCreate, pid, url.Values{"datacenter_id": {"DC"}, "name": {"a-node-2"}}, 201},
		{routenames.ProviderNodesStatus, node, url.Values{"status": {"draining"}}, 303},
		{routenames.ProviderNodesToken, node, url.Values{}, 201},
		{routenames.ProviderOffersCreate, pid, offerForm, 303},
		{routenames.ProviderOffersUpdate, offer, offerForm, 303},
		{routenames.ProviderOffersStatus, offer, url.Values{"status": {"paused"}}, 303},
		// No Stripe in tests: past the guard, Connect is unavailable.
		{routenames.ProviderConnect, pid, url.Values{}, 503},
		{routenames.ProviderConnectReturn, pid, nil, 303},
	}
	for _, row := range rows {
		t.Run(row.route, func(t *testing.T) {
			path := a.url(row.route, row.ids(f)...)
			form := url.Values(nil)
			if row.form != nil {
				form = url.Values{}
				for k, vs := range row.form {
					for _, v := range vs {
						v = strings.NewReplacer("NODE", idParam(f.node), "DC", idParam(f.dc)).Replace(v)
						form.Add(k, v)
					}
				}
			}
			call := func(ac *actor) (*http.Response, string) {
				if form != nil {
					return ac.post(path, form)
				}
				return ac.do("GET", path, nil)
			}
			look, change := 200, 403
			if row.route == routenames.ProviderConnectReturn {
				look = 303
			}
			want := []struct {
				ac   *actor
				code int
			}{{f.anon, 303}, {f.B.owner, 404}, {f.member, look}, {f.platform, look}, {f.A.owner, row.owner}}
			if form != nil {
				want[0].code, want[2].code, want[3].code = 401, change, change
			}
			for _, w := range want {
				res, body := call(w.ac)
				if res.StatusCode != w.code {
					t.Errorf("%s: %d, want %d: %s", w.ac.name, res.StatusCode, w.code, snippet(body))
				}
				if w.ac == f.anon && form == nil && !strings.HasPrefix(res.Header.Get("Location"), "/login") {
					t.Errorf("anonymous: sent to %q, not to log in", res.Header.Get("Location"))
				}
				if w.ac == f.B.owner && strings.Contains(body, "Provider A") {
					t.Errorf("provider B's owner sees provider A's name")
				}
			}
		})
	}
	// Nothing the refused actors sent changed A: one node added and one
	// offer created, both by the owner.
	ns, _ := f.A.svc.Nodes(context.Background(), f.A.owner.user, f.A.acc.Provider.ID)
	os, _ := f.A.svc.Offers(context.Background(), f.A.owner.user, f.A.acc.Provider.ID)
	must(t, len(ns) == 2 && len(os) == 2, "provider A has %d nodes and %d offers, want 2 and 2", len(ns), len(os))
}

// A provider never reaches another provider's node, offer or datacentre
// through its own portal: the ids of B's things under A's id are 404, and
// nothing of B's changes.
func TestProviderPortalCrossProviderIDs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPortalFixture(t, newApp(t, db))
		a := f.a
		own := f.A.pid()
		for _, c := range []struct {
			method, route string
			ids           []any
			form          url.Values
		}{
			{"GET", routenames.ProviderNodesShow, []any{own, idParam(f.bNode)}, nil},
			{"GET", routenames.ProviderNodesLiveOne, []any{own, idParam(f.bNode)}, nil},
			{"POST", routenames.ProviderNodesStatus, []any{own, idParam(f.bNode)}, url.Values{"status": {"removed"}}},
			{"POST", routenames.ProviderNodesToken, []any{own, idParam(f.bNode)}, url.Values{}},
			{"GET", routenames.ProviderOffersEdit, []any{own, idParam(f.bOffer)}, nil},
			{"POST", routenames.ProviderOffersUpdate, []any{own, idParam(f.bOffer)}, url.Values{"price": {"1"}, "max_gpus": {"1"}}},
			{"POST", routenames.ProviderOffersStatus, []any{own, idParam(f.bOffer)}, url.Values{"status": {"paused"}}},
			{"GET", routenames.ProviderDatacentersEdit, []any{own, idParam(f.bDC)}, nil},
			{"POST", routenames.ProviderDatacentersUpdate, []any{own, idParam(f.bDC)}, url.Values{"name": {"hijacked"}, "city": {"chengdu"}}},
			// B's provider id: B's statement, CSV and node are B's alone.
			{"GET", routenames.ProviderEarnings, []any{f.B.pid()}, nil},
			{"GET", routenames.ProviderStatementCSV, []any{f.B.pid()}, nil},
			{"GET", routenames.ProviderNodesShow, []any{f.B.pid(), idParam(f.bNode)}, nil},
		} {
			var res *http.Response
			var body string
			if c.method == "POST" {
				res, body = f.A.owner.post(a.url(c.route, c.ids...), c.form)
			} else {
				res, body = f.A.owner.do("GET", a.url(c.route, c.ids...), nil)
			}
			if res.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s as A's owner: %d, want 404: %s", c.method, a.url(c.route, c.ids...), res.StatusCode, snippet(body))
			}
			if strings.Contains(body, "b-node-1") || strings.Contains(body, "snr_") {
				t.Errorf("%s leaks provider B's node or a token", c.route)
			}
		}
		var n models.Node
		a.db.R.First(&n, f.bNode)
		var o models.Offer
		a.db.R.First(&o, f.bOffer)
		var d models.Datacenter
		a.db.R.First(&d, f.bDC)
		must(t, n.Status == models.NodeActive && o.Status == models.OfferListed && o.PricePerGPUHourFen == 900 && d.NameZH != "hijacked",
			"provider B's things changed: node %s, offer %s %d, datacentre %q", n.Status, o.Status, o.PricePerGPUHourFen, d.NameZH)
	})
}
