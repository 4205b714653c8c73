package web_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"suanli/accounts"
	"suanli/models"
)

// screenshot saves a full-page PNG of the tab to /tmp/wallet-<name>.png,
// for a person to look at; a failure to save it only logs.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := "/tmp/wallet-" + name + ".png"
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// textOf returns the trimmed visible text of the first element matching
// the CSS selector sel, or "" when there is none.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return eval[string](t, ctx, `(() => { const el = document.querySelector(`+strconv.Quote(sel)+`); return el ? el.innerText.trim() : ""; })()`)
}

// waitText waits until the element matching sel has exactly the text want,
// and fails with what it showed instead.
func waitText(t *testing.T, ctx context.Context, sel, want, what string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.PollFunction[bool](
		`(sel, want) => { const el = document.querySelector(sel); return !!el && el.innerText.trim() === want; }`,
		chromedp.WithPollingArgs(sel, want),
		chromedp.WithPollingTimeout(0), // bounded by the test's context
	))
	if err != nil {
		t.Fatalf("%s: waiting for %s to read %q: %v; it reads %q\n%s", what, sel, want, err, textOf(t, ctx, sel), readPage(t, ctx))
	}
}

// waitHTMXIdle waits until no htmx request, swap or settle is under way.
func waitHTMXIdle(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`!document.querySelector(".htmx-request, .htmx-settling, .htmx-swapping")`,
		chromedp.WithPollingTimeout(0), // bounded by the test's context
	)); err != nil {
		t.Fatalf("waiting for htmx to settle: %v", err)
	}
}

