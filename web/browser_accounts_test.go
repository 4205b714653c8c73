package web_test

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"suanli/accounts"
)

// newEnglishBrowser starts a fresh headless Chromium (its own process and
// user-data-dir, so no cookie is shared with any other browser of the
// test) that asks for English pages, and returns a tab context that lives
// as long as parent.
func newEnglishBrowser(t *testing.T, parent context.Context, more ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := chromiumPath(t)
	// The profile directory is made before the cancels are registered so
	// that, cleanups running last-in first-out, Chromium has exited before
	// the directory is removed.
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("lang", "en"),
		chromedp.Flag("accept-lang", "en"),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, acancel := chromedp.NewExecAllocator(parent, append(opts, more...)...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(bcancel)
	// The first Run starts the browser; fail here, clearly, if it cannot.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return bctx
}

// labPage is what the journey reads off a page: where it is, its language,
// and its visible text (for assertions and for failure messages).
type labPage struct {
	Path  string `json:"path"`
	Lang  string `json:"lang"`
	Title string `json:"title"`
	H1    string `json:"h1"`
	Text  string `json:"text"`
}

func (p labPage) String() string {
	text := p.Text
	if len(text) > 1500 {
		text = text[:1500] + "…"
	}
	return "page " + p.Path + " (lang " + p.Lang + ", h1 " + strings.TrimSpace(p.H1) + "):\n" + text
}

func readPage(t *testing.T, ctx context.Context) labPage {
	t.Helper()
	raw := eval[string](t, ctx, `JSON.stringify({
		path: location.pathname + location.search,
		lang: document.documentElement.lang,
		title: document.title,
		h1: (document.querySelector("h1") || {}).innerText || "",
		text: document.body ? document.body.innerText : ""
	})`)
	var p labPage
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatalf("decode page summary: %v", err)
	}
	return p
}

// click clicks sel and waits for the page that the click loads (a form
// post followed by its redirect, or a link), and checks its status.
func click(t *testing.T, ctx context.Context, sel string, what string) labPage {
	t.Helper()
	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("%s: click %s: %v\n%s", what, sel, err, readPage(t, ctx))
	}
	p := readPage(t, ctx)
	if res.Status != 200 {
		t.Fatalf("%s: click %s answered %d %s\n%s", what, sel, res.Status, res.StatusText, p)
	}
	return p
}

// open loads u in the tab and checks its status.
func open(t *testing.T, ctx context.Context, u, what string) labPage {
	t.Helper()
	res, err := chromedp.Run(ctx, chromedp.NavigateResponse(u))
	if err != nil {
		t.Fatalf("%s: open %s: %v", what, u, err)
	}
	p := readPage(t, ctx)
	if res.Status != 200 {
		t.Fatalf("%s: %s answered %d %s\n%s", what, u, res.Status, res.StatusText, p)
	}
	return p
}

// typeInto types v into each field (id → value), in order.
func typeInto(t *testing.T, ctx context.Context, fields [][2]string) {
	t.Helper()
	for _, f := range fields {
		if err := chromedp.Do(ctx,
			chromedp.WaitVisible(chromedp.ID(f[0])),
			chromedp.Clear(chromedp.ID(f[0])),
			chromedp.SendKeys(chromedp.ID(f[0]), f[1]),
		); err != nil {
			t.Fatalf("type into #%s: %v\n%s", f[0], err, readPage(t, ctx))
		}
	}
}

var mailLink = regexp.MustCompile(`http://suanli\.test(/[^\s]+)`)

