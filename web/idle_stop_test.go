package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/handlers/rentaljson"
	"suanli/models"
	"suanli/routenames"
)

// idleOf reads a rental's own idle-stop setting back.
func idleOf(t *testing.T, db *models.DB, id int64) models.IdleStop {
	t.Helper()
	r, err := db.RentalByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.IdleStop
}

// badIdleStops are idle_stop values the API refuses naming idle_stop.
var badIdleStops = map[string]string{
	"a threshold of 0":       `{"gpu_util_below_pct":0,"minutes":30}`,
	"a threshold over 100":   `{"gpu_util_below_pct":101,"minutes":30}`,
	"4 minutes":              `{"gpu_util_below_pct":10,"minutes":4}`,
	"more than a day":        `{"gpu_util_below_pct":10,"minutes":1441}`,
	"no minutes":             `{"gpu_util_below_pct":10}`,
	"an object of zeros":     `{"gpu_util_below_pct":0,"minutes":0}`,
	"a string":               `"10%/30min"`,
	"a list":                 `[10,30]`,
	"a threshold as text":    `{"gpu_util_below_pct":"10","minutes":30}`,
	"a fraction":             `{"gpu_util_below_pct":10.5,"minutes":30}`,
	"an unknown field in it": `{"gpu_util_below_pct":10,"minutes":30,"max_minutes":60}`,
}

// The API takes idle_stop when renting and changes it while the rental
// lives: the rental's JSON shows it; bad values are 400 naming idle_stop
// and rent or change nothing; null turns it off.
func TestIdleStopThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, base := idemRenter(t, a, "idle-api@example.com")
		withIdle := func(v string) string { return strings.TrimSuffix(base, "}") + `,"idle_stop":` + v + `}` }

		for name, bad := range badIdleStops {
			st, _, body, err := idemPost(a, "/api/v1/rentals", token, "", withIdle(bad))
			code, param, _ := errorCode(t, body)
			if err != nil || st != http.StatusBadRequest || code != "invalid" || param != "idle_stop" {
				t.Errorf("rent with %s: %d %s %s (%v), want 400 invalid naming idle_stop", name, st, code, param, err)
			}
		}
		// A week is paid up front: idle stop is for on-demand rentals.
		week := strings.TrimSuffix(withIdle(`{"gpu_util_below_pct":10,"minutes":30}`), "}") + `,"term":"week"}`
		st, _, body, _ := idemPost(a, "/api/v1/rentals", token, "", week)
		code, param, _ := errorCode(t, body)
		must(t, st == http.StatusBadRequest && code == "invalid" && param == "idle_stop", "rent a week with idle stop: %d %s", st, body)
		must(t, rentalsOf(t, db, org) == 0, "a refused rent made a rental")

		st, _, body, _ = idemPost(a, "/api/v1/rentals", token, "", withIdle(`{"gpu_util_below_pct":10,"minutes":30}`))
		must(t, st == http.StatusCreated, "rent with idle stop: %d %s", st, body)
		r := decode[rentaljson.Rental](t, body)
		want := rentaljson.IdleStop{GPUUtilBelowPct: 10, Minutes: 30}
		must(t, r.IdleStop != nil && *r.IdleStop == want && r.IdleStopEffective != nil && *r.IdleStopEffective == want && r.IdleStopLabPolicy == nil,
			"the rental's idle stop: %s", body)
		must(t, idleOf(t, db, r.ID) == models.IdleStop{BelowPct: 10, Minutes: 30}, "stored: %+v", idleOf(t, db, r.ID))
		st, _, body, _ = idemPost(a, "/api/v1/rentals", token, "", withIdle(`null`))
		must(t, st == http.StatusCreated && strings.Contains(body, `"idle_stop":null`), "rent with idle_stop null: %d %s", st, body)
		st, _, body, _ = idemPost(a, "/api/v1/rentals", token, "", base)
		must(t, st == http.StatusCreated && strings.Contains(body, `"idle_stop":null`) && strings.Contains(body, `"idle_stop_effective":null`),
			"rent without idle_stop: %d %s", st, body)

		path := a.url(routenames.APIRentalsIdleStop, idParam(r.ID))
		for name, bad := range badIdleStops {
			st, _, body, _ := idemPost(a, path, token, "", bad)
			code, param, _ := errorCode(t, body)
			if st != http.StatusBadRequest || code != "invalid" || param != "idle_stop" {
				t.Errorf("change to %s: %d %s %s, want 400 invalid naming idle_stop", name, st, code, param)
			}
		}
		st, _, body, _ = idemPost(a, path, token, "", "")
		code, param, _ = errorCode(t, body)
		must(t, st == http.StatusBadRequest && code == "invalid" && param == "body", "a change without a body: %d %s", st, body)
		must(t, idleOf(t, db, r.ID) == models.IdleStop{BelowPct: 10, Minutes: 30}, "refused changes changed it: %+v", idleOf(t, db, r.ID))

		st, _, body, _ = idemPost(a, path, token, "", `{"gpu_util_below_pct":25,"minutes":120}`)
		must(t, st == http.StatusOK && strings.Contains(body, `"idle_stop":{"gpu_util_below_pct":25,"minutes":120}`), "change: %d %s", st, body)
		must(t, strings.Contains(body, `"kind":"idle_stop_set"`) && strings.Contains(body, "idle stop: below 25 % for 120 minutes"), "the change is not on the timeline: %s", body)
		st, _, body, _ = idemPost(a, path, token, "", `null`)
		must(t, st == http.StatusOK && strings.Contains(body, `"idle_stop":null`) && strings.Contains(body, "idle stop off"), "turn off: %d %s", st, body)
		must(t, idleOf(t, db, r.ID) == models.IdleStop{}, "turned off: %+v", idleOf(t, db, r.ID))

		// Another member of the organisation, neither its renter nor an admin.
		other := mustUser(t, db, "idle-other@example.com", "Other", false)
		mustMember(t, db, org, other, models.RoleMember)
		otherToken, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), other, "idle")
		must(t, err == nil, "token: %v", err)
		st, _, body, _ = idemPost(a, path, otherToken, "", `{"gpu_util_below_pct":25,"minutes":120}`)
		must(t, st == http.StatusForbidden && idleOf(t, db, r.ID) == models.IdleStop{}, "another member's change: %d %s", st, body)
	})
}

