package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/models"
	"suanli/providers"
	"suanli/routenames"
)

// providerAPICovered lists the provider API routes whose authorisation the
// tests in this file check (a provider never reaches another's records).
var providerAPICovered = []string{
	routenames.APIProviderDatacentersList,
	routenames.APIProviderDatacentersCreate,
	routenames.APIProviderNodesList,
	routenames.APIProviderNodesCreate,
	routenames.APIProviderNodesShow,
	routenames.APIProviderOffersList,
	routenames.APIProviderOffersCreate,
	routenames.APIProviderOffersShow,
	routenames.APIProviderOffersUpdate,
}

// apiCall sends a JSON request with a bearer token ("" for none) and
// returns the status, the decoded body and the raw body.
func apiCall(a *app, token, method, path, body string) (int, map[string]any, string) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept-Language", "en")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return res.StatusCode, out, string(raw)
}

// providerAPIFixture is two verified providers, each with a datacentre, a
// node and an offer, a renter without a provider and a platform admin,
// each with an API token.
type providerAPIFixture struct {
	a                   *app
	tokA, tokB          string
	tokRenter, tokAdmin string
	provA, provB        *providers.Account
	dcB, nodeB, offerB  int64
	nodeTokB            string
	dcA, nodeA          int64
	offerA              int64
}

func newProviderAPIFixture(t *testing.T, db *models.DB) *providerAPIFixture {
	t.Helper()
	a := newApp(t, db)
	ctx := context.Background()
	svc := &accounts.Service{DB: db}
	p := &providers.Service{DB: db, BaseURL: "http://suanli.test"}
	f := &providerAPIFixture{a: a}
	token := func(u *models.User) string {
		plain, _, err := svc.CreateAPIToken(ctx, u, "test")
		if err != nil {
			t.Fatal(err)
		}
		return plain
	}
	ownerA := mustUser(t, db, "a@prov-a.example", "Owner A", false)
	ownerB := mustUser(t, db, "b@prov-b.example", "Owner B", false)
	renter := mustUser(t, db, "renter@example.com", "Renter", false)
	admin := mustUser(t, db, "root@suanli.example", "Admin", true)
	var err error
	if f.provA, err = p.CreateVerified(ctx, ownerA, "Provider A"); err != nil {
		t.Fatal(err)
	}
	if f.provB, err = p.CreateVerified(ctx, ownerB, "Provider B"); err != nil {
		t.Fatal(err)
	}
	f.tokA, f.tokB, f.tokRenter, f.tokAdmin = token(ownerA), token(ownerB), token(renter), token(admin)
	for _, side := range []struct {
		tok             string
		dc, node, offer *int64
		nodeTok         *string
	}{{f.tokA, &f.dcA, &f.nodeA, &f.offerA, nil}, {f.tokB, &f.dcB, &f.nodeB, &f.offerB, &f.nodeTokB}} {
		st, out, raw := apiCall(a, side.tok, "POST", a.url(routenames.APIProviderDatacentersCreate), `{"name":"机房","city":"chengdu","district":"高新区"}`)
		must(t, st == 201 && out["slug"] != "", "create datacentre: %d %s", st, raw)
		*side.dc = int64(out["id"].(float64))
		st, out, raw = apiCall(a, side.tok, "POST", a.url(routenames.APIProviderNodesCreate), `{"datacenter_id":`+idParam(*side.dc)+`,"name":"gpu-host-1"}`)
		must(t, st == 201 && strings.HasPrefix(out["token"].(string), "snr_"), "create node: %d %s", st, raw)
		*side.node = int64(out["id"].(float64))
		if side.nodeTok != nil {
			*side.nodeTok = out["token"].(string)
		}
		st, out, raw = apiCall(a, side.tok, "POST", a.url(routenames.APIProviderOffersCreate),
			`{"node_id":`+idParam(*side.node)+`,"gpu":"a100-40g-sxm","gpus":8,"price_per_gpu_hour_fen":900}`)
		must(t, st == 201 && out["awaiting_node"] == true && out["listed"] == false, "create offer: %d %s", st, raw)
		*side.offer = int64(out["id"].(float64))
	}
	return f
}