// mailedLink returns, on srv, the link of the newest mail to `to` whose
// link goes to path.
func (a *app) mailedLink(t *testing.T, to, path string) string {
	t.Helper()
	mails, err := a.db.Outbox(context.Background(), to, 10)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, m := range mails { // newest first
		for _, match := range mailLink.FindAllStringSubmatch(m.Body, -1) {
			u, err := url.Parse(match[1])
			if err != nil {
				t.Fatalf("mail %q to %s has a bad link %q: %v", m.Subject, to, match[0], err)
			}
			if u.Path == path {
				t.Logf("mail to %s: %q → %s", to, m.Subject, u.Path)
				return a.srv.URL + u.RequestURI()
			}
			seen = append(seen, match[0])
		}
	}
	t.Fatalf("no mail to %s with a link to %s among %d mails (links seen: %q)", to, path, len(mails), seen)
	return ""
}

// offerPrices summarises the H100 SXM student list as the member sees it.
type offerPrices struct {
	StudentBadge bool `json:"studentBadge"` // "Student pricing" in the header
	BaseCount    int  `json:"baseCount"`    // .price-base elements
	Has2840      bool `json:"has2840"`      // "¥28.40" anywhere in the DOM
	Rows         []struct {
		GPU       string `json:"gpu"`
		DC        string `json:"dc"`
		Price     string `json:"price"`
		Base      string `json:"base"`
		BaseStyle string `json:"baseStyle"` // computed text-decoration-line
	} `json:"rows"`
}

func readOfferPrices(t *testing.T, ctx context.Context) offerPrices {
	t.Helper()
	raw := eval[string](t, ctx, `JSON.stringify({
		studentBadge: [...document.querySelectorAll("header .badge")].some(b => b.textContent.trim() === "Student pricing"),
		baseCount: document.querySelectorAll(".price-base").length,
		has2840: document.body.textContent.includes("¥28.40"),
		rows: [...document.querySelectorAll("tr.offer")].map(tr => {
			const cell = s => { const el = tr.querySelector(s); return el ? el.innerText.replace(/\s+/g, " ").trim() : ""; };
			const base = tr.querySelector(".price-base");
			return {
				gpu: cell("td.gpu"), dc: cell("td.dc"), price: cell("td.price"),
				base: base ? base.textContent.trim() : "",
				baseStyle: base ? getComputedStyle(base).textDecorationLine : "",
			};
		}),
	})`)
	var p offerPrices
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatalf("decode offer summary: %v", err)
	}
	return p
}

func (p offerPrices) String() string {
	var b strings.Builder
	b.WriteString("header Student pricing badge: ")
	if p.StudentBadge {
		b.WriteString("yes")
	} else {
		b.WriteString("no")
	}
	b.WriteString("; .price-base elements: ")
	b.WriteString(strconv.Itoa(p.BaseCount))
	for _, r := range p.Rows {
		b.WriteString("\n  • " + r.GPU + " | " + r.DC + " | price: " + r.Price)
		if r.Base != "" {
			b.WriteString(" | base: " + r.Base + " (text-decoration-line: " + r.BaseStyle + ")")
		}
	}
	return b.String()
}