// The rent form and the rental page take the setting: bad input shows
// the form again with the message beside the idle-stop fields (422) and
// changes nothing; the rental page shows the setting and, running, how
// long its GPUs have idled by the measured samples.
func TestIdleStopForms(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		const email = "idle-form@example.com"
		org, _, _ := idemRenter(t, a, email)
		o := rtxOffer(t, db)
		renter := loginWith(a, "renter", email, testPassword)
		form := renter.page(t, a.url(routenames.RentalsNew, idParam(o.ID)), "en", 200)
		contains(t, form, `id="rent-idle-stop"`, `name="idle_stop"`, `name="idle_stop_below_pct" type="number" min="1" max="100" value="10"`,
			`name="idle_stop_minutes" type="number" min="5" max="1440" value="60"`, "Stop the rental when its GPUs sit idle")
		must(t, !strings.Contains(form, `id="f-idle_stop" checked`), "idle stop is on by default")

		post := func(on, pct, minutes string) (*http.Response, string) {
			return renter.post(a.url(routenames.RentalsCreate, idParam(o.ID)), url.Values{"org_id": {idParam(org)}, "gpus": {"1"},
				"term": {"on_demand"}, "sla": {"standard"}, "ssh_public_key": {testSSHKey(t)},
				"idle_stop": {on}, "idle_stop_below_pct": {pct}, "idle_stop_minutes": {minutes}})
		}
		for name, c := range map[string][2]string{"no number": {"ten", "30"}, "0 %": {"0", "30"}, "3 minutes": {"10", "3"},
			"no minutes": {"10", ""}, "two days": {"10", "2880"}} {
			res, page := post("1", c[0], c[1])
			if res.StatusCode != http.StatusUnprocessableEntity || fieldMessage(page, "idle_stop") == "" {
				t.Errorf("rent form with %s: %d, message %q", name, res.StatusCode, fieldMessage(page, "idle_stop"))
			}
			must(t, strings.Contains(page, `value="`+c[0]+`"`), "the form forgot the input %q", c[0])
		}
		res, page := renter.post(a.url(routenames.RentalsCreate, idParam(o.ID)), url.Values{"org_id": {idParam(org)}, "gpus": {"1"},
			"term": {"week"}, "sla": {"standard"}, "ssh_public_key": {testSSHKey(t)},
			"idle_stop": {"1"}, "idle_stop_below_pct": {"10"}, "idle_stop_minutes": {"60"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity && strings.Contains(fieldMessage(page, "idle_stop"), "on-demand rentals"),
			"a week with idle stop: %d, message %q", res.StatusCode, fieldMessage(page, "idle_stop"))
		// A tool may send idle_stop as the API's JSON instead.
		for _, bad := range []string{`{"gpu_util_below_pct":10}`, `{"gpu_util_below_pct":"10","minutes":30}`, `{"minutes":3,"gpu_util_below_pct":10}`, `{`} {
			res, page := post(bad, "", "")
			if res.StatusCode != http.StatusUnprocessableEntity || fieldMessage(page, "idle_stop") == "" {
				t.Errorf("rent form with idle_stop=%s: %d, message %q", bad, res.StatusCode, fieldMessage(page, "idle_stop"))
			}
		}
		must(t, rentalsOf(t, db, org) == 0, "a refused rent form made a rental")
		// Unticked, the numbers are not read: off.
		res, _ = post("", "ten", "")
		must(t, res.StatusCode == http.StatusSeeOther, "rent with idle stop off: %d", res.StatusCode)
		res, _ = post("1", "15", "45")
		must(t, res.StatusCode == http.StatusSeeOther && rentalsOf(t, db, org) == 2, "rent with idle stop: %d", res.StatusCode)
		res, _ = post(`{"gpu_util_below_pct":20,"minutes":90}`, "", "")
		must(t, res.StatusCode == http.StatusSeeOther && rentalsOf(t, db, org) == 3, "rent with idle_stop as JSON: %d", res.StatusCode)
		var ids []int64
		must(t, db.R.Model(&models.Rental{}).Where("org_id = ?", org).Order("id").Pluck("id", &ids).Error == nil && len(ids) == 3, "rentals: %v", ids)
		must(t, idleOf(t, db, ids[2]) == models.IdleStop{BelowPct: 20, Minutes: 90}, "stored from JSON: %+v", idleOf(t, db, ids[2]))
		must(t, idleOf(t, db, ids[0]) == models.IdleStop{} && idleOf(t, db, ids[1]) == models.IdleStop{BelowPct: 15, Minutes: 45},
			"stored: %+v %+v", idleOf(t, db, ids[0]), idleOf(t, db, ids[1]))

		show := a.url(routenames.RentalsShow, idParam(ids[1]))
		page = renter.page(t, show, "en", 200)
		contains(t, page, `id="rental-idle-stop"`, `id="idle-own">Below 15 % for 45 minutes`, `id="idle-form"`, `id="f-idle_stop" checked`)
		zh := renter.page(t, show, "zh-CN", 200)
		contains(t, zh, "闲置关机", "利用率低于 15% 持续 45 分钟")

		change := func(on, pct, minutes string) (*http.Response, string) {
			return renter.post(a.url(routenames.RentalsIdleStop, idParam(ids[1])), url.Values{"idle_stop": {on}, "idle_stop_below_pct": {pct}, "idle_stop_minutes": {minutes}})
		}
		for name, c := range map[string][2]string{"no number": {"x", "30"}, "101 %": {"101", "30"}, "0 minutes": {"10", "0"}} {
			res, page := change("1", c[0], c[1])
			if res.StatusCode != http.StatusUnprocessableEntity || fieldMessage(page, "idle_stop") == "" || !strings.Contains(page, `id="rental-live"`) {
				t.Errorf("rental page form with %s: %d, message %q", name, res.StatusCode, fieldMessage(page, "idle_stop"))
			}
		}
		must(t, idleOf(t, db, ids[1]) == models.IdleStop{BelowPct: 15, Minutes: 45}, "refused changes changed it: %+v", idleOf(t, db, ids[1]))
		res, _ = change("1", "30", "20")
		must(t, res.StatusCode == http.StatusSeeOther && idleOf(t, db, ids[1]) == models.IdleStop{BelowPct: 30, Minutes: 20}, "change: %d", res.StatusCode)
		res, _ = change("", "30", "20")
		must(t, res.StatusCode == http.StatusSeeOther && idleOf(t, db, ids[1]) == models.IdleStop{}, "turn off: %d", res.StatusCode)

		// A running rental whose GPU has read 0 % for 20 minutes: the page
		// says so, and when it stops.
		running := mustRunningRental(t, db, org, renter.user.ID, o)
		now := db.Now().UTC()
		var g models.GPU
		must(t, db.R.Where("node_id = ? AND state = ?", o.NodeID, models.GPUFree).Order("idx").First(&g).Error == nil, "a free GPU")
		must(t, db.W.Create(&models.RentalGPU{RentalID: running, GPUID: g.ID, NodeID: g.NodeID, AttachedAt: now.Add(-time.Hour)}).Error == nil, "attach")
		must(t, db.W.Create(&models.RentalEvent{RentalID: running, At: now.Add(-time.Hour), Kind: "running"}).Error == nil, "event")
		for at := now.Add(-20 * time.Minute); !at.After(now); at = at.Add(30 * time.Second) {
			must(t, db.W.Create(&models.GPUSample{GPUID: g.ID, At: at, PowerW: 60, TempC: 35, SMClockMHz: 210}).Error == nil, "sample")
		}
		must(t, db.W.Model(&models.Rental{}).Where("id = ?", running).Updates(map[string]any{"idle_stop_below_pct": 5, "idle_stop_minutes": 60}).Error == nil, "set")
		page = renter.page(t, a.url(routenames.RentalsShow, idParam(running)), "en", 200)
		contains(t, page, `id="idle-status"`, "Every GPU has been below 5 % for 20 minutes: it stops at about")
		must(t, db.W.Create(&models.GPUSample{GPUID: g.ID, At: now, UtilPct: 90}).Error == nil, "a busy sample")
		page = renter.page(t, a.url(routenames.RentalsShow, idParam(running)), "en", 200)
		contains(t, page, `id="idle-status"`, "Not idle")

		// A week's rental has no idle stop to show or change.
		must(t, db.W.Model(&models.Rental{}).Where("id = ?", running).Update("term", "week").Error == nil, "a week")
		page = renter.page(t, a.url(routenames.RentalsShow, idParam(running)), "en", 200)
		must(t, !strings.Contains(page, `id="rental-idle-stop"`), "a week's rental shows idle stop")
		res, page = renter.post(a.url(routenames.RentalsIdleStop, idParam(running)), url.Values{"idle_stop": {"1"}, "idle_stop_below_pct": {"10"}, "idle_stop_minutes": {"60"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity && strings.Contains(page, "on-demand rentals"), "idle stop on a week's rental: %d", res.StatusCode)
		must(t, idleOf(t, db, running) == models.IdleStop{BelowPct: 5, Minutes: 60}, "the refused change changed it: %+v", idleOf(t, db, running))
		res, body := renter.do("GET", a.url(routenames.APIRentalsShow, idParam(running)), nil)
		must(t, res.StatusCode == 200 && strings.Contains(body, `"idle_stop_effective":null`), "a week's rental in the API: %d %s", res.StatusCode, body)
	})
}

// A lab's admins set its idle-stop policy on its page (bad input beside
// the fields, 422, nothing stored; members may not); a member's rent
// form states it, a looser setting is refused, and the rental page and
// API show the policy and what applies.
func TestIdleStopLabPolicyPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		member, _, lab := labMember(t, a, "idle-member@pku.edu.cn")
		admin := mustUser(t, db, "idle-pi@pku.edu.cn", "PI", false)
		mustMember(t, db, lab, admin, models.RoleAdmin)
		must(t, db.Tx(context.Background(), func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, lab, 1_000_000, "promo_credit", "test funds", nil, nil, db.Now().UTC())
		}) == nil, "fund the lab")
		pi := loggedIn(a, "pi", admin)
		orgPage := a.url(routenames.OrgsShow, idParam(lab))
		contains(t, pi.page(t, orgPage, "en", 200), `id="lab-idle-policy"`, "No policy", `id="idle-policy-form"`)
		must(t, !strings.Contains(member.page(t, orgPage, "en", 200), `id="idle-policy-form"`), "a member is offered the policy form")

		setPolicy := func(ac *actor, pct, minutes string) (*http.Response, string) {
			return ac.post(a.url(routenames.OrgsIdlePolicy, idParam(lab)), url.Values{"idle_policy_below_pct": {pct}, "idle_policy_minutes": {minutes}})
		}
		res, _ := setPolicy(member, "30", "30")
		must(t, res.StatusCode == http.StatusForbidden, "a member sets the policy: %d", res.StatusCode)
		for name, c := range map[string][2]string{"no number": {"thirty", "30"}, "0 %": {"0", "30"}, "a minute": {"30", "1"}, "one empty": {"30", ""}} {
			res, page := setPolicy(pi, c[0], c[1])
			if res.StatusCode != http.StatusUnprocessableEntity || fieldMessage(page, "idle_policy") == "" {
				t.Errorf("policy with %s: %d, message %q", name, res.StatusCode, fieldMessage(page, "idle_policy"))
			}
		}
		o, err := db.OrgByID(context.Background(), lab)
		must(t, err == nil && !o.IdlePolicy.On(), "refused policies stored one: %+v", o.IdlePolicy)
		res, _ = setPolicy(pi, "30", "30")
		must(t, res.StatusCode == http.StatusSeeOther, "set the policy: %d", res.StatusCode)
		contains(t, pi.page(t, orgPage, "en", 200), "Below 30 % for 30 minutes", `value="30"`)

		offer := rtxOffer(t, db)
		for _, q := range []string{`UPDATE nodes SET health = 'healthy', status = 'active' WHERE id = ?`,
			`UPDATE gpus SET health = 'healthy', state = 'free' WHERE node_id = ?`} {
			must(t, db.W.Exec(q, offer.NodeID).Error == nil, "node up")
		}
		form := member.page(t, a.url(routenames.RentalsNew, idParam(offer.ID))+"?org_id="+idParam(lab), "en", 200)
		contains(t, form, "Vision Lab&#39;s policy: rentals it pays for stop when every GPU stays below 30 % for 30 minutes",
			// Paid by the lab, the suggestion is its policy (a setting it accepts).
			`name="idle_stop_below_pct" type="number" min="1" max="100" value="30"`, `name="idle_stop_minutes" type="number" min="5" max="1440" value="30"`)
		rent := func(on, pct, minutes string) (*http.Response, string) {
			return member.post(a.url(routenames.RentalsCreate, idParam(offer.ID)), url.Values{"org_id": {idParam(lab)}, "gpus": {"1"},
				"term": {"on_demand"}, "sla": {"standard"}, "ssh_public_key": {testSSHKey(t)},
				"idle_stop": {on}, "idle_stop_below_pct": {pct}, "idle_stop_minutes": {minutes}})
		}
		res, page := rent("1", "10", "60")
		must(t, res.StatusCode == http.StatusUnprocessableEntity && strings.Contains(fieldMessage(page, "idle_stop"), "at least 30 % and at most 30 minutes"),
			"a looser setting: %d %q", res.StatusCode, fieldMessage(page, "idle_stop"))
		must(t, rentalsOf(t, db, lab) == 0, "a refused rent made a rental")
		res, _ = rent("", "", "")
		must(t, res.StatusCode == http.StatusSeeOther && rentalsOf(t, db, lab) == 1, "rent following the policy: %d", res.StatusCode)
		var id int64
		must(t, db.R.Model(&models.Rental{}).Where("org_id = ?", lab).Pluck("id", &id).Error == nil, "the rental")
		page = member.page(t, a.url(routenames.RentalsShow, idParam(id)), "en", 200)
		contains(t, page, `id="idle-own">Off`, `id="idle-policy">Below 30 % for 30 minutes`, `id="idle-effective"><strong>Below 30 % for 30 minutes`)
		res, body := member.do("GET", a.url(routenames.APIRentalsShow, idParam(id)), nil)
		must(t, res.StatusCode == 200 && strings.Contains(body, `"idle_stop":null`) &&
			strings.Contains(body, `"idle_stop_lab_policy":{"gpu_util_below_pct":30,"minutes":30}`) &&
			strings.Contains(body, `"idle_stop_effective":{"gpu_util_below_pct":30,"minutes":30}`), "the API: %d %s", res.StatusCode, body)
		// Through the API too: a looser change is refused, a stricter one taken.
		res, body = member.postJSON(a.url(routenames.APIRentalsIdleStop, idParam(id)), `{"gpu_util_below_pct":20,"minutes":30}`)
		code, param, _ := errorCode(t, body)
		must(t, res.StatusCode == http.StatusBadRequest && code == "invalid" && param == "idle_stop", "a looser change: %d %s", res.StatusCode, body)
		res, body = member.postJSON(a.url(routenames.APIRentalsIdleStop, idParam(id)), `{"gpu_util_below_pct":50,"minutes":10}`)
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `"idle_stop_effective":{"gpu_util_below_pct":50,"minutes":10}`), "a stricter change: %d %s", res.StatusCode, body)
	})
}
