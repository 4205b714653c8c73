package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/handlers/rentaljson"
	"suanli/models"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/bidviews"
)

// bidOffer makes the RTX 4090 demo offer interruptible with a floor of
// half its on-demand price, and reloads the offer index. It returns the
// offer as it is then.
func bidOffer(t *testing.T, a *app) models.Offer {
	t.Helper()
	o := rtxOffer(t, a.db)
	floor := o.PricePerGPUHourFen / 2
	must(t, a.db.W.Model(&models.Offer{}).Where("id = ?", o.ID).Update("interruptible_floor_per_gpu_hour_fen", floor).Error == nil, "set the floor")
	must(t, models.BumpOffersVersion(a.db.W) == nil, "bump the offers version")
	_, err := a.index.Refresh(context.Background())
	must(t, err == nil, "index: %v", err)
	o.InterruptibleFloorPerGPUHourFen = &floor
	return o
}

// apiToken is an API token of a funded renter.
func apiToken(t *testing.T, a *app, email string) (org int64, token string) {
	t.Helper()
	u, org := fundedRenter(t, a.db, email, testPassword, 1_000_000)
	token, _, err := (&accounts.Service{DB: a.db}).CreateAPIToken(context.Background(), u, "bids")
	must(t, err == nil, "token: %v", err)
	return org, token
}

// rentalJSON reads a rental through the API.
func rentalJSON(t *testing.T, a *app, token string, id int64) rentaljson.Rental {
	t.Helper()
	st, _, body := apiCall(a, token, "GET", a.url(routenames.APIRentalsShow, idParam(id)), "")
	must(t, st == http.StatusOK, "GET rental %d: %d %s", id, st, body)
	return decode[rentaljson.Rental](t, body)
}

