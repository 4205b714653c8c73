package web_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/offers"
	"suanli/pricing"
	"suanli/routenames"
)

// The provider API's interruptible floor (public contract
// interruptible_floor_per_gpu_hour_fen): null or 1 up to the on-demand
// price, on create, read and update; anything else is refused naming the
// field and changes nothing; a change moves the offers version.
func TestProviderAPIInterruptibleFloor(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProviderAPIFixture(t, db)
		a := f.a
		const field = "interruptible_floor_per_gpu_hour_fen"
		count := func() float64 {
			st, out, raw := apiCall(a, f.tokA, "GET", a.url(routenames.APIProviderOffersList), "")
			must(t, st == 200, "list: %d %s", st, raw)
			return out["total"].(float64)
		}
		show := func(id int64) map[string]any {
			st, out, raw := apiCall(a, f.tokA, "GET", a.url(routenames.APIProviderOffersShow, idParam(id)), "")
			must(t, st == 200, "show: %d %s", st, raw)
			return out
		}
		must(t, show(f.offerA)[field] == nil, "an offer created without a floor has %v", show(f.offerA)[field])

		create := func(floor string) (int, map[string]any, string) {
			body := `{"node_id":` + idParam(f.nodeA) + `,"gpu":"a100-40g-sxm","gpus":8,"price_per_gpu_hour_fen":900`
			if floor != "" {
				body += `,"` + field + `":` + floor
			}
			return apiCall(a, f.tokA, "POST", a.url(routenames.APIProviderOffersCreate), body+"}")
		}
		before := count()
		for _, c := range []struct {
			floor  string
			status int
		}{{"0", 422}, {"-5", 422}, {"901", 422}, {`"450"`, 400}, {"4.5", 400}, {"true", 400}} {
			st, out, raw := create(c.floor)
			must(t, st == c.status, "floor %s: %d, want %d: %s", c.floor, st, c.status, raw)
			e, _ := out["error"].(map[string]any)
			must(t, e != nil && e["param"] == field && e["message"] != "", "floor %s: the error does not name the field: %s", c.floor, raw)
		}
		must(t, count() == before, "a refused offer was created")

		st, out, raw := create("null")
		must(t, st == 201 && out[field] == nil, "floor null: %d %s", st, raw)
		st, out, raw = create("900")
		must(t, st == 201 && out[field] == float64(900), "floor = on-demand price: %d %s", st, raw)
		st, out, raw = create("450")
		must(t, st == 201 && out[field] == float64(450), "floor 450: %d %s", st, raw)
		id := int64(out["id"].(float64))
		must(t, show(id)[field] == float64(450), "read back %v", show(id)[field])

		// Update: a floor moves the offers version, so the index reloads.
		patch := func(body string) (int, map[string]any, string) {
			return apiCall(a, f.tokA, "PATCH", a.url(routenames.APIProviderOffersUpdate, idParam(id)), body)
		}
		v1, _ := db.OffersVersion(context.Background())
		st, out, raw = patch(`{"` + field + `":300}`)
		must(t, st == 200 && out[field] == float64(300), "patch 300: %d %s", st, raw)
		v2, _ := db.OffersVersion(context.Background())
		must(t, v2 > v1, "the offers version did not move: %d → %d", v1, v2)
		st, out, raw = patch(`{"gpus":4}`)
		must(t, st == 200 && out[field] == float64(300), "a patch without the floor changed it: %d %s", st, raw)
		for _, c := range []struct {
			body   string
			status int
			param  string
		}{
			{`{"` + field + `":0}`, 422, field},
			{`{"` + field + `":-1}`, 422, field},
			{`{"` + field + `":901}`, 422, field},
			{`{"` + field + `":"x"}`, 400, field},
			// A lower on-demand price than the floor is refused on the floor.
			{`{"price_per_gpu_hour_fen":200}`, 422, field},
		} {
			st, out, raw := patch(c.body)
			e, _ := out["error"].(map[string]any)
			must(t, st == c.status && e != nil && e["param"] == c.param, "%s: %d, want %d naming %s: %s", c.body, st, c.status, c.param, raw)
		}
		o := show(id)
		must(t, o[field] == float64(300) && o["price_per_gpu_hour_fen"] == float64(900), "a refused patch changed the offer: %v %v", o[field], o["price_per_gpu_hour_fen"])
		st, out, raw = patch(`{"` + field + `":null}`)
		must(t, st == 200 && out[field] == nil, "patch null: %d %s", st, raw)
	})
}