// TestBrowserLabJourney is a student's way to student prices in real
// Chromium: sign up, verify the email from the mail, apply as a lab,
// confirm the institutional address from its mail; a platform admin, in a
// browser of their own, approves the lab; the student's offer list then
// shows student prices, which it did not before the approval.
func TestBrowserLabJourney(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t) // skip (or fail under CI) before setting anything up
	a := newSQLiteApp(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	member := newEnglishBrowser(t, ctx)

	const (
		email    = "li.wei@example.com"
		name     = "Li Wei"
		password = "tianfu-gpu-2026!"
		eduEmail = "li.wei@scu.edu.cn"
	)

	// (1) Sign up; told to look for the verification link (nobody is
	// logged in yet: sign-up answers alike whether the address is new).
	p := open(t, member, a.srv.URL+"/signup", "sign-up form")
	must(t, p.Lang == "en", "the sign-up page is not English (<html lang=%q>); --accept-lang=en should choose English\n%s", p.Lang, p)
	typeInto(t, member, [][2]string{{"f-email", email}, {"f-name", name}, {"f-password", password}})
	if lang := eval[string](t, member, `document.getElementById("f-lang").value`); lang != "en" {
		t.Errorf("the sign-up language select preselects %q for an English reader, want en", lang)
	}
	p = click(t, member, "#signup-submit", "sign up")
	t.Logf("after sign-up: %s — %q", p.Path, p.H1)
	must(t, strings.TrimSpace(p.H1) == "Check your email" && strings.Contains(p.Text, email), "sign-up answered %q, want the check-your-email page naming %s\n%s", p.H1, email, p)

	// (2) The verification link from the outbox, opened in the browser,
	// verifies and logs in.
	p = open(t, member, a.mailedLink(t, email, "/verify"), "verification link")
	t.Logf("verification page: %q", p.H1)
	must(t, strings.TrimSpace(p.H1) == "Email verified", "verification page h1 = %q, want \"Email verified\"\n%s", p.H1, p)
	must(t, strings.Contains(p.Text, email+" is verified"), "verification page does not say %s is verified\n%s", email, p)

	// (3) Apply as a lab from the account page.
	p = open(t, member, a.srv.URL+"/account", "account page")
	must(t, !strings.Contains(p.Text, "not verified"), "the account page still says not verified after the link\n%s", p)
	p = click(t, member, "#apply-lab", "apply-lab link")
	must(t, p.Path == "/labs/apply", "#apply-lab went to %s, want /labs/apply\n%s", p.Path, p)
	typeInto(t, member, [][2]string{
		{"f-institution", "Sichuan University"},
		{"f-lab_name", "Vision Lab"},
		{"f-supervisor", "Prof. Zhang"},
		{"f-email_domain", "scu.edu.cn"},
		{"f-edu_email", eduEmail},
	})
	p = click(t, member, "#lab-submit", "lab application")
	t.Logf("after applying: %s — %q", p.Path, p.H1)
	orgPath := regexp.MustCompile(`^/orgs/(\d+)$`).FindStringSubmatch(p.Path)
	must(t, orgPath != nil, "the lab application landed on %s, want /orgs/<id>\n%s", p.Path, p)
	orgID := orgPath[1]
	must(t, strings.Contains(p.H1, "Vision Lab"), "org page h1 = %q, want the lab's name\n%s", p.H1, p)
	must(t, strings.Contains(p.Text, "awaits review"), "the org page does not show the lab awaiting review\n%s", p)
	must(t, strings.Contains(p.Text, eduEmail), "the org page does not mention the confirmation mailed to %s\n%s", eduEmail, p)

	// (4) The confirmation link mailed to the institutional address, in the
	// member's (logged-in) browser.
	p = open(t, member, a.mailedLink(t, eduEmail, "/labs/confirm"), "lab confirmation link")
	t.Logf("after confirming: %s", p.Path)
	must(t, p.Path == "/orgs/"+orgID, "the confirmation link landed on %s, want /orgs/%s\n%s", p.Path, orgID, p)
	must(t, strings.Contains(p.Text, "Your institutional address is confirmed."), "no confirmation flash\n%s", p)

	// Not approved yet: no student prices, whatever the filter.
	offersURL := a.srv.URL + "/offers?gpu=h100-sxm&student=1"
	p = open(t, member, offersURL, "offers before approval")
	if err := chromedp.Do(member, chromedp.WaitVisible(chromedp.ID("result-count"))); err != nil {
		t.Fatalf("offers before approval: %v\n%s", err, p)
	}
	before := readOfferPrices(t, member)
	t.Logf("before approval: %s", before)
	must(t, len(before.Rows) > 0, "no offers on %s before approval\n%s", offersURL, p)
	must(t, !before.Has2840, "¥28.40 (the student price) shows before the lab is approved\n%s", before)
	must(t, before.BaseCount == 0, "struck-through base prices show before the lab is approved\n%s", before)
	must(t, !before.StudentBadge, "the header shows Student pricing before the lab is approved\n%s", before)

	// (5) A platform admin approves the lab, in a browser of their own.
	if _, err := (&accounts.Service{DB: a.db, BaseURL: "http://suanli.test"}).CreateUser(context.Background(),
		"admin@suanli.test", "admin-password-2026", "Admin", true); err != nil {
		t.Fatalf("create admin: %v", err)
	}
	admin := newEnglishBrowser(t, ctx)
	open(t, admin, a.srv.URL+"/login", "admin login form")
	typeInto(t, admin, [][2]string{{"f-email", "admin@suanli.test"}, {"f-password", "admin-password-2026"}})
	p = click(t, admin, "#login-submit", "admin login")
	must(t, p.Path != "/login", "the admin login failed\n%s", p)
	p = open(t, admin, a.srv.URL+"/admin", "admin page")
	card := "#review-" + orgID
	if err := chromedp.Do(admin, chromedp.WaitVisible(chromedp.CSS(card))); err != nil {
		t.Fatalf("no review card %s on /admin: %v\n%s", card, err, p)
	}
	cardText, err := chromedp.Run(admin, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatal(err)
	}
	must(t, strings.Contains(cardText, "Vision Lab") && strings.Contains(cardText, "Sichuan University"),
		"review card %s = %q, want the Vision Lab application", card, cardText)
	p = click(t, admin, card+" button.approve", "approve")
	t.Logf("after approving: %s", p.Path)
	must(t, p.Path == "/admin", "approving landed on %s, want /admin\n%s", p.Path, p)
	must(t, strings.Contains(p.Text, "Done."), "no confirmation after approving\n%s", p)
	must(t, !eval[bool](t, admin, `!!document.querySelector("`+card+`")`), "the review card %s is still on /admin after approval\n%s", card, p)

	// (6) Back in the member's browser: student prices.
	p = open(t, member, offersURL, "offers after approval")
	if err := chromedp.Do(member, chromedp.WaitVisible(chromedp.ID("result-count"))); err != nil {
		t.Fatalf("offers after approval: %v\n%s", err, p)
	}
	after := readOfferPrices(t, member)
	t.Logf("after approval: %s", after)
	must(t, after.StudentBadge, "the header does not show the Student pricing badge after approval\n%s", after)
	var found bool
	for _, r := range after.Rows {
		if !strings.Contains(r.DC, "Science City") {
			continue
		}
		found = true
		if r.Base != "¥35.50" {
			t.Errorf("Science City H100 SXM row: struck-through base price (.price-base) = %q, want ¥35.50", r.Base)
		}
		if r.Base != "" && !strings.Contains(r.BaseStyle, "line-through") {
			t.Errorf("Science City H100 SXM row: .price-base is not struck through (text-decoration-line: %q)", r.BaseStyle)
		}
		if !strings.Contains(r.Price, "¥28.40") {
			t.Errorf("Science City H100 SXM row: price cell = %q, want the student price ¥28.40 (¥35.50 − 20%%)", r.Price)
		}
		if !strings.Contains(r.GPU, "Student −20%") {
			t.Errorf("Science City H100 SXM row: GPU cell = %q, want the Student −20%% badge", r.GPU)
		}
	}
	must(t, found, "no Chengdu Science City H100 SXM offer on %s\n%s", offersURL, after)
	must(t, after.BaseCount > 0, "no struck-through base price (.price-base) after approval\n%s", after)
	must(t, after.Has2840, "¥28.40 does not appear after approval\n%s", after)

	// The student's prices are theirs: the admin, not a lab member, sees
	// the same list (rendered just after it) at base prices.
	p = open(t, admin, offersURL, "offers as the admin")
	if err := chromedp.Do(admin, chromedp.WaitVisible(chromedp.ID("result-count"))); err != nil {
		t.Fatalf("offers as the admin: %v\n%s", err, p)
	}
	other := readOfferPrices(t, admin)
	t.Logf("as the admin: %s", other)
	must(t, !other.Has2840 && other.BaseCount == 0 && !other.StudentBadge,
		"a user who is no lab member sees student prices (cached rows shared across viewers?)\n%s", other)
}
