package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/agent"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
	"suanli/providers"
	"suanli/rentals"
	"suanli/routenames"
)

// providerFixture is a user who owns an approved provider with one
// datacentre, logged in (English, as every actor).
type providerFixture struct {
	a     *app
	owner *actor
	acc   *providers.Account
	dc    int64
	svc   *providers.Service
}

func (f *providerFixture) pid() string { return idParam(f.acc.Provider.ID) }

// newProviderFixture signs a provider up through the market, as the
// onboarding form does, and has a platform admin approve it.
func newProviderFixture(t *testing.T, a *app, email, company string) *providerFixture {
	t.Helper()
	ctx := context.Background()
	u := mustUser(t, a.db, email, "Owner of "+company, false)
	svc := &providers.Service{DB: a.db, BaseURL: "http://suanli.test"}
	acc, err := svc.SignUp(ctx, u, providers.Profile{CompanyName: company, ContactName: "Wang Fang", ContactPhone: "+86 28 8888 0000",
		ContactEmail: email, LicenceNo: "91510100MA6CXXXX1X"})
	if err != nil {
		t.Fatal(err)
	}
	admin := mustUser(t, a.db, "reviewer-"+email, "Reviewer", true)
	if err := (&accounts.Service{DB: a.db}).Review(ctx, admin, acc.Org.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	acc, err = svc.Account(ctx, u, acc.Provider.ID)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := svc.CreateDatacenter(ctx, u, acc.Provider.ID, providers.DatacenterInput{NameZH: "天府机房", NameEN: company + " Tianfu", City: "chengdu",
		DistrictZH: "天府软件园", DistrictEN: "Tianfu Software Park", UplinkGbps: 40})
	if err != nil {
		t.Fatal(err)
	}
	return &providerFixture{a: a, owner: loggedIn(a, email, u), acc: acc, dc: dc.ID, svc: svc}
}

// addNode adds a node through the market and returns it and its token.
func (f *providerFixture) addNode(t *testing.T, name string) (*models.Node, string) {
	t.Helper()
	n, tok, err := f.svc.AddNode(context.Background(), f.owner.user, f.acc.Provider.ID, providers.NodeInput{DatacenterID: f.dc, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return n, tok
}

// heartbeat registers the node's agent with its token and reports a
// simulated inventory of the catalogue model, as `suanli agent --simulate` would.
func heartbeatSimulated(t *testing.T, a *app, token, model string, gpus int) {
	t.Helper()
	sim, err := gpu.SimulateCatalog(model, gpus)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	rentals := &rentals.Service{DB: a.db, Hub: fleet.NewHub(), BaseURL: "http://suanli.test"}
	host := reader.Read()
	markSimulatedProvider(t, a.db, token)
	if _, err := rentals.Fleet().Heartbeat(context.Background(), token, agent.Heartbeat{Host: host, AgentVersion: "test", Launcher: "simulated"}); err != nil {
		t.Fatal(err)
	}
}

// markSimulatedProvider makes the provider of the node whose token this
// is a test provider whose nodes run simulated agents, as `suanli admin
// create-user … --provider NAME --simulated` does: only such a
// provider's node is accepted as simulated (issue 17).
func markSimulatedProvider(t *testing.T, db *models.DB, token string) {
	t.Helper()
	h := fleet.HashNodeToken(token)
	if err := db.W.Exec(`UPDATE providers SET simulated = ? WHERE id IN (SELECT provider_id FROM nodes WHERE reg_token_hash = ? OR cred_hash = ?)`,
		true, h, h).Error; err != nil {
		t.Fatal(err)
	}
}

// get asks for a page in the language and expects the status.
func (ac *actor) page(t *testing.T, path, lang string, want int) string {
	t.Helper()
	res, body := ac.do("GET", path, nil, "Accept-Language", lang)
	if res.StatusCode != want {
		t.Fatalf("GET %s (%s): %d, want %d: %s", path, lang, res.StatusCode, want, snippet(body))
	}
	return body
}

// Every portal page answers in both languages, with the status banner.
func TestProviderPagesBothLanguages(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	f := newProviderFixture(t, a, "ops@tianfu-gpu.example", "Tianfu GPU Cloud")
	n, _ := f.addNode(t, "tf-a100-01")
	pages := []struct {
		route  string
		params []any
		zh, en string
	}{
		{routenames.ProviderDashboard, []any{f.pid()}, "下一步", "Next steps"},
		{routenames.ProviderProfile, []any{f.pid()}, "营业执照号", "Business licence number"},
		{routenames.ProviderDatacenters, []any{f.pid()}, "天府机房", "Tianfu GPU Cloud Tianfu"},
		{routenames.ProviderDatacentersEdit, []any{f.pid(), idParam(f.dc)}, "提供方自报", "Provider-declared"},
		{routenames.ProviderNodes, []any{f.pid()}, "tf-a100-01", "tf-a100-01"},
		{routenames.ProviderNodesShow, []any{f.pid(), idParam(n.ID)}, "等待首次心跳", "waiting for first heartbeat"},
		{routenames.ProviderNodesLiveOne, []any{f.pid(), idParam(n.ID)}, "尚未检测", "not detected yet"},
		{routenames.ProviderNodesLive, []any{f.pid()}, "tf-a100-01", "tf-a100-01"},
		{routenames.ProviderOffers, []any{f.pid()}, "还没有报价", "No offer yet"},
		{routenames.ProviderOffersNew, []any{f.pid()}, "最短计费时长", "Minimum duration"},
		{routenames.ProviderCapacity, []any{f.pid()}, "30 天利用率", "30-day utilisation"},
		{routenames.ProviderEarnings, []any{f.pid()}, "待结算余额", "Payable balance"},
		{routenames.ProviderStatement, []any{f.pid()}, "平台佣金", "Commission"},
	}
	for _, p := range pages {
		path := a.url(p.route, p.params...)
		zh := f.owner.page(t, path, "zh-CN", 200)
		en := f.owner.page(t, path, "en", 200)
		if !strings.Contains(zh, p.zh) {
			t.Errorf("%s in Chinese lacks %q", p.route, p.zh)
		}
		if !strings.Contains(en, p.en) {
			t.Errorf("%s in English lacks %q", p.route, p.en)
		}
		if !strings.Contains(p.route, "live") && !strings.Contains(en, `data-status="approved"`) {
			t.Errorf("%s has no verified banner", p.route)
		}
	}
	// With one provider, /provider goes to it.
	res, _ := f.owner.do("GET", a.url(routenames.ProviderHome), nil)
	must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == a.url(routenames.ProviderDashboard, f.pid()),
		"GET /provider: %d %s", res.StatusCode, res.Header.Get("Location"))
}

// Signing up: bad input is shown beside the fields (422) and creates
// nothing; good input makes a pending provider whose pages say so.
func TestProviderSignupForm(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		u := mustUser(t, a.db, "lab@uestc.example", "Zhou Lab", false)
		ac := loggedIn(a, "signup", u)
		body := ac.page(t, a.url(routenames.ProviderHome), "zh-CN", 200)
		contains(t, body, "成为算力提供方", `name="licence_no"`, "lab@uestc.example")
		count := func() int64 {
			var n int64
			a.db.R.Model(&models.Org{}).Where("kind = ?", models.OrgProvider).Count(&n)
			return n
		}
		before := count()
		res, body := ac.post(a.url(routenames.ProviderSignup), url.Values{"company_name": {"Chengdu Lab GPUs"}, "contact_name": {"Zhou"},
			"contact_phone": {"call me"}, "contact_email": {"not-an-email"}, "licence_no": {"x"}, "bank_name": {"ICBC"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "bad signup: %d", res.StatusCode)
		for _, field := range []string{"contact_phone", "contact_email", "licence_no", "bank_account_no"} {
			must(t, fieldMessage(body, field) != "", "no message beside %s: %s", field, snippet(body))
		}
		must(t, strings.Contains(body, `value="Chengdu Lab GPUs"`), "the company name was not kept")
		must(t, count() == before, "a refused signup created a provider")

		res, _ = ac.post(a.url(routenames.ProviderSignup), url.Values{"company_name": {"Chengdu Lab GPUs"}, "contact_name": {"Zhou"},
			"contact_phone": {"+86 28 6183 0000"}, "contact_email": {"lab@uestc.example"}, "licence_no": {"12510000450716XXXX"}})
		must(t, res.StatusCode == http.StatusSeeOther, "signup: %d", res.StatusCode)
		loc := res.Header.Get("Location")
		body = ac.page(t, loc, "en", 200)
		contains(t, body, `data-status="pending"`, "Waiting for verification.", "Submitted: waiting")
		body = ac.page(t, loc, "zh-CN", 200)
		contains(t, body, "等待平台审核")
	})
}

// fieldMessage returns the message shown beside a form field.
func fieldMessage(body, field string) string {
	i := strings.Index(body, `id="err-`+field+`"`)
	if i < 0 {
		return ""
	}
	rest := body[i:]
	start := strings.Index(rest, ">") + 1
	end := strings.Index(rest, "</small>")
	if start <= 0 || end < start {
		return ""
	}
	return strings.TrimSpace(rest[start:end])
}

// Datacentres: bad input beside the fields, nothing created; good input
// creates one with its declared latency.
func TestProviderDatacenterForm(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		f := newProviderFixture(t, a, "ops@jinjiang.example", "Jinjiang Compute")
		count := func() int {
			dcs, err := f.svc.Datacenters(context.Background(), f.owner.user, f.acc.Provider.ID)
			if err != nil {
				t.Fatal(err)
			}
			return len(dcs)
		}
		res, body := f.owner.post(a.url(routenames.ProviderDatacentersCreate, f.pid()), url.Values{"name": {""}, "city": {"atlantis"},
			"uplink_gbps": {"fast"}, "latency_chengdu": {"abc"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "bad datacentre: %d", res.StatusCode)
		must(t, fieldMessage(body, "uplink_gbps") != "" && fieldMessage(body, "latency_chengdu") != "", "no messages beside the numbers: %s", snippet(body))
		must(t, count() == 1, "a refused form created a datacentre")
		res, body = f.owner.post(a.url(routenames.ProviderDatacentersCreate, f.pid()), url.Values{"name": {""}, "city": {"atlantis"}, "uplink_gbps": {"10"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "bad datacentre: %d", res.StatusCode)
		must(t, fieldMessage(body, "name") != "" && fieldMessage(body, "city") != "", "no messages beside name and city: %s", snippet(body))
		must(t, count() == 1, "a refused form created a datacentre")

		res, _ = f.owner.post(a.url(routenames.ProviderDatacentersCreate, f.pid()), url.Values{"name": {"锦江二号机房"}, "name_en": {"Jinjiang Two"},
			"city": {"chengdu"}, "district": {"高新区"}, "district_en": {"Hi-tech Zone"}, "tier": {"Tier IV"}, "uplink_gbps": {"100"}, "latency_chongqing": {"9.5"}})
		must(t, res.StatusCode == http.StatusSeeOther, "create datacentre: %d", res.StatusCode)
		must(t, count() == 2, "no datacentre created")
		body = f.owner.page(t, a.url(routenames.ProviderDatacenters, f.pid()), "zh-CN", 200)
		contains(t, body, "锦江二号机房", "高新区", "Tier IV")
		dcs, _ := f.svc.Datacenters(context.Background(), f.owner.user, f.acc.Provider.ID)
		body = f.owner.page(t, a.url(routenames.ProviderDatacentersEdit, f.pid(), idParam(dcs[1].ID)), "en", 200)
		contains(t, body, `value="9.5"`, "provider-declared")
	})
}

// Adding a node shows its one-time token and the install commands once.
func TestProviderAddNodeShowsTokenOnce(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	f := newProviderFixture(t, a, "ops@wenjiang.example", "Wenjiang AI")
	res, body := f.owner.post(a.url(routenames.ProviderNodesCreate, f.pid()), url.Values{"datacenter_id": {idParam(f.dc)}, "name": {"bad name"}})
	must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldMessage(body, "name") != "", "bad node name: %d %s", res.StatusCode, snippet(body))
	res, body = f.owner.post(a.url(routenames.ProviderNodesCreate, f.pid()), url.Values{"datacenter_id": {idParam(f.dc)}, "name": {"wj-h100-01"}})
	must(t, res.StatusCode == http.StatusCreated, "add node: %d %s", res.StatusCode, snippet(body))
	contains(t, body, `id="node-token"`, "snr_", "suanli agent --server http://suanli.test --token", "systemd", "docker run")
	tokStart := strings.Index(body, "snr_")
	token := body[tokStart : tokStart+strings.IndexAny(body[tokStart:], "<' ")]
	var n models.Node
	must(t, a.db.R.Where("name = ?", "wj-h100-01").First(&n).Error == nil, "no node stored")
	page := f.owner.page(t, a.url(routenames.ProviderNodesShow, f.pid(), idParam(n.ID)), "en", 200)
	must(t, !strings.Contains(page, token), "the token is shown again on the node page")
	// The agent registers with it and reports simulated GPUs: the page shows them.
	heartbeatSimulated(t, a, token, "h100-sxm", 8)
	page = f.owner.page(t, a.url(routenames.ProviderNodesLiveOne, f.pid(), idParam(n.ID)), "en", 200)
	contains(t, page, "simulated", `id="gpu-7"`, "GPU-")
	page = f.owner.page(t, a.url(routenames.ProviderNodesShow, f.pid(), idParam(n.ID)), "zh-CN", 200)
	contains(t, page, "模拟", "秒前")
}

// Offers: bad numbers beside their fields; a model the node does not have
// is refused beside the GPU field; nothing is created; a good one is.
func TestProviderOfferForm(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		f := newProviderFixture(t, a, "ops@shuangliu.example", "Shuangliu GPU")
		n, token := f.addNode(t, "sl-a100-01")
		heartbeatSimulated(t, a, token, "a100-40g-sxm", 8)
		count := func() int {
			os, err := f.svc.Offers(context.Background(), f.owner.user, f.acc.Provider.ID)
			if err != nil {
				t.Fatal(err)
			}
			return len(os)
		}
		good := url.Values{"gpu": {"a100-40g-sxm"}, "node_id": {idParam(n.ID)}, "interconnect": {"nvlink"}, "max_gpus": {"8"},
			"vcpu_per_gpu": {"12"}, "ram_gb_per_gpu": {"96"}, "disk_gb": {"800"}, "price": {"9.80"}, "weekly_price": {""}, "monthly_price": {"4800"},
			"offpeak_discount_pct": {"20"}, "student_discount_pct": {"10"}, "min_duration_min": {"5"}, "sla_tiers": {"standard", "premium"}}
		with := func(kv ...string) url.Values {
			v := url.Values{}
			for k, vs := range good {
				v[k] = vs
			}
			for i := 0; i+1 < len(kv); i += 2 {
				v.Set(kv[i], kv[i+1])
			}
			return v
		}
		for _, c := range []struct {
			name  string
			form  url.Values
			field string
		}{
			{"price not money", with("price", "ten"), "price"},
			{"whole numbers", with("max_gpus", "2.5"), "max_gpus"},
			{"minutes", with("min_duration_min", "0"), "min_duration_min"},
			{"too many GPUs", with("max_gpus", "9"), "max_gpus"},
			{"monthly above hourly", with("monthly_price", "999999"), "monthly_price"},
			{"discount range", with("offpeak_discount_pct", "95"), "offpeak_discount_pct"},
			{"model mismatch", with("gpu", "h100-sxm"), "gpu"},
		} {
			t.Run(c.name, func(t *testing.T) {
				res, body := f.owner.post(a.url(routenames.ProviderOffersCreate, f.pid()), c.form)
				must(t, res.StatusCode == http.StatusUnprocessableEntity, "%d, want 422", res.StatusCode)
				must(t, fieldMessage(body, c.field) != "", "no message beside %s: %s", c.field, snippet(body))
				must(t, count() == 0, "a refused offer was created")
			})
		}
		_, body := f.owner.post(a.url(routenames.ProviderOffersCreate, f.pid()), with("min_duration_min", "43201"))
		must(t, fieldMessage(body, "min_duration_min") == "Enter a whole number of minutes from 1 to 43200.",
			"the minutes message does not give the market's bounds: %q", fieldMessage(body, "min_duration_min"))
		_, body = f.owner.post(a.url(routenames.ProviderOffersCreate, f.pid()), with("gpu", "h100-sxm"))
		must(t, strings.Contains(fieldMessage(body, "gpu"), "sl-a100-01"), "the mismatch message does not name the node: %q", fieldMessage(body, "gpu"))

		res, _ := f.owner.post(a.url(routenames.ProviderOffersCreate, f.pid()), good)
		must(t, res.StatusCode == http.StatusSeeOther, "create offer: %d", res.StatusCode)
		must(t, count() == 1, "no offer created")
		os, _ := f.svc.Offers(context.Background(), f.owner.user, f.acc.Provider.ID)
		o := os[0]
		must(t, o.PricePerGPUHourFen == 980 && o.MinDurationS == 300 && o.MonthlyPricePerGPUFen != nil && *o.MonthlyPricePerGPUFen == 480000 && o.WeeklyPricePerGPUFen == nil,
			"offer stored as %+v", o)
		body = f.owner.page(t, a.url(routenames.ProviderOffers, f.pid()), "en", 200)
		contains(t, body, "A100", "¥9.80", `data-state="listed"`)

		// Edit: a bad price changes nothing; a good one is saved.
		res, body = f.owner.post(a.url(routenames.ProviderOffersUpdate, f.pid(), idParam(o.ID)), with("price", "-1"))
		must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldMessage(body, "price") != "", "bad edit: %d", res.StatusCode)
		res, _ = f.owner.post(a.url(routenames.ProviderOffersUpdate, f.pid(), idParam(o.ID)), with("price", "8.50", "monthly_price", ""))
		must(t, res.StatusCode == http.StatusSeeOther, "edit: %d", res.StatusCode)
		o2, _ := f.svc.Offer(context.Background(), f.owner.user, f.acc.Provider.ID, o.ID)
		must(t, o2.PricePerGPUHourFen == 850 && o2.MonthlyPricePerGPUFen == nil, "edited offer: %+v", o2)

		// Pause and list again.
		res, _ = f.owner.post(a.url(routenames.ProviderOffersStatus, f.pid(), idParam(o.ID)), url.Values{"status": {"paused"}})
		must(t, res.StatusCode == http.StatusSeeOther, "pause: %d", res.StatusCode)
		body = f.owner.page(t, a.url(routenames.ProviderOffers, f.pid()), "zh-CN", 200)
		contains(t, body, `data-state="paused"`, "已暂停")
		res, _ = f.owner.post(a.url(routenames.ProviderOffersStatus, f.pid(), idParam(o.ID)), url.Values{"status": {"listed"}})
		must(t, res.StatusCode == http.StatusSeeOther, "list: %d", res.StatusCode)
		res, body = f.owner.post(a.url(routenames.ProviderOffersStatus, f.pid(), idParam(o.ID)), url.Values{"status": {"bogus"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "bogus status: %d %s", res.StatusCode, snippet(body))
	})
}

// Drain, resume; removing a node with a live rental is refused with the reason.
func TestProviderNodeStatus(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		f := newProviderFixture(t, a, "ops@longquan.example", "Longquan GPU")
		n, _ := f.addNode(t, "lq-01")
		show := a.url(routenames.ProviderNodesShow, f.pid(), idParam(n.ID))
		res, _ := f.owner.post(a.url(routenames.ProviderNodesStatus, f.pid(), idParam(n.ID)), url.Values{"status": {"draining"}})
		must(t, res.StatusCode == http.StatusSeeOther, "drain: %d", res.StatusCode)
		contains(t, f.owner.page(t, show, "en", 200), "draining", `id="node-resume"`)
		res, _ = f.owner.post(a.url(routenames.ProviderNodesStatus, f.pid(), idParam(n.ID)), url.Values{"status": {"active"}})
		must(t, res.StatusCode == http.StatusSeeOther, "resume: %d", res.StatusCode)
		// A live rental on the node.
		o, err := f.svc.CreateOffer(context.Background(), f.owner.user, f.acc.Provider.ID, providers.OfferInput{NodeID: n.ID, GPU: "a100-40g-sxm", MaxGPUs: 1, PricePerGPUHourFen: 900})
		must(t, err == nil, "offer: %v", err)
		rid := mustRunningRental(t, a.db, f.acc.Org.ID, f.owner.user.ID, *o)
		must(t, a.db.W.Model(&models.Rental{}).Where("id = ?", rid).Update("node_id", n.ID).Error == nil, "rental on the node")
		res, body := f.owner.post(a.url(routenames.ProviderNodesStatus, f.pid(), idParam(n.ID)), url.Values{"status": {"removed"}})
		must(t, res.StatusCode == http.StatusConflict && strings.Contains(body, `id="node-refusal"`), "remove with a live rental: %d %s", res.StatusCode, snippet(body))
		var st string
		a.db.R.Model(&models.Node{}).Where("id = ?", n.ID).Pluck("status", &st)
		must(t, models.NodeStatus(st) == models.NodeActive, "the refused removal changed the node to %s", st)
		// Renewing the token shows the new one.
		res, body = f.owner.post(a.url(routenames.ProviderNodesToken, f.pid(), idParam(n.ID)), nil)
		must(t, res.StatusCode == http.StatusCreated && strings.Contains(body, "snr_"), "renew: %d", res.StatusCode)
	})
}