// bidRental stores an interruptible rental of one GPU of the offer with
// the bid, in the status, as the rent path would.
func bidRental(t *testing.T, db *models.DB, orgID, userID int64, o models.Offer, bid int64, st models.RentalStatus) {
	t.Helper()
	now := time.Now().UTC()
	r := models.Rental{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, GPUs: 1, SLA: "standard", Term: pricing.OnDemand,
		Status: st, WorkspaceID: fmt.Sprintf("ws-bid-%d-%s", bid, st), PricePerGPUHourFen: bid, BidPerGPUHourFen: &bid,
		OffpeakPct: o.OffpeakDiscountPct, CreatedAt: now, UpdatedAt: now}
	if err := db.Tx(context.Background(), func(tx *gorm.DB) error { return rentalstore.InsertRental(tx, &r) }); err != nil {
		t.Fatal(err)
	}
}

// GET /api/v1/offers and the pages show each offer's floor and clearing
// price (the floor with free GPUs; the lowest live bid when every GPU of
// the node is held), sort by it and filter on it.
func TestOffersInterruptible(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		a := newApp(t, db)
		h100 := demoOffer(t, db, "h100-sxm", "cd-science-city")
		plain := demoOffer(t, db, "h100-sxm", "cd-hitech")
		apiOf := func(id int64) handlers.APIOffer {
			res, body := a.get("/api/v1/offers/" + idParam(id))
			must(t, res.StatusCode == 200, "show %d: %d %s", id, res.StatusCode, body)
			return decode[handlers.APIOffer](t, body)
		}
		listed := func(q string) apiList {
			res, body := a.get("/api/v1/offers?per_page=200" + q)
			must(t, res.StatusCode == 200, "list %s: %d %s", q, res.StatusCode, body)
			return decode[apiList](t, body)
		}
		find := func(l apiList, id int64) handlers.APIOffer {
			for _, o := range l.Offers {
				if o.ID == id {
					return o
				}
			}
			t.Fatalf("offer %d not listed", id)
			return handlers.APIOffer{}
		}
		free := offers.Interruptible{FloorFen: 1953, ClearingFen: 1953} // 55 % of ¥35.50
		res, raw := a.get("/api/v1/offers?per_page=200")
		must(t, strings.Contains(raw, `"interruptible":null`) && strings.Contains(raw, `"interruptible":{"floor_fen":1953,"clearing_fen":1953}`), "raw JSON: %.300s", raw)
		all := decode[apiList](t, raw)
		must(t, res.StatusCode == 200 && find(all, h100.ID).Interruptible != nil && *find(all, h100.ID).Interruptible == free, "list: %+v", find(all, h100.ID).Interruptible)
		must(t, find(all, plain.ID).Interruptible == nil, "an offer without a floor: %+v", find(all, plain.ID).Interruptible)
		must(t, apiOf(plain.ID).Interruptible == nil && *apiOf(h100.ID).Interruptible == free, "show: %+v", apiOf(h100.ID).Interruptible)

		// Bids on the node; then every GPU held: the lowest live bid.
		u := mustUser(t, db, "bidder@example.com", "Bidder", false)
		org, err := models.PersonalOrgOf(db.R, u.ID)
		must(t, err == nil, "org: %v", err)
		for _, b := range []struct {
			bid int64
			st  models.RentalStatus
		}{{2600, models.RentalRunning}, {2300, models.RentalRunning}, {2000, models.RentalStopping}, {1990, models.RentalInterrupted}} {
			bidRental(t, db, org, u.ID, h100, b.bid, b.st)
		}
		must(t, db.W.Exec(`UPDATE gpus SET state = ? WHERE node_id = ?`, models.GPUBusy, h100.NodeID).Error == nil, "hold GPUs")
		_, err = db.RefreshAvailability(ctx)
		must(t, err == nil, "availability: %v", err)
		_, err = a.index.Refresh(ctx)
		must(t, err == nil, "refresh: %v", err)
		held := offers.Interruptible{FloorFen: 1953, ClearingFen: 2300}
		must(t, *find(listed(""), h100.ID).Interruptible == held, "list when held: %+v", find(listed(""), h100.ID).Interruptible)
		must(t, *apiOf(h100.ID).Interruptible == held, "show when held: %+v", apiOf(h100.ID).Interruptible)

		// sort=interruptible_price: by clearing price, the others after,
		// each by price then id; interruptible=1 keeps the six.
		byBid := listed("&sort=interruptible_price")
		key := func(o handlers.APIOffer) int64 {
			if o.Interruptible == nil {
				return 1 << 62
			}
			return o.Interruptible.ClearingFen
		}
		must(t, byBid.Total == 43 && slices.IsSortedFunc(byBid.Offers, func(x, y handlers.APIOffer) int {
			return cmp.Or(cmp.Compare(key(x), key(y)), cmp.Compare(x.PricePerGPUHourFen, y.PricePerGPUHourFen), cmp.Compare(x.ID, y.ID))
		}), "sort=interruptible_price out of order")
		must(t, byBid.Offers[5].Interruptible != nil && byBid.Offers[6].Interruptible == nil, "the interruptible offers do not come first")
		only := listed("&interruptible=1&sort=interruptible_price")
		must(t, only.Total == 6, "interruptible=1: %d offers", only.Total)
		res, body := a.get("/api/v1/offers?interruptible=maybe")
		must(t, res.StatusCode == 400 && strings.Contains(body, `"param":"interruptible"`), "interruptible=maybe: %d %s", res.StatusCode, body)

		// The list page, both languages, the price cell and the order.
		_, zh := a.get("/offers?sort=interruptible_price", "Accept-Language", "zh-CN")
		contains(t, zh, ">竞价 ¥23.00<", "提供方底价 ¥19.53", `id="interruptible-sort-note"`, `<option value="interruptible_price" selected`, "仅显示接受竞价的报价")
		_, en := a.get("/offers?sort=interruptible_price&interruptible=1", "Accept-Language", "en")
		contains(t, en, "6 offers", ">bid ¥23.00<", "The provider&#39;s floor is ¥19.53", `name="interruptible" value="1" checked`)
		must(t, strings.Index(en, "bid ¥2.24") < strings.Index(en, "bid ¥23.00"), "the ¥2.24 floor (Tianfu RTX 4090) is not before the ¥23.00 clearing price")
		res, en = a.get("/offers?interruptible=maybe", "Accept-Language", "en")
		must(t, res.StatusCode == 200 && fieldMessage(en, "interruptible") != "", "a bad filter value is not explained: %d", res.StatusCode)

		// The offer page: prices, the rules stated, a link to a bid rent.
		_, zh = a.get(a.url(routenames.OffersShow, idParam(h100.ID)), "Accept-Language", "zh-CN")
		contains(t, zh, `id="interruptible"`, "竞价实例（可中断）", "当前竞价", "¥23.00", "¥19.53", "30 秒宽限期", "计费在宽限期开始时结束",
			"/workspace", "重新进行 NVML 健康检查", "竞价 ¥23.00/卡·时起", `href="/offers/`+idParam(h100.ID)+`/rent?term=interruptible"`)
		_, en = a.get(a.url(routenames.OffersShow, idParam(h100.ID)), "Accept-Language", "en")
		contains(t, en, "Interruptible rentals (bids)", "Clearing price now", "30 seconds to finish", "billing ends when that grace begins",
			"interrupts the lowest bid on the node", "unless you stop it")
		_, en = a.get(a.url(routenames.OffersShow, idParam(plain.ID)), "Accept-Language", "en")
		must(t, !strings.Contains(en, `id="interruptible"`), "an offer without a floor explains bids")
	})
}

