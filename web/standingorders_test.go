package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/billing"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/orderstore"
	"suanli/routenames"
)

// mustStandingOrder stores an open standing order of the organisation,
// placed by the user with the email, and returns its id (the
// authorisation matrix's fixture orders).
func mustStandingOrder(f *matrixFixture, email string) string {
	f.a.t.Helper()
	u, err := f.a.db.UserByEmail(context.Background(), email)
	if err != nil {
		f.a.t.Fatal(err)
	}
	price := int64(100)
	now := f.a.db.Now().UTC()
	o := &orderstore.Order{OrgID: f.orgA.ID, UserID: u.ID, GPUModel: "b200", MaxPriceFen: &price, GPUs: 1, Action: orderstore.ActionNotify,
		SLA: "standard", Status: orderstore.Open, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	if err := f.a.db.Tx(context.Background(), func(tx *gorm.DB) error { return orderstore.Insert(tx, o) }); err != nil {
		f.a.t.Fatal(err)
	}
	return idParam(o.ID)
}

// ownerStandingOrder is an open order of org A that its owner placed.
func ownerStandingOrder(f *matrixFixture) []any {
	return []any{mustStandingOrder(f, "owner@pku.edu.cn")}
}

// standingOrderForm places an order for org A from the page's form.
var standingOrderForm = url.Values{"org_id": {"ORG_A"}, "gpu": {"b200"}, "gpus": {"1"}, "max_price": {"90"}, "action": {"notify"}, "expires_hours": {"24"}}

// standingOrderGone checks that the order the row cancelled is deleted:
// org A has no standing order left (its rows that place one are refused).
func standingOrderGone(t *testing.T, f *matrixFixture) {
	var n int64
	must(t, f.a.db.R.Model(&orderstore.Order{}).Where("org_id = ?", f.orgA.ID).Count(&n).Error == nil, "count")
	must(t, n == 0, "org A's standing orders: %d left, want the cancelled one gone", n)
}

// The page journey, without JavaScript: the page lists nothing and
// offers the form; a bad form is shown again (422) with the problem
// beside its field; a good one is placed, listed with its price, and
// cancelled; an order that failed shows its reason on the page and in
// the console's notices.
func TestStandingOrdersPages(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		u := mustUser(t, db, "so-renter@example.com", "Sam Renter", false)
		ac := loggedIn(a, "renter", u)
		res, body := ac.do("GET", a.url(routenames.StandingOrders), nil)
		must(t, res.StatusCode == 200, "GET /standing-orders: %d", res.StatusCode)
		contains(t, body, `id="so-form"`, `id="so-none-open"`, "How orders are matched")

		// A bad form: 422, the problem beside the field, nothing stored.
		bad := url.Values{"gpu": {"b200"}, "gpus": {"1"}, "max_price": {""}, "action": {"rent"}, "expires_hours": {"24"}, "ssh_public_key": {testSSHKey(t)}}
		res, body = ac.post(a.url(routenames.StandingOrdersCreate), bad)
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "a form without a price: %d %s", res.StatusCode, snippet(body))
		contains(t, body, `id="err-max_price" role="alert">Give the max price per GPU-hour`)
		var n int64
		db.R.Model(&orderstore.Order{}).Count(&n)
		must(t, n == 0, "%d orders stored from a refused form", n)

		// A good one: placed (no B200 free below ¥1), listed, cancelled.
		good := url.Values{"gpu": {"b200"}, "gpus": {"2"}, "max_price": {"1.50"}, "action": {"rent"}, "expires_hours": {"24"}, "ssh_public_key": {testSSHKey(t)},
			"city": {"frankfurt"}}
		res, body = ac.post(a.url(routenames.StandingOrdersCreate), good)
		must(t, res.StatusCode == http.StatusSeeOther, "the form: %d %s", res.StatusCode, snippet(body))
		var o orderstore.Order
		must(t, db.R.First(&o).Error == nil && o.Status == orderstore.Open && *o.MaxPriceFen == 150 && o.GPUs == 2 && o.City == "frankfurt",
			"the order placed: %+v", o)
		_, body = ac.do("GET", res.Header.Get("Location"), nil)
		contains(t, body, "is waiting for free GPUs", `id="so-`+idParam(o.ID)+`"`, "¥1.50", "Frankfurt", `id="so-cancel-`+idParam(o.ID)+`"`)
		res, _ = ac.post(a.url(routenames.StandingOrdersCancel, idParam(o.ID)), nil)
		must(t, res.StatusCode == http.StatusSeeOther, "cancel: %d", res.StatusCode)
		_, body = ac.do("GET", a.url(routenames.StandingOrders), nil)
		contains(t, body, "cancelled: it will not fire", `id="so-none-open"`)

		// With a B200 free and an empty wallet, an order fails at once and
		// says why, on the page and in the console's notices.
		var b200 models.Offer
		must(t, db.R.Where("gpu_model = ?", "b200").First(&b200).Error == nil, "the B200 offer")
		db.W.Model(&models.Node{}).Where("id = ?", b200.NodeID).Update("health", models.NodeHealthy)
		db.W.Model(&models.GPU{}).Where("node_id = ?", b200.NodeID).Updates(map[string]any{"health": models.GPUHealthy, "state": models.GPUFree})
		db.W.Model(&models.Offer{}).Where("id = ?", b200.ID).Update("available_gpus", 8)
		good.Set("max_price", "100")
		res, _ = ac.post(a.url(routenames.StandingOrdersCreate), good)
		must(t, res.StatusCode == http.StatusSeeOther, "the second order: %d", res.StatusCode)
		_, body = ac.do("GET", a.url(routenames.StandingOrders), nil)
		contains(t, body, "the rent was refused", "Starting needs a balance of at least", "Nothing was rented or charged.")
		_, body = ac.do("GET", a.url(routenames.StandingOrdersNotices), nil)
		contains(t, body, `id="so-notices"`, "Starting needs a balance of at least", "Open orders: 0.")
		_, body = ac.do("GET", a.url(routenames.Console), nil)
		contains(t, body, `id="console-standing-orders"`, `hx-get="`+a.url(routenames.StandingOrdersNotices)+`"`)

		// Funded, the same order rents: filled, its rental linked.
		orgs, _ := db.OrgsOfUser(context.Background(), u.ID)
		must(t, db.Tx(context.Background(), func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, orgs[0].Org.ID, 1_000_000, "promo_credit", "test funds", nil, nil, db.Now())
		}) == nil, "fund")
		res, _ = ac.post(a.url(routenames.StandingOrdersCreate), good)
		must(t, res.StatusCode == http.StatusSeeOther, "the third order: %d", res.StatusCode)
		_, body = ac.do("GET", a.url(routenames.StandingOrders), nil)
		contains(t, body, "placed and filled at once", "Rental #")
		must(t, strings.Count(body, `class="badge chip status-running"`) == 1, "one filled order on the page")
	})
}