func TestProviderAPIAuthorisation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProviderAPIFixture(t, db)
		a := f.a
		nodeB, offerB := a.url(routenames.APIProviderNodesShow, idParam(f.nodeB)), a.url(routenames.APIProviderOffersShow, idParam(f.offerB))
		patchB := a.url(routenames.APIProviderOffersUpdate, idParam(f.offerB))

		// Anonymous callers are asked to authenticate, on every route.
		for _, r := range []struct{ method, path, body string }{
			{"GET", a.url(routenames.APIProviderDatacentersList), ""},
			{"POST", a.url(routenames.APIProviderDatacentersCreate), `{"name":"x","city":"chengdu"}`},
			{"GET", a.url(routenames.APIProviderNodesList), ""},
			{"POST", a.url(routenames.APIProviderNodesCreate), `{"datacenter_id":1,"name":"x"}`},
			{"GET", nodeB, ""},
			{"GET", a.url(routenames.APIProviderOffersList), ""},
			{"POST", a.url(routenames.APIProviderOffersCreate), `{"node_id":1}`},
			{"GET", offerB, ""},
			{"PATCH", patchB, `{"status":"paused"}`},
		} {
			// Without credentials a write meets the CSRF check first (403);
			// a read, or a bad bearer token, is asked to authenticate.
			st, out, raw := apiCall(a, "", r.method, r.path, r.body)
			errObj, _ := out["error"].(map[string]any)
			if (r.method == "GET" && st != 401) || (st != 401 && st != 403) || errObj["code"] == nil {
				t.Errorf("anonymous %s %s: %d %s", r.method, r.path, st, raw)
			}
			st, out, raw = apiCall(a, "snt_not-a-token", r.method, r.path, r.body)
			errObj, _ = out["error"].(map[string]any)
			if st != 401 || errObj["code"] != "unauthorised" {
				t.Errorf("bad token %s %s: %d %s", r.method, r.path, st, raw)
			}
		}

		// Provider A reaches none of B's records, exactly as if they did not exist.
		for _, r := range []struct{ name, method, path, body string }{
			{"B's node", "GET", nodeB, ""},
			{"a missing node", "GET", a.url(routenames.APIProviderNodesShow, "999999"), ""},
			{"B's offer", "GET", offerB, ""},
			{"patch B's offer", "PATCH", patchB, `{"status":"paused"}`},
			{"B's node list", "GET", a.url(routenames.APIProviderNodesList) + "?provider_id=" + idParam(f.provB.Provider.ID), ""},
			{"B's offer list", "GET", a.url(routenames.APIProviderOffersList) + "?provider_id=" + idParam(f.provB.Provider.ID), ""},
			{"B's datacentres", "GET", a.url(routenames.APIProviderDatacentersList) + "?provider_id=" + idParam(f.provB.Provider.ID), ""},
			{"a datacentre for B", "POST", a.url(routenames.APIProviderDatacentersCreate), `{"provider_id":` + idParam(f.provB.Provider.ID) + `,"name":"x","city":"chengdu"}`},
			{"a node in B's datacentre", "POST", a.url(routenames.APIProviderNodesCreate), `{"datacenter_id":` + idParam(f.dcB) + `,"name":"evil"}`},
			{"an offer on B's node", "POST", a.url(routenames.APIProviderOffersCreate), `{"node_id":` + idParam(f.nodeB) + `,"gpu":"a100-40g-sxm","gpus":1,"price_per_gpu_hour_fen":1}`},
		} {
			st, _, raw := apiCall(a, f.tokA, r.method, r.path, r.body)
			if st != 404 || strings.Contains(raw, f.nodeTokB) {
				t.Errorf("provider A, %s: %d %s; want 404", r.name, st, raw)
			}
		}
		// A node's detail never carries its token, not even for its owner.
		st, out, raw := apiCall(a, f.tokB, "GET", nodeB, "")
		if st != 200 || out["name"] != "gpu-host-1" || strings.Contains(raw, f.nodeTokB) || strings.Contains(raw, "snr_") {
			t.Errorf("provider B's own node: %d %s", st, raw)
		}
		var o models.Offer
		db.R.First(&o, f.offerB)
		if o.Status != models.OfferListed {
			t.Errorf("B's offer after A's patch: %s", o.Status)
		}
		var nodes int64
		db.R.Model(&models.Node{}).Where("name = ?", "evil").Count(&nodes)
		if nodes != 0 {
			t.Error("A created a node in B's datacentre")
		}

		// A renter with no provider learns nothing and creates nothing.
		for _, r := range []struct{ method, path, body string }{
			{"GET", a.url(routenames.APIProviderNodesList), ""},
			{"GET", a.url(routenames.APIProviderOffersList), ""},
			{"GET", a.url(routenames.APIProviderDatacentersList), ""},
			{"POST", a.url(routenames.APIProviderDatacentersCreate), `{"name":"x","city":"chengdu"}`},
			{"GET", nodeB, ""},
			{"PATCH", patchB, `{"status":"paused"}`},
		} {
			if st, _, raw := apiCall(a, f.tokRenter, r.method, r.path, r.body); st != 404 && st != 403 {
				t.Errorf("renter %s %s: %d %s", r.method, r.path, st, raw)
			}
		}

		// A platform admin reads any provider's records but changes nothing.
		for _, path := range []string{nodeB, offerB, a.url(routenames.APIProviderNodesList) + "?provider_id=" + idParam(f.provB.Provider.ID),
			a.url(routenames.APIProviderOffersList) + "?provider_id=" + idParam(f.provB.Provider.ID),
			a.url(routenames.APIProviderDatacentersList) + "?provider_id=" + idParam(f.provB.Provider.ID)} {
			if st, _, raw := apiCall(a, f.tokAdmin, "GET", path, ""); st != 200 || strings.Contains(raw, f.nodeTokB) {
				t.Errorf("platform admin GET %s: %d %s", path, st, raw)
			}
		}
		if st, _, raw := apiCall(a, f.tokAdmin, "PATCH", patchB, `{"status":"paused"}`); st != 403 {
			t.Errorf("platform admin patching an offer: %d %s", st, raw)
		}

		// The owner's own calls work: list, patch, and bad input is a 4xx.
		st, out, raw = apiCall(a, f.tokB, "GET", a.url(routenames.APIProviderNodesList), "")
		if nodes, _ := out["nodes"].([]any); st != 200 || len(nodes) != 1 {
			t.Errorf("B's nodes: %d %s", st, raw)
		}
		st, out, raw = apiCall(a, f.tokB, "PATCH", patchB, `{"status":"paused","price_per_gpu_hour_fen":1200,"weekly_price_per_gpu_fen":null}`)
		if st != 200 || out["status"] != "paused" || out["price_per_gpu_hour_fen"] != float64(1200) {
			t.Errorf("B pausing its offer: %d %s", st, raw)
		}
		for _, body := range []string{`{"status":"gone"}`, `{"unknown":1}`, `not json`, `{"price_per_gpu_hour_fen":-1}`} {
			if st, out, raw := apiCall(a, f.tokB, "PATCH", patchB, body); st < 400 || st >= 500 || out["error"] == nil {
				t.Errorf("B patching with %s: %d %s", body, st, raw)
			}
		}
		if st, out, raw := apiCall(a, f.tokB, "POST", a.url(routenames.APIProviderOffersCreate), `{"node_id":`+idParam(f.nodeB)+`,"gpu":"nope","gpus":0}`); st != 422 ||
			len(out["error"].(map[string]any)["fields"].([]any)) < 3 {
			t.Errorf("B creating a bad offer: %d %s", st, raw)
		}
	})
}
