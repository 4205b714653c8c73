package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/handlers/alertvm"
	"suanli/models"
	"suanli/routenames"
)

// runningRental stores a rental of the offer running on its node at
// fenPerHour (one GPU, no discount), as provisioning leaves it.
func runningRental(t *testing.T, db *models.DB, orgID, userID int64, o models.Offer, fenPerHour int64) int64 {
	t.Helper()
	now := db.Now().UTC()
	r := &models.Rental{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, NodeID: &o.NodeID, GPUs: 1, SLA: "standard",
		Term: "on_demand", Status: models.RentalRunning, SSHPublicKey: testSSHKey(t), WorkspaceID: "ws-alerts-" + idParam(userID),
		PricePerGPUHourFen: fenPerHour, RunningSince: &now, BilledUntil: &now, CreatedAt: now, UpdatedAt: now}
	if err := db.W.Create(r).Error; err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// The runway ("lasts about N hours at the current rate") on the wallet
// page and a running rental's page, in both languages; the alerts form
// refuses bad thresholds beside their field (422) and stores good ones;
// the thresholds crossed show on the wallet page and the console.
func TestSpendAlertsPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		const email = "alerts-pages@example.com"
		u, org := fundedRenter(t, db, email, testPassword, 6_000)
		ac := loginWith(a, "renter", email, testPassword)
		wallet := a.url(routenames.WalletShow, idParam(org))

		body := ac.page(t, wallet, "zh-CN", 200)
		contains(t, body, `id="wallet-runway"`, "当前没有运行中的按量实例或数据盘在扣费，余额不会减少。", `id="alerts-form"`,
			"消费限额：用到各限额的 50, 80, 100 % 时发邮件。", `name="limit_pcts" type="text" value="50, 80, 100"`)
		contains(t, ac.page(t, wallet, "en", 200), "Nothing running or stored draws on the balance now.")

		id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500) // ¥5 an hour: ¥60 lasts 12 hours
		contains(t, ac.page(t, wallet, "zh-CN", 200), "按当前消费速度（每小时 ¥5.00），余额约可用 12 小时。", "1 个运行中的实例：每小时 ¥5.00")
		contains(t, ac.page(t, wallet, "en", 200), "At the current rate (¥5.00 an hour) the balance lasts about 12 hours.")
		rental := a.url(routenames.RentalsShow, idParam(id))
		contains(t, ac.page(t, rental, "zh-CN", 200), `id="rental-runway"`, "¥60.00", "按当前消费速度（每小时 ¥5.00），余额约可用 12 小时。")
		contains(t, ac.page(t, rental, "en", 200), `id="rental-runway"`, "At the current rate (¥5.00 an hour) the balance lasts about 12 hours.", "1 running rental: ¥5.00 an hour")
		// The live section, which the page polls, brings it up to date.
		contains(t, ac.page(t, a.url(routenames.RentalsLive, idParam(id)), "zh-CN", 200), `id="rental-runway"`, "余额约可用 12 小时。")

		alerts := a.url(routenames.OrgsAlerts, idParam(org))
		for name, c := range map[string]struct {
			form  url.Values
			field string
		}{
			"a percentage over 100":  {url.Values{"limit_pcts": {"50, 120"}}, "limit_pcts"},
			"words":                  {url.Values{"limit_pcts": {"half"}}, "limit_pcts"},
			"six thresholds":         {url.Values{"limit_pcts": {"10,20,30,40,50,60"}}, "limit_pcts"},
			"a low balance of words": {url.Values{"low_balance": {"a hundred"}}, "low_balance"},
			"a low balance of 0":     {url.Values{"low_balance": {"0"}}, "low_balance"},
			"0 hours":                {url.Values{"runway_hours": {"0"}}, "runway_hours"},
			"a fraction of an hour":  {url.Values{"runway_hours": {"1.5"}}, "runway_hours"},
			"a month and a day":      {url.Values{"runway_hours": {"745"}}, "runway_hours"},
		} {
			res, page := ac.post(alerts, c.form, "Accept-Language", "en")
			if res.StatusCode != http.StatusUnprocessableEntity || fieldMessage(page, c.field) == "" {
				t.Errorf("%s: %d, message beside %s %q", name, res.StatusCode, c.field, fieldMessage(page, c.field))
			}
		}
		res, page := ac.post(alerts, url.Values{"limit_pcts": {"80%"}, "low_balance": {"100"}, "runway_hours": {"24"}})
		must(t, res.StatusCode == http.StatusSeeOther, "save: %d %s", res.StatusCode, snippet(page))
		body = ac.page(t, wallet, "zh-CN", 200)
		contains(t, body, `id="wallet-alert-list"`, "余额 ¥60.00，低于提醒线 ¥100.00。", "余额约可用 12 小时。 少于提醒线 24 小时。",
			"消费限额：用到各限额的 80 % 时发邮件。", "余额：低于 ¥100.00 时发邮件。", `name="runway_hours" type="text" value="24"`)
		console := ac.page(t, a.url(routenames.Console), "en", 200)
		contains(t, console, `id="console-alerts"`, "The balance, ¥60.00, is below the alert at ¥100.00.")

		// A plain member sees the alerts and no form, and may not set them.
		other := mustUser(t, db, "alerts-member@example.com", "Member", false)
		mustMember(t, db, org, other, models.RoleMember)
		mem := loginWith(a, "member", "alerts-member@example.com", testPassword)
		body = mem.page(t, wallet, "zh-CN", 200)
		contains(t, body, "余额 ¥60.00，低于提醒线 ¥100.00。")
		must(t, !strings.Contains(body, `id="alerts-form"`), "a member is shown the alerts form")
		res, _ = mem.post(alerts, url.Values{"limit_pcts": {"10"}})
		must(t, res.StatusCode == http.StatusForbidden, "a member's post: %d", res.StatusCode)
	})
}