// TestBrowserQuoteAndBankTopup is a renter's way from a price to money in
// the wallet, in real Chromium: the offer page's quote panel recalculates
// in place (htmx) when the renter changes the hours; the renter tops up
// their personal wallet by bank transfer and gets the transfer details; a
// platform admin, in a browser of their own, confirms the money arrived;
// the renter's wallet then holds it, the ledger shows the top-up, and the
// top-up page has become a receipt.
func TestBrowserQuoteAndBankTopup(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t) // skip (or fail under CI) before setting anything up
	a := newSQLiteApp(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	renter := newEnglishBrowser(t, ctx)

	// (1) The quote panel of the demo H100 SXM offer in Chengdu Science City.
	var offer models.Offer
	if err := a.db.R.Where("gpu_model = ? AND datacenter_id = (SELECT id FROM datacenters WHERE slug = 'cd-science-city')", "h100-sxm").
		First(&offer).Error; err != nil {
		t.Fatalf("find the Science City H100 SXM demo offer: %v", err)
	}
	offerURL := a.srv.URL + "/offers/" + strconv.FormatInt(offer.ID, 10)
	p := open(t, renter, offerURL, "offer page")
	must(t, p.Lang == "en", "the offer page is not English (<html lang=%q>)\n%s", p.Lang, p)
	if err := chromedp.Do(renter, chromedp.WaitVisible(chromedp.ID("quote-total"))); err != nil {
		t.Fatalf("no #quote-total on %s: %v\n%s", offerURL, err, p)
	}
	t.Logf("default quote: %q", textOf(t, renter, "#quote-total"))
	eval[int](t, renter, `window.__noReload = 1`)

	// A fixed peak start: Tuesday 1 December 2026, 10:00 Shanghai time. The
	// datetime-local input takes keys in the host's locale format, so the
	// value is set directly and the events a person's edit fires are sent.
	got := eval[string](t, renter, `(() => {
		const el = document.getElementById("q-start");
		el.value = "2026-12-01T10:00";
		el.dispatchEvent(new Event("input", {bubbles: true}));
		el.dispatchEvent(new Event("change", {bubbles: true}));
		return el.value;
	})()`)
	must(t, got == "2026-12-01T10:00", "#q-start took %q, want 2026-12-01T10:00", got)
	// The window line tells that the answer is for the new start, whatever
	// the default quote happened to be.
	if _, err := chromedp.Run(renter, chromedp.Poll[bool](
		`(document.getElementById("quote-result") || {innerText: ""}).innerText.includes("2026-12-01 10:00")`,
		chromedp.WithPollingTimeout(0), // bounded by the test's context
	)); err != nil {
		t.Fatalf("the quote did not follow #q-start: %v; #quote-result reads %q", err, textOf(t, renter, "#quote-result"))
	}
	waitHTMXIdle(t, renter)
	one := textOf(t, renter, "#quote-total")
	t.Logf("1 GPU × 1 h from 2026-12-01 10:00: %q (%s)", one, textOf(t, renter, "#quote-result"))
	// ¥35.50 of GPU and an hour of the default 50 GB volume at ¥0.30 a
	// GB-month (2.08 fen → ¥0.02).
	must(t, one == "¥35.52", "#quote-total = %q for 1 GPU × 1 h at peak with 50 GB of storage, want ¥35.52\n#quote-result: %s", one, textOf(t, renter, "#quote-result"))

	// Three hours, typed as a person would: ¥106.50 and 6.25 fen of storage.
	typeInto(t, renter, [][2]string{{"q-hours", "3"}})
	waitText(t, renter, "#quote-total", "¥106.56", "1 GPU × 3 h")
	waitHTMXIdle(t, renter)
	t.Logf("1 GPU × 3 h: %q (%s)", textOf(t, renter, "#quote-total"), textOf(t, renter, "#quote-result"))
	must(t, strings.Contains(textOf(t, renter, "#quote-result"), "2026-12-01 13:00"),
		"#quote-result does not end the window at 13:00 for 3 h: %q", textOf(t, renter, "#quote-result"))
	must(t, eval[bool](t, renter, `window.__noReload === 1`), "changing the quote reloaded the page; htmx should swap #quote-result in place")
	must(t, eval[string](t, renter, `document.getElementById("q-hours").value`) == "3", "#q-hours lost its value after the swap")
	screenshot(t, renter, "quote")

	// (2) The renter logs in and tops up their personal wallet by bank
	// transfer.
	const (
		email    = "wang.fang@example.com"
		password = "chengdu-gpu-2026!"
	)
	svc := &accounts.Service{DB: a.db, BaseURL: "http://suanli.test"}
	user, err := svc.CreateUser(context.Background(), email, password, "Wang Fang", false)
	if err != nil {
		t.Fatalf("create user: %v", err)
	}
	orgs, err := a.db.OrgsOfUser(context.Background(), user.ID)
	if err != nil || len(orgs) == 0 || !orgs[0].Org.Personal {
		t.Fatalf("personal organisation of %s: %v (orgs: %+v)", email, err, orgs)
	}
	orgID := strconv.FormatInt(orgs[0].Org.ID, 10)
	walletURL := a.srv.URL + "/orgs/" + orgID + "/wallet"

	open(t, renter, a.srv.URL+"/login", "login form")
	typeInto(t, renter, [][2]string{{"f-email", email}, {"f-password", password}})
	p = click(t, renter, "#login-submit", "log in")
	must(t, p.Path != "/login", "the login failed\n%s", p)

	p = open(t, renter, walletURL, "wallet before the top-up")
	if err := chromedp.Do(renter, chromedp.WaitVisible(chromedp.ID("wallet-balance"))); err != nil {
		t.Fatalf("no #wallet-balance on %s: %v\n%s", walletURL, err, p)
	}
	balance := textOf(t, renter, "#wallet-balance")
	t.Logf("balance before: %q", balance)
	// CreateUser marks the email verified without the trial credit, which
	// only the verification link grants.
	must(t, balance == "¥0.00", "#wallet-balance = %q before any top-up, want ¥0.00\n%s", balance, p)
	screenshot(t, renter, "wallet-empty")

	// The top-up form's amount: scoped to its form, since the refund form
	// has an amount field too.
	const topupAmount = `form[action$="/wallet/topups"] input[name=amount]`
	if n := eval[int](t, renter, `document.querySelectorAll("#f-amount").length`); n != 1 {
		t.Logf("note: %d elements with id f-amount on the wallet page", n)
	}
	must(t, eval[bool](t, renter, `document.getElementById("f-amount") === document.querySelector(`+strconv.Quote(topupAmount)+`)`),
		"#f-amount is not the top-up form's amount field")
	typeInto(t, renter, [][2]string{{"f-amount", "500"}})
	if err := chromedp.Do(renter, chromedp.Click(chromedp.ID("method-bank"))); err != nil {
		t.Fatalf("choose bank transfer: %v\n%s", err, readPage(t, renter))
	}
	must(t, eval[bool](t, renter, `document.getElementById("method-bank").checked`), "#method-bank is not checked after clicking it")
	p = click(t, renter, "#topup-submit", "bank top-up")
	t.Logf("after the top-up: %s — %q", p.Path, p.H1)
	m := regexp.MustCompile(`^/topups/(\d+)$`).FindStringSubmatch(p.Path)
	must(t, m != nil, "the top-up landed on %s, want /topups/<id>\n%s", p.Path, p)
	topupID := m[1]
	topupURL := a.srv.URL + p.Path
	if err := chromedp.Do(renter, chromedp.WaitVisible(chromedp.ID("bank-reference"))); err != nil {
		t.Fatalf("no #bank-reference on %s: %v\n%s", p.Path, err, p)
	}
	reference := textOf(t, renter, "#bank-reference")
	t.Logf("transfer reference: %q", reference)
	must(t, reference != "", "#bank-reference is empty\n%s", p)
	must(t, strings.Contains(p.H1, reference), "top-up page h1 = %q, want it to name the reference %q", p.H1, reference)
	must(t, strings.Contains(p.Text, "¥500.00"), "the top-up page does not show the amount ¥500.00\n%s", p)
	for _, want := range []string{"Test Bank", "Suanli", "6222 0000"} {
		must(t, strings.Contains(p.Text, want), "the top-up page does not show the bank detail %q\n%s", want, p)
	}
	demo := eval[string](t, renter, `[...document.querySelectorAll("main .notice.demo")].map(e => e.innerText).join(" | ")`)
	t.Logf("demo notice: %q", demo)
	must(t, strings.Contains(demo, "example details"), "the bank details are not marked as example details; .notice.demo = %q\n%s", demo, p)
	screenshot(t, renter, "topup-pending")

	// The pending top-up is listed on the wallet, and credits nothing yet.
	p = open(t, renter, walletURL, "wallet with a pending top-up")
	must(t, strings.Contains(p.Text, reference), "the wallet does not list the pending top-up %s\n%s", reference, p)
	must(t, textOf(t, renter, "#wallet-balance") == "¥0.00", "a pending bank transfer changed the balance to %q", textOf(t, renter, "#wallet-balance"))

	// (3) A platform admin confirms the transfer, in a browser of their own.
	if _, err := svc.CreateUser(context.Background(), "admin@suanli.test", "admin-password-2026", "Admin", true); err != nil {
		t.Fatalf("create admin: %v", err)
	}
	admin := newEnglishBrowser(t, ctx)
	open(t, admin, a.srv.URL+"/login", "admin login form")
	typeInto(t, admin, [][2]string{{"f-email", "admin@suanli.test"}, {"f-password", "admin-password-2026"}})
	p = click(t, admin, "#login-submit", "admin login")
	must(t, p.Path != "/login", "the admin login failed\n%s", p)
	p = open(t, admin, a.srv.URL+"/admin", "admin page")
	card := "#topup-" + topupID
	if err := chromedp.Do(admin, chromedp.WaitVisible(chromedp.CSS(card))); err != nil {
		t.Fatalf("no bank transfer card %s on /admin: %v\n%s", card, err, p)
	}
	cardText := textOf(t, admin, card)
	t.Logf("card %s: %q", card, cardText)
	must(t, strings.Contains(cardText, reference) && strings.Contains(cardText, "¥500.00"),
		"bank transfer card %s = %q, want the reference %s and ¥500.00", card, cardText, reference)
	screenshot(t, admin, "admin")
	if err := chromedp.Do(admin,
		chromedp.Clear(chromedp.CSS(card+` input[name=received]`)),
		chromedp.SendKeys(chromedp.CSS(card+` input[name=received]`), "500"),
	); err != nil {
		t.Fatalf("type the received amount: %v\n%s", err, readPage(t, admin))
	}
	p = click(t, admin, card+" button.approve", "confirm received")
	t.Logf("after confirming: %s", p.Path)
	must(t, p.Path == "/admin", "confirming landed on %s, want /admin\n%s", p.Path, p)
	must(t, strings.Contains(p.Text, "Credited."), "no confirmation after confirming the transfer\n%s", p)
	must(t, !eval[bool](t, admin, `!!document.querySelector("`+card+`")`), "the bank transfer card %s is still on /admin after confirming\n%s", card, p)
	screenshot(t, admin, "admin-confirmed")

	// (4) Back in the renter's browser: the money, the ledger, the receipt.
	p = open(t, renter, walletURL, "wallet after the confirmation")
	if err := chromedp.Do(renter, chromedp.WaitVisible(chromedp.ID("wallet-balance"))); err != nil {
		t.Fatalf("no #wallet-balance on %s: %v\n%s", walletURL, err, p)
	}
	balance = textOf(t, renter, "#wallet-balance")
	t.Logf("balance after: %q", balance)
	must(t, balance == "¥500.00", "#wallet-balance = %q after the confirmed ¥500 transfer, want ¥500.00\n%s", balance, p)
	rows := eval[[]string](t, renter, `[...document.querySelectorAll("#ledger tr")].map(tr => tr.innerText.replace(/\s+/g, " ").trim())`)
	t.Logf("ledger: %q", rows)
	var topupRow bool
	for _, r := range rows {
		if strings.Contains(r, "Top-up") && strings.Contains(r, "+¥500.00") {
			topupRow = true
		}
	}
	must(t, topupRow, "no Top-up row of +¥500.00 in #ledger; rows: %q\n%s", rows, p)
	screenshot(t, renter, "wallet-funded")

	p = open(t, renter, topupURL, "receipt")
	t.Logf("receipt: %q", p.H1)
	if err := chromedp.Do(renter, chromedp.WaitVisible(chromedp.ID("receipt-amount"))); err != nil {
		t.Fatalf("no #receipt-amount on %s after confirmation: %v\n%s", p.Path, err, p)
	}
	must(t, textOf(t, renter, "#receipt-amount") == "¥500.00", "#receipt-amount = %q, want ¥500.00\n%s", textOf(t, renter, "#receipt-amount"), p)
	must(t, strings.TrimSpace(p.H1) == "Top-up receipt", "receipt h1 = %q, want \"Top-up receipt\"\n%s", p.H1, p)
	must(t, strings.Contains(p.Text, reference), "the receipt does not show the reference %s\n%s", reference, p)
	must(t, !strings.Contains(p.Text, "6222 0000"), "the receipt still shows the bank details to transfer to\n%s", p)
	screenshot(t, renter, "receipt")
}
