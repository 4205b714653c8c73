package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"suanli/apiclient"
	"suanli/dbtest"
	"suanli/models"
	"suanli/openapi"
)

// The client generated from the OpenAPI document (package apiclient)
// talks to the real router: it searches offers without a token, reads the
// caller, the wallet and the rentals with one, rents, and every answer
// parses into its typed model with the values the server holds. Each
// answer is also checked against the 3.0 form the client was generated
// from, by kin-openapi, so that form describes what the server sends as
// the 3.1 one does (validateAPI checks that).
func TestGeneratedClientAgainstTheRouter(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		ctx := context.Background()
		// A funded renter with a token, and the RTX 4090 demo offer's
		// GPUs free to rent.
		org, token, _ := idemRenter(t, a, "client@example.com")
		u, err := a.db.UserByEmail(ctx, "client@example.com")
		must(t, err == nil, "the renter: %v", err)
		rtx := rtxOffer(t, a.db)
		doc30 := loadDocument30(t)

		anon, err := apiclient.NewClientWithResponses(a.srv.URL)
		must(t, err == nil, "client: %v", err)
		c, err := apiclient.NewClientWithResponses(a.srv.URL, apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
		must(t, err == nil, "client: %v", err)

		perPage := apiclient.PerPage(5)
		offers, err := anon.ListOffersWithResponse(ctx, &apiclient.ListOffersParams{PerPage: &perPage, Sort: ptr("price"), Available: ptr(true)})
		must(t, err == nil, "listOffers: %v", err)
		must(t, offers.StatusCode() == http.StatusOK && offers.JSON200 != nil, "listOffers: %d %s", offers.StatusCode(), offers.Body)
		check30(t, doc30, "/api/v1/offers", offers.StatusCode(), offers.Body)
		list := offers.JSON200
		must(t, list.Total > 0 && len(list.Offers) > 0 && len(list.Offers) <= 5 && list.PerPage == 5 && list.Page == 1,
			"listOffers: total %d, %d offers, page %d of %d", list.Total, len(list.Offers), list.Page, list.PerPage)
		for i, o := range list.Offers {
			must(t, o.Id > 0 && o.AvailableGpus > 0 && o.Gpu.Slug != "" && o.Datacenter.City != "" && o.Currency == "cny" && o.PricePerGpuHourFen > 0,
				"offer %d: %+v", i, o)
			if i > 0 && list.Offers[i-1].PricePerGpuHourFen > o.PricePerGpuHourFen {
				t.Fatalf("offers not by price: %d then %d", list.Offers[i-1].PricePerGpuHourFen, o.PricePerGpuHourFen)
			}
		}
		// The offer to rent, found by the filters the CLI would use.
		found, err := anon.ListOffersWithResponse(ctx, &apiclient.ListOffersParams{Gpu: &[]string{"rtx-4090"}, City: ptr("chengdu")})
		must(t, err == nil && found.JSON200 != nil, "listOffers by GPU and city: %v %d %s", err, found.StatusCode(), found.Body)
		var offer apiclient.Offer
		for _, o := range found.JSON200.Offers {
			must(t, o.Gpu.Slug == "rtx-4090" && o.Datacenter.City == "chengdu", "listOffers by GPU and city gave %s in %s", o.Gpu.Slug, o.Datacenter.City)
			if o.Id == int(rtx.ID) {
				offer = o
			}
		}
		must(t, offer.Id != 0 && offer.PricePerGpuHourFen == int(rtx.PricePerGPUHourFen), "the RTX 4090 offer %d is not among %d offers (or its price differs): %+v",
			rtx.ID, len(found.JSON200.Offers), offer)

		me, err := c.GetMeWithResponse(ctx)
		must(t, err == nil && me.JSON200 != nil, "getMe: %v %d %s", err, me.StatusCode(), me.Body)
		check30(t, doc30, "/api/v1/me", me.StatusCode(), me.Body)
		must(t, me.JSON200.Id == int(u.ID) && me.JSON200.Email == "client@example.com" && me.JSON200.Name == "Li Lei",
			"getMe: %+v", me.JSON200)
		must(t, len(me.JSON200.Orgs) == 1 && me.JSON200.Orgs[0].Id == int(org) && me.JSON200.Orgs[0].Personal && me.JSON200.Orgs[0].Role == "owner",
			"getMe's organisations: %+v", me.JSON200.Orgs)

		orgID := apiclient.OrgId(org)
		wallet, err := c.GetWalletWithResponse(ctx, &apiclient.GetWalletParams{OrgId: &orgID})
		must(t, err == nil && wallet.JSON200 != nil, "getWallet: %v %d %s", err, wallet.StatusCode(), wallet.Body)
		check30(t, doc30, "/api/v1/wallet", wallet.StatusCode(), wallet.Body)
		must(t, wallet.JSON200.OrgId == int(org) && wallet.JSON200.BalanceFen == 1_000_000 && wallet.JSON200.Currency == "cny" &&
			wallet.JSON200.Runway.RunningRentals == 0 && wallet.JSON200.Runway.LastsSeconds == nil,
			"getWallet: %+v", wallet.JSON200)

		none, err := c.ListRentalsWithResponse(ctx, &apiclient.ListRentalsParams{OrgId: &orgID})
		must(t, err == nil && none.JSON200 != nil, "listRentals: %v %d %s", err, none.StatusCode(), none.Body)
		must(t, none.JSON200.Total == 0 && len(none.JSON200.Rentals) == 0 && none.JSON200.OrgId == int(org), "listRentals before renting: %+v", none.JSON200)

		key := testSSHKey(t)
		rented, err := c.CreateRentalWithResponse(ctx, nil, apiclient.RentalRequest{
			OfferId: ptr(offer.Id), Gpus: ptr(1), OrgId: ptr(int(org)), SshPublicKey: &key,
		})
		must(t, err == nil && rented.JSON201 != nil, "createRental: %v %d %s", err, rented.StatusCode(), rented.Body)
		check30(t, doc30, "/api/v1/rentals", rented.StatusCode(), rented.Body)

		rentals, err := c.ListRentalsWithResponse(ctx, &apiclient.ListRentalsParams{OrgId: &orgID})
		must(t, err == nil && rentals.JSON200 != nil, "listRentals: %v %d %s", err, rentals.StatusCode(), rentals.Body)
		check30(t, doc30, "/api/v1/rentals", rentals.StatusCode(), rentals.Body)
		must(t, rentals.JSON200.Total == 1 && len(rentals.JSON200.Rentals) == 1, "listRentals after renting: %+v", rentals.JSON200)
		r := rentals.JSON200.Rentals[0]
		must(t, r.Id == rented.JSON201.Id && r.OfferId == offer.Id && r.Gpus == 1 && r.OrgId == int(org) && r.Currency == "cny" && !r.CreatedAt.IsZero(),
			"the rental listed: %+v", r)

		// Without a token the caller is refused, and the error parses too.
		refused, err := anon.GetMeWithResponse(ctx)
		must(t, err == nil && refused.JSON401 != nil && refused.JSON401.Error.Code != "", "getMe without a token: %v %d %s", err, refused.StatusCode(), refused.Body)

		// The 3.0 form the client comes from is served, byte for byte.
		spec, err := anon.GetOpenAPI30WithResponse(ctx)
		must(t, err == nil && spec.StatusCode() == http.StatusOK, "getOpenAPI30: %v", err)
		must(t, bytes.Equal(spec.Body, openapi.Document30()) && (*spec.JSON200)["openapi"] == "3.0.3", "getOpenAPI30 serves another document")
	})
}

func ptr[T any](v T) *T { return &v }

// loadDocument30 loads the 3.0 form with kin-openapi.
func loadDocument30(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document30())
	must(t, err == nil, "load the 3.0 form: %v", err)
	return doc
}

// check30 validates an answer's body against the schema the 3.0 form
// gives for that path's GET (or POST, for a 201) and status.
func check30(t *testing.T, doc *openapi3.T, path string, status int, body []byte) {
	t.Helper()
	item := doc.Paths.Value(path)
	must(t, item != nil, "the 3.0 form has no %s", path)
	op := item.Get
	if status == http.StatusCreated {
		op = item.Post
	}
	resp := op.Responses.Status(status)
	must(t, resp != nil && resp.Value != nil, "the 3.0 form has no %d for %s", status, path)
	schema := resp.Value.Content.Get("application/json").Schema.Value
	var v any
	must(t, json.Unmarshal(body, &v) == nil, "%s: not JSON: %s", path, body)
	if err := schema.VisitJSON(v); err != nil {
		t.Fatalf("%s %d: the 3.0 form refuses the answer: %v\n%s", path, status, err, body)
	}
}