// The API rents on a bid with term "interruptible" and
// bid_per_gpu_hour_fen, refuses every malformed or out-of-bounds bid
// naming the field (and rents nothing), raises a bid for its renter only,
// and shows an interrupted rental's status, reason and grace.
func TestBidsThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, base := idemRenter(t, a, "bidder@example.com")
		_, otherToken := apiToken(t, a, "outsider@example.com")
		_, odToken := apiToken(t, a, "ondemand@example.com")
		o := rtxOffer(t, db)
		with := func(extra string) string { return strings.TrimSuffix(base, "}") + "," + extra + "}" }
		refused := func(name, body string, wantStatus int, wantParam string) {
			t.Helper()
			st, _, out, err := idemPost(a, "/api/v1/rentals", token, "", body)
			code, param, _ := errorCode(t, out)
			if err != nil || st != wantStatus || param != wantParam {
				t.Errorf("rent %s: %d %s %s (%v), want %d naming %s", name, st, code, param, err, wantStatus, wantParam)
			}
		}

		// An offer without a floor takes no bids.
		refused("on an offer without a floor", with(`"term":"interruptible","bid_per_gpu_hour_fen":100`), http.StatusBadRequest, "term")
		o = bidOffer(t, a)
		floor := *o.InterruptibleFloorPerGPUHourFen
		refused("interruptible without a bid", with(`"term":"interruptible"`), http.StatusBadRequest, "bid_per_gpu_hour_fen")
		refused("interruptible with a null bid", with(`"term":"interruptible","bid_per_gpu_hour_fen":null`), http.StatusBadRequest, "bid_per_gpu_hour_fen")
		refused("a bid with a week", with(`"term":"week","bid_per_gpu_hour_fen":`+strconv.FormatInt(floor, 10)), http.StatusBadRequest, "bid_per_gpu_hour_fen")
		refused("a bid on demand", with(`"bid_per_gpu_hour_fen":`+strconv.FormatInt(floor, 10)), http.StatusBadRequest, "bid_per_gpu_hour_fen")
		refused("a bid below the floor", with(`"term":"interruptible","bid_per_gpu_hour_fen":`+strconv.FormatInt(floor-1, 10)), http.StatusBadRequest, "bid_per_gpu_hour_fen")
		refused("a bid above the on-demand price", with(`"term":"interruptible","bid_per_gpu_hour_fen":`+strconv.FormatInt(o.PricePerGPUHourFen+1, 10)), http.StatusBadRequest, "bid_per_gpu_hour_fen")
		refused("a bid as text", with(`"term":"interruptible","bid_per_gpu_hour_fen":"12"`), http.StatusBadRequest, "bid_per_gpu_hour_fen")
		refused("a bid with fen fractions", with(`"term":"interruptible","bid_per_gpu_hour_fen":12.5`), http.StatusBadRequest, "bid_per_gpu_hour_fen")
		must(t, rentalsOf(t, db, org) == 0, "refused bids rented: %d rentals", rentalsOf(t, db, org))

		// All four GPUs on a bid at the floor.
		all := strings.Replace(with(`"term":"interruptible","bid_per_gpu_hour_fen":`+strconv.FormatInt(floor, 10)), `"gpus":1`, `"gpus":4`, 1)
		st, _, body, err := idemPost(a, "/api/v1/rentals", token, "bid-1", all)
		must(t, err == nil && st == http.StatusCreated, "rent on a bid: %d %s (%v)", st, body, err)
		r := decode[rentaljson.Rental](t, body)
		must(t, r.Term == "interruptible" && r.BidPerGPUHourFen != nil && *r.BidPerGPUHourFen == floor && r.PricePerGPUHourFen == floor &&
			r.Interruption == nil && strings.Contains(body, `"interruption":null`), "the bid rental: %s", body)
		st, h, again, _ := idemPost(a, "/api/v1/rentals", token, "bid-1", all)
		must(t, st == http.StatusCreated && h.Get("Idempotent-Replayed") == "true" && again == body, "the same key again: %d %s", st, again)
		must(t, rentalsOf(t, db, org) == 1, "a replayed rent rented again: %d rentals", rentalsOf(t, db, org))

		// Raising: higher only, within the bounds, by its renter.
		bidPath := a.url(routenames.APIRentalsBid, idParam(r.ID))
		raise := func(tok, body string) (int, string, string) {
			st, _, out := apiCall(a, tok, "POST", bidPath, body)
			_, param, _ := errorCode(t, out)
			return st, param, out
		}
		for name, c := range map[string]string{"the same bid": strconv.FormatInt(floor, 10), "a lower bid": strconv.FormatInt(floor-1, 10),
			"above on demand": strconv.FormatInt(o.PricePerGPUHourFen+1, 10), "text": `"x"`, "null": "null"} {
			if st, param, out := raise(token, `{"bid_per_gpu_hour_fen":`+c+`}`); st != http.StatusBadRequest || param != "bid_per_gpu_hour_fen" {
				t.Errorf("raise to %s: %d %s %s, want 400 naming bid_per_gpu_hour_fen", name, st, param, out)
			}
		}
		if st, param, out := raise(token, `[1]`); st != http.StatusBadRequest || param != "body" {
			t.Errorf("raise with a list: %d %s %s", st, param, out)
		}
		if st, _, out := raise(otherToken, `{"bid_per_gpu_hour_fen":`+strconv.FormatInt(floor+1, 10)+`}`); st != http.StatusNotFound {
			t.Errorf("another organisation's raise: %d %s, want 404", st, out)
		}
		member := mustUser(t, db, "bid-member@example.com", "Member", false)
		mustMember(t, db, org, member, models.RoleMember)
		memberToken, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), member, "bids")
		must(t, err == nil, "token: %v", err)
		if st, _, out := raise(memberToken, `{"bid_per_gpu_hour_fen":`+strconv.FormatInt(floor+1, 10)+`}`); st != http.StatusForbidden {
			t.Errorf("another member's raise: %d %s, want 403", st, out)
		}
		must(t, *rentalJSON(t, a, token, r.ID).BidPerGPUHourFen == floor, "a refused raise changed the bid")
		raised := floor + 7
		st, _, body = apiCall(a, token, "POST", bidPath, `{"bid_per_gpu_hour_fen":`+strconv.FormatInt(raised, 10)+`}`)
		must(t, st == http.StatusOK, "raise: %d %s", st, body)
		r = decode[rentaljson.Rental](t, body)
		must(t, *r.BidPerGPUHourFen == raised && r.PricePerGPUHourFen == raised && strings.Contains(body, `"kind":"bid_raised"`), "after the raise: %s", body)

		// An on-demand renter takes a GPU: no GPU is free, so the bid gives
		// way (all of it: its four GPUs are one rental).
		st, _, body, err = idemPost(a, "/api/v1/rentals", odToken, "", base)
		must(t, err == nil && st == http.StatusCreated, "the on-demand rent: %d %s (%v)", st, body, err)
		od := decode[rentaljson.Rental](t, body)
		must(t, od.Term == "on_demand" && od.BidPerGPUHourFen == nil && od.Interruption == nil && strings.Contains(body, `"bid_per_gpu_hour_fen":null`),
			"the on-demand rental: %s", body)
		r = rentalJSON(t, a, token, r.ID)
		must(t, r.Status == "interrupted" && r.Interruption != nil, "the bid rental after the on-demand rent: %+v", r)
		in := r.Interruption
		must(t, in.Reason == "an on-demand rental took its GPUs" && in.Msg != nil && in.Msg.Key == "bids.reason.on_demand",
			"the interruption's reason: %+v", in)
		must(t, in.GraceUntil != nil && in.GraceUntil.Sub(in.At) == 30*time.Second, "the grace: %v → %v", in.At, in.GraceUntil)

		// A rental that is not on a bid has no bid to raise.
		if st, param, out := raise(odToken, `{"bid_per_gpu_hour_fen":1}`); st != http.StatusNotFound {
			t.Errorf("raise someone else's bid: %d %s %s", st, param, out)
		}
		st, _, out := apiCall(a, odToken, "POST", a.url(routenames.APIRentalsBid, idParam(od.ID)), `{"bid_per_gpu_hour_fen":`+strconv.FormatInt(o.PricePerGPUHourFen, 10)+`}`)
		_, param, _ := errorCode(t, out)
		must(t, st == http.StatusBadRequest && param == "bid_per_gpu_hour_fen", "raise an on-demand rental's bid: %d %s", st, out)

		// Stopped, it no longer resumes, and its bid is settled.
		st, _, body = apiCall(a, token, "POST", a.url(routenames.APIRentalsStop, idParam(r.ID)), "")
		must(t, st == http.StatusOK && decode[rentaljson.Rental](t, body).Status == "stopped", "stop the interrupted rental: %d %s", st, body)
		st, _, _ = raise(token, `{"bid_per_gpu_hour_fen":`+strconv.FormatInt(raised+1, 10)+`}`)
		must(t, st == http.StatusConflict, "raise a stopped rental's bid: %d", st)
	})
}

