package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"suanli/accounts"
	"suanli/billing"
	"suanli/invoices"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
	"suanli/providers"
	"suanli/routenames"
	"suanli/workspace"
)

// layoutProbe measures, in the browser, what a reader would see go wrong:
// a page wider than the window, something in the header off-screen, the
// brand broken over lines, an offer table wider than its place, and how
// tall the offer rows are.
const layoutProbe = `(() => {
	const vw = window.innerWidth, out = { vw, doc: document.documentElement.scrollWidth, off: [], brandLines: 0, tables: [], rowMax: 0, rows: 0 };
	const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "");
	document.querySelectorAll("header.site *").forEach(el => {
		const r = el.getBoundingClientRect();
		if (r.width > 0 && (r.right > vw + 0.5 || r.left < -0.5)) out.off.push(name(el) + " [" + Math.round(r.left) + "," + Math.round(r.right) + "]");
	});
	const brand = document.querySelector("header.site .brand span");
	if (brand && brand.firstChild) {
		const range = document.createRange();
		range.selectNodeContents(brand);
		out.brandLines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
	}
	// An offer table: a table whose rows are offers (they link to one).
	[...document.querySelectorAll("table")].filter(t => t.querySelector("tbody tr.offer td a[href^='/offers/']")).forEach(t => {
		const box = t.parentElement.getBoundingClientRect(), r = t.getBoundingClientRect();
		out.tables.push({ width: Math.round(r.width), room: Math.round(box.width), right: Math.round(r.right), scroll: t.scrollWidth, client: t.clientWidth });
		t.querySelectorAll("tbody tr.offer").forEach(tr => { out.rows++; out.rowMax = Math.max(out.rowMax, tr.getBoundingClientRect().height); });
	});
	return JSON.stringify(out);
})()`

// invoiceTablesProbe names the invoice tables (the organisation's list,
// the admins' queue, an invoice's details) that are wider than the window
// or than their own box, "" when none is.
const invoiceTablesProbe = `[...document.querySelectorAll("#invoices, #admin-invoices, #invoice-details")].filter(t => {
	const r = t.getBoundingClientRect();
	return r.right > window.innerWidth + 0.5 || t.scrollWidth > t.clientWidth + 1 || [...t.querySelectorAll("td")].some(td => td.scrollWidth > td.clientWidth + 1);
}).map(t => "#" + t.id).join(", ")`

type layoutMeasure struct {
	VW, Doc    int
	Off        []string
	BrandLines int
	Tables     []struct{ Width, Room, Right, Scroll, Client int }
	RowMax     float64
	Rows       int
}

// denseRow is the tallest an offer row may be on a desktop: a figure and
// one line qualifying it, about 20 rows to a 1080-pixel screen.
const denseRow = 48