// The statement's CSV starts with a UTF-8 byte order mark and has the totals.
func TestProviderStatementCSV(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		f := newProviderFixture(t, a, "ops@pidu.example", "Pidu GPU")
		res, body := f.owner.do("GET", a.url(routenames.ProviderStatementCSV, f.pid()), nil)
		must(t, res.StatusCode == 200, "csv: %d", res.StatusCode)
		must(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv"), "content type %q", res.Header.Get("Content-Type"))
		must(t, strings.HasPrefix(body, "\uFEFFmonth,rental_id,"), "no BOM and header: %q", snippet(body))
		must(t, strings.Contains(body, ",total,") && strings.Contains(body, "payable_balance_now"), "no totals: %s", body)
		res, _ = f.owner.do("GET", a.url(routenames.ProviderStatementCSV, f.pid())+"?month=2026-13", nil)
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "bad month CSV: %d", res.StatusCode)
		res, body = f.owner.do("GET", a.url(routenames.ProviderEarnings, f.pid())+"?month=nope", nil)
		must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldMessage(body, "month") != "", "bad month page: %d", res.StatusCode)
	})
}

// A listed offer that the public list does not show (here: its node is
// draining) says so on the provider's offer list, with the reason, rather
// than "listed".
func TestProviderOffersShowWhyAListedOfferIsHidden(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	f := newProviderFixture(t, a, "hidden@tianfu.example", "Hidden Compute")
	n, tok := f.addNode(t, "gpu-host-hidden")
	heartbeatSimulated(t, a, tok, "a100-40g-sxm", 8)
	ctx := context.Background()
	o, err := f.svc.CreateOffer(ctx, f.owner.user, f.acc.Provider.ID, providers.OfferInput{NodeID: n.ID, GPU: "a100-40g-sxm", MaxGPUs: 8,
		PricePerGPUHourFen: 2800})
	if err != nil {
		t.Fatal(err)
	}
	body := f.owner.page(t, "/provider/"+f.pid()+"/offers", "en", 200)
	contains(t, body, `data-state="listed"`)
	if err := f.svc.SetNodeStatus(ctx, f.owner.user, f.acc.Provider.ID, n.ID, providers.NodeDrain); err != nil {
		t.Fatal(err)
	}
	body = f.owner.page(t, "/provider/"+f.pid()+"/offers", "en", 200)
	contains(t, body, `data-state="hidden"`, "listed, not shown", "gpu-host-hidden is draining")
	body = f.owner.page(t, "/provider/"+f.pid()+"/offers/"+idParam(o.ID)+"/edit", "zh-CN", 200)
	contains(t, body, "已上架，暂不展示")
}