// The TCO page can compare at interruptible prices and says that such
// capacity can be interrupted.
func TestTCOInterruptible(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	tcoURL := a.url(routenames.TCO)
	// The cheapest interruptible RTX 4090: Tianfu Software Park's floor,
	// 45 % of ¥4.98 = ¥2.24, with its 30 % off-peak discount.
	res, en := a.get(tcoURL+"?gpu=rtx-4090&interruptible=1", "Accept-Language", "en")
	must(t, res.StatusCode == 200, "status %d", res.StatusCode)
	contains(t, en, `id="tco-interruptible-note"`, "Interruptible capacity can be interrupted", `id="tco-bid-price">¥2.24`, "Rent interruptible (bids)",
		"Interruptible:", "Renting interruptible has cost as much as buying", "off-peak −30%", `name="interruptible" value="1" checked`)
	_, zh := a.get(tcoURL+"?gpu=rtx-4090&interruptible=1", "Accept-Language", "zh-CN")
	contains(t, zh, "竞价实例可能被中断", "竞价租用", "¥2.24")
	// Off, the on-demand price stands and nothing is said of bids.
	_, en = a.get(tcoURL+"?gpu=rtx-4090", "Accept-Language", "en")
	must(t, !strings.Contains(en, `id="tco-interruptible-note"`) && !strings.Contains(en, `id="tco-bid-price"`), "interruptible prices without the option")
	// A model without an interruptible offer says so and uses on demand.
	_, en = a.get(tcoURL+"?gpu=b200&interruptible=1", "Accept-Language", "en")
	contains(t, en, `id="tco-no-interruptible"`, `id="tco-interruptible-note"`, "¥85.00/GPU·h")
	res, en = a.get(tcoURL+"?interruptible=maybe", "Accept-Language", "en")
	must(t, res.StatusCode == 200 && fieldMessage(en, "interruptible") != "", "a bad value is not explained: %d %s", res.StatusCode, snippet(en))
}

