package web_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"suanli/accounts"
	"suanli/models"
	"suanli/routenames"
)

// shot saves a full-page PNG of the tab to /tmp/shots/<name>.png, for a
// person to look at; a failure to save it only logs.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	_ = os.MkdirAll("/tmp/shots", 0o755)
	path := "/tmp/shots/" + name + ".png"
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// submit clicks sel and waits for the page the click loads, which must
// answer with the status.
func submit(t *testing.T, ctx context.Context, sel string, status int64, what string) labPage {
	t.Helper()
	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("%s: click %s: %v\n%s", what, sel, err, readPage(t, ctx))
	}
	p := readPage(t, ctx)
	if res.Status != status {
		t.Fatalf("%s: click %s answered %d, want %d\n%s", what, sel, res.Status, status, p)
	}
	return p
}

// TestBrowserProviderJourney is a provider's way to a listed offer, in
// real Chromium: sign up in the portal (pending), a platform admin
// approves, add a datacentre, add a node and read its one-time token and
// install command, its agent (simulated, in this process) reports eight
// A100s which appear on the node page by itself (htmx), create an offer
// for them, and see it listed.
func TestBrowserProviderJourney(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser journey")
	}
	a := newSQLiteApp(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	b := newEnglishBrowser(t, ctx)
	u := mustUser(t, a.db, "ops@chengdu-sc.example", "Liu Yang", false)

	open(t, b, a.srv.URL+a.url(routenames.AuthLogin), "login page")
	typeInto(t, b, [][2]string{{"f-email", u.Email}, {"f-password", testPassword}})
	click(t, b, "#login-submit", "log in")

	p := click(t, b, "#nav-provider", "portal")
	must(t, strings.Contains(p.Text, "Become a provider"), "no onboarding form:\n%s", p)
	typeInto(t, b, [][2]string{{"f-company_name", "Chengdu Science City Compute"}, {"f-contact_phone", "+86 28 6000 1234"},
		{"f-licence_no", "91510100MA61234567"}, {"f-bank_name", "Bank of Chengdu"}, {"f-bank_account_name", "Chengdu Science City Compute Co."},
		{"f-bank_account_no", "6222 0201 0000 1234"}})
	p = click(t, b, "#provider-signup-submit", "sign up")
	must(t, strings.Contains(p.Text, "Waiting for verification"), "not pending after sign-up:\n%s", p)
	pid := strings.Split(strings.TrimPrefix(p.Path, "/provider/"), "/")[0]

	// A platform admin approves the organisation.
	var org models.Org
	must(t, a.db.R.Where("kind = ? AND name = ?", models.OrgProvider, "Chengdu Science City Compute").First(&org).Error == nil, "no provider organisation")
	admin := mustUser(t, a.db, "root@suanli.example", "Pat Platform", true)
	must(t, (&accounts.Service{DB: a.db}).Review(context.Background(), admin, org.ID, true, "") == nil, "review")
	p = open(t, b, a.srv.URL+a.url(routenames.ProviderDashboard, pid), "dashboard")
	must(t, strings.Contains(p.Text, "Verified"), "not verified after approval:\n%s", p)

	// A datacentre.
	p = click(t, b, "#ptab-datacenters", "datacentres")
	typeInto(t, b, [][2]string{{"f-name", "成都科学城一号机房"}, {"f-name_en", "Science City One"}, {"f-district", "成都科学城"},
		{"f-district_en", "Chengdu Science City"}, {"f-uplink_gbps", "100"}, {"f-latency_chongqing", "11"}})
	must(t, chromedp.Do(b, chromedp.SetValue(chromedp.ID("f-city"), "chengdu")) == nil, "choose the city")
	p = click(t, b, "#dc-submit", "create datacentre")
	must(t, strings.Contains(p.Text, "Science City One") && strings.Contains(p.Text, "Datacentre added"), "datacentre not listed:\n%s", p)

	// A node: its token and install command, shown once.
	click(t, b, "#ptab-nodes", "nodes")
	typeInto(t, b, [][2]string{{"f-name", "sc-a100-01"}})
	p = submit(t, b, "#node-submit", 201, "add node")
	token := textOf(t, b, "#node-token")
	must(t, strings.HasPrefix(token, "snr_"), "no token on the page:\n%s", p)
	cmd := textOf(t, b, "#cmd-shell")
	must(t, strings.Contains(cmd, "agent --server") && strings.Contains(cmd, "--token "+token), "install command %q lacks the token", cmd)
	must(t, eval[bool](t, b, `!document.querySelector('button[data-copy="cmd-shell"]').hidden`), "the copy button is hidden")

	// Its agent reports eight simulated A100s; the live block shows them.
	heartbeatSimulated(t, a, token, "a100-40g-sxm", 8)
	if err := chromedp.Do(b, chromedp.WaitVisible(chromedp.ID("gpu-7"))); err != nil {
		t.Fatalf("the node page never showed the agent's GPUs: %v\n%s", err, readPage(t, b))
	}
	waitHTMXIdle(t, b)
	p = readPage(t, b)
	must(t, strings.Contains(p.Text, "simulated") && strings.Contains(p.Text, "A100"), "node page:\n%s", p)
	shot(t, b, "node-en")
	nodePage := p.Path
	click(t, b, "#lang-zh", "中文")
	// The token came in the answer to the POST; the node's own page, in Chinese.
	var n models.Node
	must(t, a.db.R.Where("name = ?", "sc-a100-01").First(&n).Error == nil, "no node")
	p = open(t, b, a.srv.URL+a.url(routenames.ProviderNodesShow, pid, idParam(n.ID)), "node page")
	must(t, !strings.Contains(p.Text, token), "the token is shown again (was on %s)", nodePage)
	must(t, strings.Contains(p.Text, "模拟") && strings.Contains(p.Text, "最近心跳"), "node page in Chinese:\n%s", p)
	shot(t, b, "node-zh")

	// An offer for them.
	p = open(t, b, a.srv.URL+a.url(routenames.ProviderOffersNew, pid), "offer form")
	must(t, eval[string](t, b, `document.querySelector("#f-gpu").value`) == "a100-40g-sxm", "the node's model is not preselected")
	shot(t, b, "offer-form-zh")
	click(t, b, "#lang-en", "English")
	typeInto(t, b, [][2]string{{"f-price", "7.50"}, {"f-monthly_price", "3800"}, {"f-offpeak_discount_pct", "25"}})
	shot(t, b, "offer-form-en")
	p = click(t, b, "#offer-submit", "create offer")
	must(t, strings.Contains(p.Text, "Offer created") && strings.Contains(p.Text, "¥7.50"), "offer not in the list:\n%s", p)
	state := eval[string](t, b, `(document.querySelector("#offer-list [data-state]") || {}).dataset.state || ""`)
	must(t, state == "listed", "the offer is %q, want listed:\n%s", state, p)
	var o models.Offer
	must(t, a.db.R.Where("gpu_model = ? AND price_per_gpu_hour_fen = ?", "a100-40g-sxm", 750).First(&o).Error == nil, "offer not stored")
	must(t, strconv.FormatInt(o.ProviderID, 10) == pid, "offer of provider %d, want %s", o.ProviderID, pid)
	open(t, b, a.srv.URL+a.url(routenames.ProviderCapacity, pid), "capacity")
	shot(t, b, "capacity-en")
	open(t, b, a.srv.URL+a.url(routenames.ProviderEarnings, pid), "earnings")
	shot(t, b, "earnings-en")
}