// The pages fit the window at 1280, 1366 and 390 px in both languages:
// nothing wider than the window, the header's links all on screen, the
// brand on one line, the offer table within its column and dense on a
// desktop. Set SUANLI_SCREENSHOTS to a folder to keep a screenshot of
// each page.
func TestBrowserLayoutFits(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	f := newMatrixFixture(t)
	a := f.a
	ctx := context.Background()
	// The widest header: a platform admin with student prices, whose name
	// is long.
	svc := &accounts.Service{DB: a.db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
	admin := mustUser(t, a.db, "ops@pku.edu.cn", "Professor Ouyang Xiaoming-Longname", true)
	if err := svc.Review(ctx, admin, f.orgA.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	mustMember(t, a.db, f.orgA.ID, admin, models.RoleMember)
	if err := a.db.W.Model(&models.Membership{}).Where("org_id = ? AND user_id = ?", f.orgA.ID, admin.ID).
		Updates(map[string]any{"edu_email": admin.Email, "confirmed_at": a.db.Now().UTC()}).Error; err != nil {
		t.Fatal(err)
	}
	student := loggedIn(a, "student admin", admin)
	// A short name: the navigation, not the name, is what crowds the brand.
	plain := loggedIn(a, "admin", mustUser(t, a.db, "ann@suanli.example", "Ann Admin", true))
	owner := f.actors[asOwner]
	// The running rental's page with its GPUs' usage table and charts, and
	// its browser access: a real container with Jupyter, two declared
	// ports, one shared (the long scp and rsync lines too).
	withUsageHistory(t, a.db, f.runningRental)
	if err := a.db.W.Model(&models.Rental{}).Where("id = ?", f.runningRental).Updates(map[string]any{"ports": "6006,7860",
		"access": `{"host":"gpu-node-17.cd-hitech.example.cn","port":32381,"user":"root","command":"ssh -p 32381 root@gpu-node-17.cd-hitech.example.cn","simulated":false,"container":true,"jupyter":{"port":8888,"kind":"lab"}}`}).Error; err != nil {
		t.Fatal(err)
	}
	if _, _, err := (&workspace.Service{DB: a.db}).CreateShare(ctx, f.actors[asOwner].user, f.runningRental, 6006, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	// Its idle stop under the lab's policy: the page shows both, what
	// applies and the GPUs' state; the organisation page the policy form.
	if err := a.db.W.Model(&models.Rental{}).Where("id = ?", f.runningRental).Updates(map[string]any{"idle_stop_below_pct": 40, "idle_stop_minutes": 120}).Error; err != nil {
		t.Fatal(err)
	}
	if err := a.db.W.Model(&models.Org{}).Where("id = ?", f.orgA.ID).Updates(map[string]any{"idle_policy_below_pct": 10, "idle_policy_minutes": 60}).Error; err != nil {
		t.Fatal(err)
	}
	p := newProviderFixture(t, a, "ops@layout-gpu.example", "Layout GPU")
	node, token := p.addNode(t, "lay-node-1")
	heartbeatSimulated(t, a, token, "a100-40g-sxm", 4)
	if _, err := p.svc.CreateOffer(ctx, p.owner.user, p.acc.Provider.ID, providers.OfferInput{NodeID: node.ID, GPU: "a100-40g-sxm", MaxGPUs: 4, PricePerGPUHourFen: 900}); err != nil {
		t.Fatal(err)
	}
	// A stopped rental that moved without its files, its node back: the
	// page offers a start, a no-GPU start, a start on the old node and a
	// release.
	var running models.Rental
	if err := a.db.R.First(&running, f.runningRental).Error; err != nil {
		t.Fatal(err)
	}
	var rented models.Offer
	if err := a.db.R.First(&rented, running.OfferID).Error; err != nil {
		t.Fatal(err)
	}
	stopped, _ := stoppedRentalWithVolume(t, a.db, running.OrgID, running.UserID, rented)
	left := ownVolume(t, a.db, running.OrgID, running.UserID, rented)
	if err := a.db.W.Model(&models.Volume{}).Where("id = ?", left).Update("left_by_rental_id", stopped).Error; err != nil {
		t.Fatal(err)
	}
	if err := a.db.W.Model(&models.Node{}).Where("id = ?", rented.NodeID).Updates(map[string]any{"health": models.NodeHealthy, "last_heartbeat_at": a.db.Now().UTC()}).Error; err != nil {
		t.Fatal(err)
	}
	var dc models.Datacenter
	if err := a.db.R.Order("id").First(&dc).Error; err != nil {
		t.Fatal(err)
	}
	pid := p.pid()
	// Someone invited, for the account page's invitations (a long name).
	team, err := svc.CreateOrg(ctx, owner.user, models.OrgTeam, "Layout Robotics Research and Development Team")
	if err != nil {
		t.Fatal(err)
	}
	invitee := loggedIn(a, "invitee", mustUser(t, a.db, "ivy@layout.example", "Ivy Invitee", false))
	if _, err := svc.Invite(ctx, owner.user, team.ID, invitee.user.Email, models.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	// The invoices pages: ¥2,000 paid by bank transfer, a 专票 with long
	// details issued, a 普票 waiting for the admin.
	wallet := &billing.Wallet{DB: a.db}
	paid, _, err := wallet.StartTopup(ctx, owner.user, f.orgA.ID, 200_000, models.MethodBank, "en")
	if err != nil {
		t.Fatal(err)
	}
	if err := wallet.ConfirmBankTransfer(ctx, plain.user, paid.ID, 200_000); err != nil {
		t.Fatal(err)
	}
	isvc := &invoices.Service{DB: a.db, Accounts: svc, BaseURL: "http://suanli.test"}
	invAsked, err := isvc.Request(ctx, owner.user, f.orgA.ID, invoices.Input{Kind: "normal", Title: "Peking University", TaxpayerID: "91350100M000100Y43",
		Email: "accounts-payable-department@very-long-company-domain.example.com", AmountFen: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	invIssued, err := isvc.Request(ctx, owner.user, f.orgA.ID, invoices.Input{Kind: "special", Title: "成都天府新区人工智能与机器人研究院有限责任公司（高新区分公司）",
		TaxpayerID: "91350100M000100Y43", Address: "成都市高新区天府大道北段 1700 号环球中心 E3 栋 12 层 1201 室", Phone: "028-8888 6666",
		Bank: "招商银行股份有限公司成都天府软件园支行", BankAccount: "6214 8300 0000 1234 5678", AmountFen: 123_456})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := isvc.Issue(ctx, plain.user, invIssued.ID, invoices.IssueInput{Number: "26510000000000000001",
		IssueDate: a.db.Now().In(pricing.Shanghai).Format("2006-01-02"), File: testPDF}); err != nil {
		t.Fatal(err)
	}
	type page struct {
		who  *actor // nil: a visitor
		path string
		all  bool // also at 1366
	}
	pages := []page{
		{nil, a.url(routenames.OffersList), true},
		{nil, a.url(routenames.OffersList) + query("from", "chengdu"), true},
		{nil, a.url(routenames.OffersShow, idParam(f.offer)), false},
		{nil, a.url(routenames.DatacentersShow, dc.Slug), true},
		{nil, a.url(routenames.SLA), false},
		{nil, a.url(routenames.TCO), false},
		{nil, a.url(routenames.APIDocs), false},
		{student, a.url(routenames.OffersList), true},
		{student, a.url(routenames.Console), true},
		{student, a.url(routenames.AdminHome), true},
		{student, a.url(routenames.AdminOutbox), false},
		{student, a.url(routenames.AdminUsers), false},
		{plain, a.url(routenames.Console), true},
		{owner, a.url(routenames.Console), false},
		{owner, a.url(routenames.AccountShow), false},
		{invitee, a.url(routenames.AccountShow), false},
		{student, a.url(routenames.TCO), false},
		{owner, a.url(routenames.OrgsShow, idParam(f.orgA.ID)), false},
		{owner, a.url(routenames.WalletShow, idParam(f.orgA.ID)), false},
		{owner, a.url(routenames.RentalsShow, idParam(f.runningRental)), false},
		{owner, a.url(routenames.RentalsShow, idParam(stopped)), false},
		{owner, a.url(routenames.RentalsNew, idParam(rented.ID)), false},
		{p.owner, a.url(routenames.ProviderDashboard, pid), false},
		{p.owner, a.url(routenames.ProviderNodes, pid), false},
		{p.owner, a.url(routenames.ProviderOffers, pid), false},
		{p.owner, a.url(routenames.ProviderDatacenters, pid), false},
		{p.owner, a.url(routenames.ProviderEarnings, pid), false},
		{owner, a.url(routenames.InvoicesPage, idParam(f.orgA.ID)), false},
		{plain, a.url(routenames.AdminInvoices), false},
		{plain, a.url(routenames.AdminInvoicesShow, idParam(invAsked.ID)), false},
		{plain, a.url(routenames.AdminInvoicesShow, idParam(invIssued.ID)), false},
	}
	shots := os.Getenv("SUANLI_SCREENSHOTS")
	b := newBrowser(t, 6*time.Minute)
	server, _ := url.Parse(a.srv.URL)
	as := func(who *actor, lang string) {
		t.Helper()
		if _, err := chromedp.Call(b, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		cookies := []*network.CookieParam{{Name: "lang", Value: lang, URL: a.srv.URL}}
		if who != nil {
			for _, ck := range who.c.Jar.Cookies(server) {
				cookies = append(cookies, &network.CookieParam{Name: ck.Name, Value: ck.Value, URL: a.srv.URL})
			}
		}
		if _, err := chromedp.Call(b, network.SetCookies, network.SetCookiesParams{Cookies: cookies}); err != nil {
			t.Fatal(err)
		}
	}
	for _, lang := range locales.Supported {
		for _, width := range []int64{1280, 1366, 390} {
			for _, pg := range pages {
				if width == 1366 && !pg.all {
					continue
				}
				as(pg.who, lang)
				who := "visitor"
				if pg.who != nil {
					who = pg.who.name
				}
				where := fmt.Sprintf("%s %dpx %s %s", lang, width, who, pg.path)
				if err := chromedp.Do(b, chromedp.EmulateViewport(width, 900), chromedp.Navigate(a.srv.URL+pg.path), chromedp.WaitVisible(chromedp.CSS("footer.site"))); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if got := eval[string](t, b, `document.documentElement.lang`); got != lang {
					t.Fatalf("%s: the page is in %q", where, got)
				}
				var m layoutMeasure
				if err := json.Unmarshal([]byte(eval[string](t, b, layoutProbe)), &m); err != nil {
					t.Fatal(err)
				}
				if shots != "" {
					png, err := chromedp.Run(b, chromedp.CaptureScreenshot())
					if err == nil {
						name := strings.NewReplacer("/", "_", "?", "_", "=", "-", "&", "_").Replace(fmt.Sprintf("%s-%d-%s%s.png", lang, width, strings.Fields(who)[0], pg.path))
						err = os.WriteFile(filepath.Join(shots, name), png, 0o644)
					}
					if err != nil {
						t.Logf("%s: screenshot: %v", where, err)
					}
				}
				if m.Doc > m.VW {
					t.Errorf("%s: the page is %d px wide in a %d px window", where, m.Doc, m.VW)
				}
				if len(m.Off) > 0 {
					t.Errorf("%s: off-screen in the header: %s", where, strings.Join(m.Off, ", "))
				}
				if m.BrandLines != 1 {
					t.Errorf("%s: the brand takes %d lines", where, m.BrandLines)
				}
				for _, tb := range m.Tables {
					if tb.Width > tb.Room || tb.Scroll > tb.Client {
						t.Errorf("%s: the offer table is %d px (scrolls %d) in %d px", where, tb.Width, tb.Scroll, tb.Room)
					}
				}
				// The invoice tables clip what overflows them (table.offers
				// hides its overflow): nothing in them wider than they are.
				if over := eval[string](t, b, invoiceTablesProbe); over != "" {
					t.Errorf("%s: an invoice table overflows: %s", where, over)
				}
				if width >= 1280 && m.Rows > 0 && m.RowMax > denseRow {
					t.Errorf("%s: offer rows up to %.0f px tall, want at most %d", where, m.RowMax, denseRow)
				}
			}
		}
	}
}