// The portal's offer form takes the floor in yuan (empty: no bids) and
// explains a bad one beside the field, in both languages.
func TestProviderOfferFormFloor(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	f := newProviderFixture(t, a, "ops@bids.example", "Bids GPU")
	n, token := f.addNode(t, "bid-a100-01")
	heartbeatSimulated(t, a, token, "a100-40g-sxm", 8)
	form := url.Values{"gpu": {"a100-40g-sxm"}, "node_id": {idParam(n.ID)}, "max_gpus": {"8"}, "price": {"9.80"}, "sla_tiers": {"standard"},
		"interruptible_floor": {"12"}}
	create := a.url(routenames.ProviderOffersCreate, f.pid())
	res, body := f.owner.post(create, form)
	must(t, res.StatusCode == http.StatusUnprocessableEntity && strings.Contains(fieldMessage(body, "interruptible_floor"), "¥9.8 "),
		"a floor above the price: %d %q", res.StatusCode, fieldMessage(body, "interruptible_floor"))
	form.Set("interruptible_floor", "cheap")
	res, body = f.owner.post(create, form, "Accept-Language", "zh-CN")
	must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldMessage(body, "interruptible_floor") != "", "a floor not in yuan: %d", res.StatusCode)
	os, _ := f.svc.Offers(context.Background(), f.owner.user, f.acc.Provider.ID)
	must(t, len(os) == 0, "a refused offer was created")

	form.Set("interruptible_floor", "4.90")
	res, _ = f.owner.post(create, form)
	must(t, res.StatusCode == http.StatusSeeOther, "create: %d", res.StatusCode)
	os, _ = f.svc.Offers(context.Background(), f.owner.user, f.acc.Provider.ID)
	must(t, len(os) == 1 && os[0].InterruptibleFloorPerGPUHourFen != nil && *os[0].InterruptibleFloorPerGPUHourFen == 490, "stored %+v", os)
	body = f.owner.page(t, a.url(routenames.ProviderOffers, f.pid()), "zh-CN", 200)
	contains(t, body, "竞价 ¥4.90 起")
	edit := a.url(routenames.ProviderOffersEdit, f.pid(), idParam(os[0].ID))
	body = f.owner.page(t, edit, "en", 200)
	contains(t, body, `id="f-interruptible_floor" name="interruptible_floor"`, `value="4.9"`, "Interruptible floor")
	// Emptied on an edit: the offer takes no bids any more.
	form.Set("interruptible_floor", "")
	res, _ = f.owner.post(a.url(routenames.ProviderOffersUpdate, f.pid(), idParam(os[0].ID)), form)
	must(t, res.StatusCode == http.StatusSeeOther, "edit: %d", res.StatusCode)
	o, _ := f.svc.Offer(context.Background(), f.owner.user, f.acc.Provider.ID, os[0].ID)
	must(t, o.InterruptibleFloorPerGPUHourFen == nil, "emptied floor kept: %v", o.InterruptibleFloorPerGPUHourFen)
}