// The rent form offers the interruptible term only where the offer takes
// bids, prefilled and with its rules in both languages; a bad bid shows
// the form again with the message beside the field. The rental page shows
// the bid, its rules and a raise form, and an interrupted rental its
// status, reason and the ways on; the console shows both.
func TestBidPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		const email = "bid-pages@example.com"
		org, _, _ := idemRenter(t, a, email)
		_, odToken := apiToken(t, a, "bid-pages-od@example.com")
		o := rtxOffer(t, db)
		renter := loginWith(a, "renter", email, testPassword)
		// Every page read here is also checked for markup problems.
		pg := func(path, lang string) string {
			page := renter.page(t, path, lang, 200)
			if p := markupProblems(page); len(p) > 0 {
				t.Errorf("%s (%s): %v", path, lang, p)
			}
			return html.UnescapeString(page)
		}
		newPath := a.url(routenames.RentalsNew, idParam(o.ID))
		must(t, !strings.Contains(pg(newPath, "en"), `id="f-term-interruptible"`), "an offer without a floor offers bids")

		o = bidOffer(t, a)
		floor := *o.InterruptibleFloorPerGPUHourFen
		floorYuan := pricing.FenToYuanString(floor)
		zh := pg(newPath+"?term=interruptible", "zh-CN")
		contains(t, zh, `id="f-term-interruptible" checked`, "竞价（可中断）", `name="bid"`, "value=\""+bidviews.YuanValue(floor)+"\"",
			"底价 "+views.Yuan(floor)+"/卡·时", "按量 "+views.Yuan(o.PricePerGPUHourFen)+"/卡·时", "当前成交价 "+views.Yuan(floor), "30 秒宽限期", "/workspace 卷中的文件会保留", "除非您已将其停止")
		en := pg(newPath+"?term=interruptible", "en")
		contains(t, en, "Interruptible (bid)", "floor "+views.Yuan(floor)+"/GPU·h", "30 seconds to finish", "anything outside it is lost",
			"resumes by itself, with new NVML checks", "raise your bid")
		must(t, !strings.Contains(pg(newPath, "en"), `id="f-term-interruptible" checked`), "the interruptible term is chosen by default")

		rent := func(bid string, gpus int) (*http.Response, string) {
			res, page := renter.post(a.url(routenames.RentalsCreate, idParam(o.ID)), url.Values{"org_id": {idParam(org)}, "gpus": {strconv.Itoa(gpus)},
				"term": {"interruptible"}, "bid": {bid}, "sla": {"standard"}, "ssh_public_key": {testSSHKey(t)}})
			return res, html.UnescapeString(page)
		}
		for name, c := range map[string][2]string{
			"no number":         {"cheap", "Enter your bid in yuan per GPU-hour"},
			"no bid":            {"", "Enter your bid in yuan per GPU-hour"},
			"below the floor":   {pricing.FenToYuanString(floor - 1), "below this offer's floor of ¥" + floorYuan},
			"above on demand":   {pricing.FenToYuanString(o.PricePerGPUHourFen + 1), "above this offer's on-demand price"},
			"three decimals":    {"1.234", "Enter your bid in yuan per GPU-hour"},
			"a negative amount": {"-1", "Enter your bid in yuan per GPU-hour"},
		} {
			res, page := rent(c[0], 1)
			if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(fieldMessage(page, "bid"), c[1]) {
				t.Errorf("rent form with %s: %d, message beside the bid %q, want %q", name, res.StatusCode, fieldMessage(page, "bid"), c[1])
			}
		}
		must(t, rentalsOf(t, db, org) == 0, "refused bids rented: %d rentals", rentalsOf(t, db, org))
		res, page := rent(floorYuan, 4)
		must(t, res.StatusCode == http.StatusSeeOther, "rent on a bid through the form: %d %s", res.StatusCode, snippet(page))
		var r models.Rental
		must(t, db.R.Where("org_id = ?", org).First(&r).Error == nil, "the rental")
		must(t, r.BidPerGPUHourFen != nil && *r.BidPerGPUHourFen == floor && r.PricePerGPUHourFen == floor && r.Term == pricing.OnDemand, "the rental's bid: %+v", r)

		show := a.url(routenames.RentalsShow, idParam(r.ID))
		en = pg(show, "en")
		contains(t, en, `id="rental-bid"`, "Bid (interruptible)", views.Yuan(floor)+"/GPU·h", `id="bid-form"`, `name="bid"`, "Raise bid",
			"30 seconds to finish", "Interruptible (bid)")
		zh = pg(show, "zh-CN")
		contains(t, zh, "竞价", "提高出价", "30 秒宽限期", "竞价（可中断）")

		bidURL := a.url(routenames.RentalsBid, idParam(r.ID))
		raise := func(bid string) (*http.Response, string) {
			res, page := renter.post(bidURL, url.Values{"bid": {bid}})
			return res, html.UnescapeString(page)
		}
		res, page = raise(floorYuan)
		must(t, res.StatusCode == http.StatusUnprocessableEntity && strings.Contains(fieldMessage(page, "bid"), "can only be raised"),
			"raise to the same bid: %d, beside the field %q", res.StatusCode, fieldMessage(page, "bid"))
		must(t, !strings.Contains(page, `id="rental-action-error"`), "a refused raise's message is above the actions too")
		res, page = raise("lots")
		must(t, res.StatusCode == http.StatusUnprocessableEntity && strings.Contains(fieldMessage(page, "bid"), "Enter your bid"),
			"raise to no amount: %d %q", res.StatusCode, fieldMessage(page, "bid"))
		raised := floor + 10
		res, page = raise(pricing.FenToYuanString(raised))
		must(t, res.StatusCode == http.StatusSeeOther, "raise: %d %s", res.StatusCode, snippet(page))
		contains(t, pg(show, "en"), "your bid is now ¥"+pricing.FenToYuanString(raised), views.Yuan(raised)+"/GPU·h")

		// An on-demand renter takes a GPU: the bid rental is interrupted.
		st, _, body, err := idemPost(a, "/api/v1/rentals", odToken, "", `{"offer_id":`+idParam(o.ID)+`,"gpus":1,"ssh_public_key":"`+testSSHKey(t)+`"}`)
		must(t, err == nil && st == http.StatusCreated, "the on-demand rent: %d %s", st, body)
		must(t, rentalStatus(t, db, r.ID) == models.RentalInterrupted, "the bid rental is %s", rentalStatus(t, db, r.ID))
		zh = pg(show, "zh-CN")
		contains(t, zh, `data-status="interrupted"`, "已中断", `id="rental-interrupted"`, "原因：一个按需租用占用了它的 GPU", "会自动恢复",
			`id="rental-start"`, "立即恢复", `id="rental-stop"`, "停止后不再自动恢复", `id="bid-form"`)
		must(t, !strings.Contains(zh, `id="rental-start-no-gpu"`), "an interrupted rental offers a no-GPU start")
		en = pg(show, "en")
		contains(t, en, "Interrupted at", "Reason: an on-demand rental took its GPUs", "Resume now", "it no longer resumes by itself",
			"It resumes by itself, with new NVML checks, when GPUs are free at its bid")
		console := pg(a.url(routenames.Console), "zh-CN")
		contains(t, console, `data-status="interrupted"`, "已中断", "出价 "+views.Yuan(raised)+"/卡·时")
		// It waits to resume: among the live rentals, not the settled ones.
		row, liveAt, historyAt := strings.Index(console, `id="rental-`+idParam(r.ID)+`"`), strings.Index(console, `id="console-live"`), strings.Index(console, `id="console-history"`)
		must(t, row > liveAt && liveAt >= 0 && (historyAt < 0 || row < historyAt), "the interrupted rental is not among the live ones on the console")

		// Resuming now needs its four GPUs: one runs on demand.
		res, page = renter.post(a.url(routenames.RentalsStart, idParam(r.ID)), nil)
		must(t, res.StatusCode == http.StatusConflict && strings.Contains(page, `id="rental-action-error"`), "resume with a GPU on demand: %d %s", res.StatusCode, snippet(page))
		// Stopped, it no longer resumes.
		res, _ = renter.post(a.url(routenames.RentalsStop, idParam(r.ID)), nil)
		must(t, res.StatusCode == http.StatusSeeOther && rentalStatus(t, db, r.ID) == models.RentalStopped, "stop: %d %s", res.StatusCode, rentalStatus(t, db, r.ID))
		page = pg(show, "en")
		must(t, !strings.Contains(page, `id="bid-form"`) && strings.Contains(page, "Last interrupted"), "a stopped rental's bid section: %s", snippet(page))
	})
}