// The API: the wallet's runway and the thresholds crossed; the settings
// read and set, bad values 422 naming the field, a bad body 400, fields
// left out unchanged.
func TestSpendAlertsAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, _ := idemRenter(t, a, "alerts-api@example.com")
		u, err := db.UserByEmail(context.Background(), "alerts-api@example.com")
		must(t, err == nil, "user: %v", err)
		runningRental(t, db, org, u.ID, rtxOffer(t, db), 2_000) // ¥10,000 at ¥20 an hour: 500 hours
		get := func(path string) (int, string) {
			res, body := a.get(path, "Authorization", "Bearer "+token)
			return res.StatusCode, body
		}
		st, body := get("/api/v1/wallet")
		must(t, st == 200, "wallet: %d %s", st, body)
		w := decode[struct {
			Runway alertvm.API        `json:"runway"`
			Alerts []alertvm.AlertAPI `json:"alerts"`
		}](t, body)
		must(t, w.Runway.FenPerHour == 2_000 && w.Runway.Rentals == 1 && w.Runway.LastsSeconds != nil && *w.Runway.LastsSeconds == 500*3600 && len(w.Alerts) == 0,
			"the runway: %s", body)

		st, body = get("/api/v1/wallet/alerts")
		must(t, st == 200 && strings.Contains(body, `"limit_pcts":[50,80,100]`) && strings.Contains(body, `"low_balance_fen":null`) && strings.Contains(body, `"runway_hours":null`),
			"the defaults: %d %s", st, body)
		for name, c := range map[string]struct {
			body, param string
			status      int
		}{
			"a threshold of 0":       {`{"limit_pcts":[0,50]}`, "limit_pcts", 422},
			"thresholds as text":     {`{"limit_pcts":"50,80"}`, "limit_pcts", 422},
			"a negative low balance": {`{"low_balance_fen":-1}`, "low_balance_fen", 422},
			"a fraction of fen":      {`{"low_balance_fen":10.5}`, "low_balance_fen", 422},
			"a runway of a year":     {`{"runway_hours":8760}`, "runway_hours", 422},
			"not JSON":               {`limit_pcts=50`, "body", 400},
			"an unknown field":       {`{"limit_pct":[50]}`, "body", 400},
		} {
			st, _, body, _ := idemPost(a, "/api/v1/wallet/alerts", token, "", c.body)
			code, param, _ := errorCode(t, body)
			if st != c.status || code != "invalid" || param != c.param {
				t.Errorf("%s: %d %s %s, want %d naming %s", name, st, code, param, c.status, c.param)
			}
		}
		st, _, body, _ = idemPost(a, "/api/v1/wallet/alerts", token, "", `{"limit_pcts":[100,50],"low_balance_fen":1000000000,"runway_hours":720}`)
		must(t, st == 422, "a low balance over the top-up limit: %d %s", st, body)
		st, _, body, _ = idemPost(a, "/api/v1/wallet/alerts", token, "", `{"limit_pcts":[100,50],"low_balance_fen":2000000,"runway_hours":720}`)
		must(t, st == 200 && strings.Contains(body, `"limit_pcts":[50,100],"low_balance_fen":2000000,"runway_hours":720`), "set: %d %s", st, body)
		st, _, body, _ = idemPost(a, "/api/v1/wallet/alerts", token, "", `{"low_balance_fen":null}`)
		must(t, st == 200 && strings.Contains(body, `"limit_pcts":[50,100],"low_balance_fen":null,"runway_hours":720`), "one field: %d %s", st, body)

		st, body = get("/api/v1/wallet")
		must(t, st == 200 && strings.Contains(body, `"alerts":[{"kind":"runway","user_id":null,"threshold":720,"limit_fen":null,"used_fen":1000000}]`),
			"500 hours is less than 720: %s", body)
	})
}
