package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/agent"
	"suanli/agent/workload"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/gpu"
	"suanli/handlers"
	"suanli/models"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/routenames"
	"suanli/views"
	"suanli/workers"
)

// rentalsApp is the real router whose rentals are provisioned for real: a
// River queue that works the jobs (the harness's only stores them).
func rentalsApp(t *testing.T) (*app, *rentals.Service) {
	t.Helper()
	return rentalsAppOn(t, dbtest.SQLite(t))
}

// rentalsAppOn is rentalsApp on db, with more changes to the handler's
// dependencies.
func rentalsAppOn(t *testing.T, db *models.DB, more ...func(*handlers.Handler)) (*app, *rentals.Service) {
	t.Helper()
	var svc *rentals.Service
	a := newAppWith(t, db, func(h *handlers.Handler) {
		for _, f := range more {
			f(h)
		}
		svc = h.Rentals
		q, err := workers.New(h.DB, workers.Options{Work: true, Rentals: h.Rentals, FetchPoll: 50 * time.Millisecond,
			AvailabilityEvery: time.Hour, MeterEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		h.Rentals.Jobs = q
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = q.Stop(ctx)
		})
	})
	return a, svc
}

// simAgent is a node's simulated agent: its GPUs (for faults), and a
// switch that makes it go dark as a lost network would.
type simAgent struct {
	sim    *gpu.Sim
	paused atomic.Bool
}

// startSimulatedAgent runs a node agent for the node's seeded GPUs in this
// process, as `serve --demo` does: go-nvml mock GPUs, a launcher that
// starts nothing, speaking HTTP to the test server with a fresh node
// credential. It stops when the test ends. It returns, with the agent's
// GPUs and its pause switch, when the agent has reported every GPU healthy.
func startSimulatedAgent(t *testing.T, a *app, svc *rentals.Service, nodeID int64) *simAgent {
	t.Helper()
	var n models.Node
	if err := a.db.R.First(&n, nodeID).Error; err != nil {
		t.Fatal(err)
	}
	return startAgentWith(t, a, svc, nodeID, &agent.SimulatedLauncher{Host: n.Name + ".sim.invalid"})
}

// startAgentWith is startSimulatedAgent with the launcher l (a docker
// launcher running real containers, say).
func startAgentWith(t *testing.T, a *app, svc *rentals.Service, nodeID int64, l agent.Launcher) *simAgent {
	t.Helper()
	ctx := context.Background()
	var n models.Node
	if err := a.db.R.First(&n, nodeID).Error; err != nil {
		t.Fatal(err)
	}
	var uuids []string
	if err := a.db.R.Model(&models.GPU{}).Where("node_id = ?", nodeID).Order("idx").Pluck("uuid", &uuids).Error; err != nil {
		t.Fatal(err)
	}
	sim, err := gpu.SimulateCatalog(n.GPUModel, len(uuids), gpu.WithUUIDs(uuids))
	if err != nil {
		t.Fatal(err)
	}
	reader, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cred, err := svc.Fleet().IssueCredential(ctx, nodeID)
	if err != nil {
		t.Fatal(err)
	}
	sa := &simAgent{sim: sim}
	var tunnel http.Handler
	if w, ok := l.(workload.Workloads); ok {
		tunnel = workload.NewHandler(w, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	ag, err := agent.New(agent.Config{Server: a.srv.URL, Token: cred, GPUs: reader, Launcher: l, Tunnel: tunnel,
		Silent: func() bool { return sa.paused.Load() || sim.Silent() }, HeartbeatEvery: 100 * time.Millisecond, PollWait: time.Second, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer reader.Close()
		_ = ag.Run(actx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		var healthy int64
		if err := a.db.R.Model(&models.GPU{}).Where("node_id = ? AND health = ?", nodeID, models.GPUHealthy).Count(&healthy).Error; err != nil {
			t.Fatal(err)
		}
		if int(healthy) == len(uuids) {
			return sa
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d's simulated agent did not report its %d GPUs healthy (%d are)", nodeID, len(uuids), healthy)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rtxOffer is the demo offer the rental journeys use: Rongcheng AI's four
// RTX 4090 in Chengdu Hi-tech Zone, none of them busy.
func rtxOffer(t *testing.T, db *models.DB) models.Offer {
	t.Helper()
	var o models.Offer
	err := db.R.Raw(`SELECT o.* FROM offers o JOIN providers p ON p.id = o.provider_id JOIN datacenters d ON d.id = o.datacenter_id
		WHERE p.slug = 'demo-rongcheng-ai' AND d.slug = 'cd-hitech' AND o.gpu_model = 'rtx-4090' ORDER BY o.id LIMIT 1`).Scan(&o).Error
	if err != nil || o.ID == 0 {
		t.Fatalf("the Rongcheng AI RTX 4090 demo offer: %v", err)
	}
	return o
}

// fundedRenter is a verified user whose personal wallet holds fen.
func fundedRenter(t *testing.T, db *models.DB, email, password string, fen int64) (*models.User, int64) {
	t.Helper()
	ctx := context.Background()
	u, err := (&accounts.Service{DB: db}).CreateUser(ctx, email, password, "Li Lei", false)
	if err != nil {
		t.Fatal(err)
	}
	orgs, err := db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("the renter's organisations: %v %v", orgs, err)
	}
	org := orgs[0].Org.ID
	if fen > 0 {
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, org, fen, "promo_credit", "test funds", nil, nil, db.Now().UTC())
		}); err != nil {
			t.Fatal(err)
		}
	}
	return u, org
}

// waitFor polls a JavaScript condition (generously) and fails with the
// page when it never holds. A page that follows a rental reloads itself
// when the status changes, so an evaluation that meets a navigation is
// tried again, and the condition must hold on a page that has loaded.
func waitFor(t *testing.T, ctx context.Context, cond, what string) {
	t.Helper()
	full := `document.readyState === "complete" && !!(` + cond + `)`
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](full))
		if err == nil && ok {
			return
		}
		last = err
		if ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("waiting for %s (%s): gave up (last error %v)\n%s", what, cond, last, readPage(t, ctx))
}

// rentalStatusIs is true when the rental page's live block shows status.
func rentalStatusIs(status string) string {
	return `(() => { const el = document.querySelector("#rental-live [data-status]"); return !!el && el.dataset.status === ` + strconv.Quote(status) + `; })()`
}

// rentalShot saves a full-page PNG of the tab to /tmp/rentals-<name>.png,
// for a person to look at; a failure to save it only logs.
func rentalShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	path := "/tmp/rentals-" + name + ".png"
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// TestBrowserRentAndStop is a renter's way from an offer to running GPUs
// and back, in real Chromium, against a simulated node agent: logged out,
// the offer's Rent button goes through the login page to the rent form;
// the renter asks for four GPUs with an SSH key and lands on the rental's
// page, which follows the rental (htmx) until it runs: the access command,
// the NVML checks that passed and a ticking cost. The console lists it. In
// Chinese the status reads 运行中. Stop ends it, and the page says so.
func TestBrowserRentAndStop(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t) // skip (or fail under CI) before setting anything up
	a, svc := rentalsApp(t)
	offer := rtxOffer(t, a.db)
	startSimulatedAgent(t, a, svc, offer.NodeID)
	const (
		email    = "li.lei@example.com"
		password = "tianfu-gpu-2026!"
	)
	_, org := fundedRenter(t, a.db, email, password, 100_000)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	t.Cleanup(cancel)
	b := newEnglishBrowser(t, ctx)

	// (1) Logged out, the offer's Rent button goes through the login page.
	p := open(t, b, a.srv.URL+"/offers/"+strconv.FormatInt(offer.ID, 10), "offer page")
	must(t, p.Lang == "en", "the offer page is not English (<html lang=%q>)", p.Lang)
	p = click(t, b, "#offer-rent", "Rent button, logged out")
	must(t, strings.HasPrefix(p.Path, "/login?next="), "Rent while logged out landed on %s, want /login?next=…\n%s", p.Path, p)
	typeInto(t, b, [][2]string{{"f-email", email}, {"f-password", password}})
	p = click(t, b, "#login-submit", "log in")
	rentPath := "/offers/" + strconv.FormatInt(offer.ID, 10) + "/rent"
	must(t, p.Path == rentPath, "after logging in: %s, want the rent form %s\n%s", p.Path, rentPath, p)
	must(t, strings.Contains(p.Text, "billed per second"), "the rent form does not state the billing rule\n%s", p)
	must(t, strings.Contains(p.Text, "NVML health checks"), "the rent form does not say the GPUs are checked first\n%s", p)
	must(t, strings.Contains(p.Text, "Simulated"), "the rent form of a demo offer is not labelled simulated\n%s", p)
	t.Logf("rent form: %q", textOf(t, b, "#rent-quote"))
	rentalShot(t, b, "rent-en")

	// (2) Four GPUs, the key, and rent.
	typeInto(t, b, [][2]string{{"f-gpus", "4"}})
	// The textarea starts empty (chromedp's Clear wants text to clear).
	if err := chromedp.Do(b, chromedp.SendKeys(chromedp.ID("f-ssh_public_key"), testSSHKey(t))); err != nil {
		t.Fatalf("type the SSH key: %v\n%s", err, readPage(t, b))
	}
	waitHTMXIdle(t, b)
	p = click(t, b, "#rent-submit", "rent")
	m := regexp.MustCompile(`^/rentals/(\d+)$`).FindStringSubmatch(p.Path)
	must(t, m != nil, "renting landed on %s, want /rentals/<id>\n%s", p.Path, p)
	rentalID := m[1]
	t.Logf("rental %s: %q", rentalID, textOf(t, b, "#rental-live"))
	must(t, strings.Contains(p.Text, "Rental #"+rentalID+" requested"), "no confirmation after renting\n%s", p)

	// (3) The page follows the rental until it runs (it polls every 3 s
	// and reloads itself when the status changes).
	waitFor(t, b, rentalStatusIs("running"), "the rental to run")
	p = readPage(t, b)
	chip := textOf(t, b, "#rental-live [data-status]")
	t.Logf("running: %q", textOf(t, b, "#rental-live"))
	must(t, chip == "Running", "status chip = %q, want Running", chip)
	cmd := textOf(t, b, "#access-command")
	must(t, strings.HasPrefix(cmd, "ssh ") && strings.Contains(cmd, ".sim.invalid"), "#access-command = %q, want the simulated host's ssh command", cmd)
	must(t, eval[bool](t, b, `!document.getElementById("copy-access").hidden`), "the copy button is still hidden: ticker.js did not run")
	checks := textOf(t, b, "#checks-line")
	t.Logf("checks: %q", checks)
	must(t, regexp.MustCompile(`^\d+ checks passed on 4 GPUs at \d\d:\d\d:\d\d`).MatchString(checks), "#checks-line = %q, want “N checks passed on 4 GPUs at hh:mm:ss”", checks)
	must(t, eval[int](t, b, `document.querySelectorAll("#rental-checks details").length`) == 4, "want one expandable list of checks per GPU")
	must(t, eval[int](t, b, `document.querySelectorAll("#rental-gpus tr").length`) == 4, "want the four GPUs listed\n%s", p)
	must(t, strings.Contains(p.Text, "This rental runs on a simulated node"), "the rental is not labelled simulated\n%s", p)
	// The cost ticks in the browser between polls (4 × ¥5.20 an hour moves
	// it by a fen every two seconds or so).
	must(t, eval[string](t, b, `document.getElementById("rental-cost").dataset.tick`) == "cost", "#rental-cost is not a ticker")
	rate := eval[string](t, b, `document.getElementById("rental-cost").dataset.rateFenHour`)
	must(t, rate != "" && rate != "0", "#rental-cost has rate %q, want the fen per hour", rate)
	waitFor(t, b, `document.getElementById("rental-cost").hasAttribute("data-ticking")`, "ticker.js to take the cost")
	first := textOf(t, b, "#rental-cost")
	waitFor(t, b, `document.getElementById("rental-cost") && document.getElementById("rental-cost").innerText.trim() !== `+strconv.Quote(first), "the cost to tick from "+first)
	t.Logf("cost ticked: %q → %q (rate %s fen/h)", first, textOf(t, b, "#rental-cost"), rate)
	rentalShot(t, b, "rental-en")

	// (4) The console lists it as live, with its command.
	p = open(t, b, a.srv.URL+"/console", "console")
	row := textOf(t, b, "#rental-"+rentalID)
	t.Logf("console row: %q", row)
	must(t, strings.Contains(row, "Running") && strings.Contains(row, "RTX 4090") && strings.Contains(row, cmd),
		"the console's row for rental %s = %q, want Running, RTX 4090 × 4 and the command", rentalID, row)
	must(t, eval[int](t, b, `document.querySelectorAll("#console-live tr.offer").length`) == 1, "want one live rental on the console\n%s", p)
	must(t, eval[string](t, b, `document.querySelector("#console-wallets a.price").getAttribute("href")`) == "/orgs/"+strconv.FormatInt(org, 10)+"/wallet",
		"the console does not link to the wallet")
	rentalShot(t, b, "console-en")

	// (5) In Chinese.
	p = open(t, b, a.srv.URL+"/rentals/"+rentalID, "rental page")
	p = click(t, b, "#lang-zh", "switch to Chinese")
	must(t, p.Lang == "zh-CN" && p.Path == "/rentals/"+rentalID, "the language switch went to %s (lang %s)", p.Path, p.Lang)
	must(t, textOf(t, b, "#rental-live [data-status]") == "运行中", "Chinese status chip = %q, want 运行中", textOf(t, b, "#rental-live [data-status]"))
	must(t, strings.Contains(textOf(t, b, "#checks-line"), "项检查"), "Chinese #checks-line = %q", textOf(t, b, "#checks-line"))
	rentalShot(t, b, "rental-zh")
	open(t, b, a.srv.URL+"/console", "console in Chinese")
	rentalShot(t, b, "console-zh")

	// (6) Stop: back on the rental's page, which follows it until stopped.
	open(t, b, a.srv.URL+"/rentals/"+rentalID, "rental page")
	p = click(t, b, "#rental-stop", "stop")
	must(t, p.Path == "/rentals/"+rentalID, "stopping landed on %s\n%s", p.Path, p)
	must(t, strings.Contains(p.Text, "正在停止"), "no confirmation after stopping\n%s", p)
	waitFor(t, b, rentalStatusIs("stopped"), "the rental to stop")
	must(t, textOf(t, b, "#rental-live [data-status]") == "已停止", "Chinese status chip = %q, want 已停止", textOf(t, b, "#rental-live [data-status]"))
	must(t, !eval[bool](t, b, `document.getElementById("rental-live").hasAttribute("hx-trigger")`), "a stopped rental's page still polls")
	must(t, !eval[bool](t, b, `!!document.getElementById("rental-stop")`), "a stopped rental still has a Stop button")
	p = click(t, b, "#lang-en", "switch to English")
	must(t, textOf(t, b, "#rental-live [data-status]") == "Stopped", "status chip = %q, want Stopped", textOf(t, b, "#rental-live [data-status]"))
	must(t, strings.Contains(p.Text, "Stop requested") && strings.Contains(p.Text, "the renter or an admin of the organisation stopped it"),
		"the stopped rental's page does not show the stop in its timeline and reason\n%s", p)
	rentalShot(t, b, "stopped-en")
	var r models.Rental
	must(t, a.db.R.First(&r, rentalID).Error == nil && r.Status == models.RentalStopped && r.BilledFen > 0,
		"rental %s in the database: status %s, billed %d fen; want stopped and billed", rentalID, r.Status, r.BilledFen)
}

// The rent form refuses bad input beside the field (422) and a rental the
// balance cannot start (402, insufficient_funds), and changes nothing
// either way.
func TestRentFormErrors(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	offer := rtxOffer(t, a.db)
	broke, brokeOrg := fundedRenter(t, a.db, "broke@example.com", testPassword, 0)
	_, othersOrg := fundedRenter(t, a.db, "other@example.com", testPassword, 100_000)
	ac := loggedIn(a, "renter", broke)
	path := a.url(routenames.RentalsCreate, idParam(offer.ID))
	res, body := ac.do("GET", a.url(routenames.RentalsNew, idParam(offer.ID)), nil)
	must(t, res.StatusCode == 200, "GET the rent form: %d", res.StatusCode)
	contains(t, body, `name="ssh_public_key"`, `value="`+idParam(brokeOrg)+`" selected`)
	form := func(kv ...string) url.Values {
		v := url.Values{"org_id": {idParam(brokeOrg)}, "gpus": {"1"}, "term": {"on_demand"}, "sla": {"standard"}, "ssh_public_key": {testSSHKey(t)}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	cases := []struct {
		name   string
		form   url.Values
		status int
		field  string // the field-error id, or "rent-error" at the top
		want   string
	}{
		{"a missing key is asked for", form("ssh_public_key", ""), 422, "ssh_public_key", "Paste your SSH public key"},
		{"a private key is not a public key", form("ssh_public_key", "-----BEGIN OPENSSH PRIVATE KEY-----"), 422, "ssh_public_key", "Not a valid OpenSSH public key"},
		{"more GPUs than the offer takes", form("gpus", "99"), 422, "gpus", "Enter 1 to 4"},
		{"an unknown tier", form("sla", "platinum"), 422, "sla", "Unknown SLA tier"},
		{"an organisation of someone else", form("org_id", idParam(othersOrg)), 422, "org_id", "This organisation cannot rent"},
		{"starting needs an hour of balance", form(), 402, "balance", "Starting needs a balance of at least ¥"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, body := ac.post(path, c.form)
			must(t, res.StatusCode == c.status, "POST %s: %d, want %d\n%s", path, res.StatusCode, c.status, snippet(body))
			msg := fieldError(body, c.field)
			must(t, strings.Contains(msg, c.want), "message beside %s = %q, want %q", c.field, msg, c.want)
			if c.field == "ssh_public_key" {
				return
			}
			must(t, strings.Contains(body, strings.SplitN(c.form.Get("ssh_public_key"), " ", 3)[1]), "the form lost the SSH key it was sent")
		})
	}
	must(t, rentalsOf(t, a.db, brokeOrg) == 0, "refused rent requests created %d rentals", rentalsOf(t, a.db, brokeOrg))

	// No free GPUs (none has reported healthy: no agent runs here) is a
	// conflict shown at the top.
	rich, richOrg := fundedRenter(t, a.db, "rich@example.com", testPassword, 100_000)
	rc := loggedIn(a, "rich renter", rich)
	res, body = rc.post(path, form("org_id", idParam(richOrg)))
	must(t, res.StatusCode == http.StatusConflict, "rent with no free GPUs: %d, want 409\n%s", res.StatusCode, snippet(body))
	must(t, strings.Contains(body, `id="rent-error"`) && strings.Contains(body, "Not enough free GPUs"), "no message at the top about free GPUs\n%s", snippet(body))
	must(t, rentalsOf(t, a.db, richOrg) == 0, "a refused rent created a rental")
}

// hourFens are what an hour of the rate costs at the moments around a
// request (an off-peak boundary may fall between them).
func hourFens(r pricing.Rate, before, after time.Time) []string {
	return []string{views.Yuan(pricing.HourFen(r, before)), views.Yuan(pricing.HourFen(r, after))}
}

// TestBrowserResizeRental is a renter growing a running rental from one
// GPU to two, in real Chromium against a simulated node agent: the rental
// page's Switch / resize section previews the change (RTX 4090 × 1 →
// RTX 4090 × 2, same node, the new hourly price, the rules), in English
// and in Chinese; Confirm changes it, and the page follows it until it
// runs again on two checked GPUs, billed at the new rate.
func TestBrowserResizeRental(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t)
	a, svc := rentalsApp(t)
	offer := rtxOffer(t, a.db)
	startSimulatedAgent(t, a, svc, offer.NodeID)
	const (
		email    = "han.meimei@example.com"
		password = "chengdu-gpu-2026!"
	)
	u, orgID := fundedRenter(t, a.db, email, password, 100_000)
	ctx := context.Background()
	oms, err := a.db.OrgsOfUser(ctx, u.ID)
	must(t, err == nil && len(oms) > 0, "the renter's organisations: %v", err)
	om := oms[0]
	r, err := svc.Rent(ctx, u, &om.Org, &om.Membership, rentals.RentInput{OrgID: orgID, OfferID: offer.ID, GPUs: 1,
		SLA: "standard", Term: "on_demand", SSHPublicKey: testSSHKey(t)})
	must(t, err == nil, "rent one GPU: %v", err)
	rentalID := strconv.FormatInt(r.ID, 10)
	rentalPath := "/rentals/" + rentalID

	bctx, cancel := context.WithTimeout(ctx, 180*time.Second)
	t.Cleanup(cancel)
	b := newEnglishBrowser(t, bctx)
	open(t, b, a.srv.URL+"/login?next="+url.QueryEscape(rentalPath), "login page")
	typeInto(t, b, [][2]string{{"f-email", email}, {"f-password", password}})
	p := click(t, b, "#login-submit", "log in")
	must(t, p.Path == rentalPath, "after logging in: %s, want %s", p.Path, rentalPath)
	waitFor(t, b, rentalStatusIs("running")+` && document.querySelectorAll("#rental-gpus tr").length === 1`, "the rental to run on one GPU")
	p = readPage(t, b)
	must(t, strings.Contains(p.Text, "Switch / resize"), "the running rental's page has no Switch / resize section\n%s", p)
	must(t, eval[string](t, b, `document.getElementById("f-gpus").value`) == "1", "the GPUs field does not start at the rental's one GPU")

	// (1) Preview two GPUs: the quote, nothing changed yet.
	rate := pricing.Rate{PricePerGPUHourFen: offer.PricePerGPUHourFen, GPUs: 2, OffpeakPct: offer.OffpeakDiscountPct}
	before := time.Now()
	typeInto(t, b, [][2]string{{"f-gpus", "2"}})
	p = click(t, b, "#change-preview", "preview two GPUs")
	want := hourFens(rate, before, time.Now())
	must(t, p.Path == rentalPath+"/change", "the preview is at %s", p.Path)
	from, to, node := textOf(t, b, "#change-from"), textOf(t, b, "#change-to"), textOf(t, b, "#change-node")
	newRate := textOf(t, b, "#change-to-rate")
	t.Logf("quote: %q → %q (%q), %q", from, to, newRate, node)
	must(t, strings.HasPrefix(from, "GeForce RTX 4090 × 1") && strings.HasPrefix(to, "GeForce RTX 4090 × 2"), "the quote reads %q → %q, want GeForce RTX 4090 × 1 → × 2", from, to)
	must(t, newRate == want[0]+"/h" || newRate == want[1]+"/h", "the new hourly price reads %q, want %s/h", newRate, want[0])
	must(t, node == "Same node", "#change-node = %q, want Same node", node)
	rules := textOf(t, b, "#change-rules")
	must(t, strings.Contains(rules, "NVML health checks first") && strings.Contains(rules, "not billed") && strings.Contains(rules, "the rental stops"),
		"the quote does not state the rules: %q", rules)
	must(t, eval[bool](t, b, `!!document.getElementById("change-confirm")`), "the quote has no Confirm button")
	rentalShot(t, b, "change-quote-en")
	var cur models.Rental
	must(t, a.db.R.First(&cur, r.ID).Error == nil && cur.GPUs == 1 && cur.Status == models.RentalRunning, "a preview changed the rental: %s × %d", cur.Status, cur.GPUs)

	// (2) The same in Chinese: the language switch goes back to the
	// rental's page, where the preview is asked again.
	p = click(t, b, "#lang-zh", "switch to Chinese")
	must(t, p.Lang == "zh-CN" && p.Path == rentalPath, "the language switch went to %s (lang %s)", p.Path, p.Lang)
	must(t, strings.Contains(p.Text, "切换/扩缩容"), "no 切换/扩缩容 section in Chinese\n%s", p)
	typeInto(t, b, [][2]string{{"f-gpus", "2"}})
	p = click(t, b, "#change-preview", "preview two GPUs in Chinese")
	must(t, textOf(t, b, "#change-node") == "同一节点", "Chinese #change-node = %q, want 同一节点", textOf(t, b, "#change-node"))
	must(t, strings.Contains(textOf(t, b, "#change-to-rate"), "/小时"), "Chinese hourly price = %q", textOf(t, b, "#change-to-rate"))
	rentalShot(t, b, "change-quote-zh")

	// (3) Confirm: billing pauses, the new GPUs are checked, and the page
	// follows the rental until it runs on two GPUs.
	before = time.Now()
	p = click(t, b, "#change-confirm", "confirm the change")
	must(t, p.Path == rentalPath, "confirming landed on %s\n%s", p.Path, p)
	must(t, strings.Contains(p.Text, "正在切换"), "no confirmation after confirming\n%s", p)
	waitFor(t, b, rentalStatusIs("running")+` && document.querySelectorAll("#rental-gpus tr").length === 2`, "the rental to run on two GPUs")
	p = readPage(t, b)
	want = hourFens(rate, before, time.Now())
	live := textOf(t, b, "#rental-live")
	t.Logf("resized: %q", live)
	must(t, strings.Contains(p.H1, "RTX 4090 × 2"), "the heading reads %q, want RTX 4090 × 2", p.H1)
	must(t, strings.Contains(live, want[0]) || strings.Contains(live, want[1]), "the live block %q does not bill the new rate %s", live, want[0])
	timeline := textOf(t, b, "#rental-timeline")
	must(t, strings.Contains(timeline, "GeForce RTX 4090 × 1 → GeForce RTX 4090 × 2") && strings.Contains(timeline, "项 NVML 检查通过"),
		"the Chinese timeline does not show the resize and its checks: %q", timeline)
	must(t, regexp.MustCompile(`\S+ 于 \S+ 通过了 \d+ 项检查`).MatchString(textOf(t, b, "#checks-line")), "Chinese #checks-line = %q", textOf(t, b, "#checks-line"))
	rentalShot(t, b, "resized-zh")
	must(t, a.db.R.First(&cur, r.ID).Error == nil && cur.GPUs == 2 && cur.Status == models.RentalRunning, "rental %s in the database: %s × %d, want running × 2", rentalID, cur.Status, cur.GPUs)
}

// The switch / resize form refuses bad input beside the field (422), and
// a change the GPUs (409) or the balance (402) cannot make at the top; nothing
// changes either way. A preview quotes a switch to another offer of the
// datacentre, and a rental that never ran has nothing to switch.
func TestRentalChangeFormErrors(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	offer := rtxOffer(t, a.db)
	renter, org := fundedRenter(t, a.db, "renter@example.com", testPassword, 100_000)
	broke, brokeOrg := fundedRenter(t, a.db, "broke@example.com", testPassword, 0)
	id := mustRunningRental(t, a.db, org, renter.ID, offer)
	brokeID := mustRunningRental(t, a.db, brokeOrg, broke.ID, offer)
	var h100, elsewhere models.Offer
	must(t, a.db.R.Where("datacenter_id = ? AND gpu_model = ? AND status = ?", offer.DatacenterID, "h100-sxm", models.OfferListed).First(&h100).Error == nil,
		"no H100 offer in the RTX 4090's datacentre")
	must(t, a.db.R.Where("datacenter_id <> ? AND status = ?", offer.DatacenterID, models.OfferListed).First(&elsewhere).Error == nil, "no offer elsewhere")
	ac := loggedIn(a, "renter", renter)
	path := a.url(routenames.RentalsChange, idParam(id))

	res, body := ac.do("GET", a.url(routenames.RentalsShow, idParam(id)), nil)
	must(t, res.StatusCode == 200, "GET the rental: %d", res.StatusCode)
	contains(t, body, `id="rental-change"`, `<option value="`+idParam(h100.ID)+`">H100 SXM`, `id="change-no-quote"`)
	must(t, !strings.Contains(body, `<option value="`+idParam(elsewhere.ID)+`"`), "the switch form offers an offer of another datacentre")

	t.Run("a switch is quoted", func(t *testing.T) {
		res, body := ac.post(path, url.Values{"offer_id": {idParam(h100.ID)}, "gpus": {"1"}})
		must(t, res.StatusCode == 200, "preview: %d\n%s", res.StatusCode, snippet(body))
		contains(t, body, `id="change-quote"`, "GeForce RTX 4090 × 1", "H100 SXM5 × 1", "Moves to another node", `name="confirm" value="1"`)
	})
	cases := []struct {
		name   string
		path   string
		ac     *actor
		form   url.Values
		status int
		field  string // the field-error id, or "change-error" at the top
		want   string
	}{
		{"GPUs must be a number", path, ac, url.Values{"gpus": {"two"}}, 422, "gpus", "whole number"},
		{"more GPUs than the offer takes", path, ac, url.Values{"gpus": {"99"}}, 422, "gpus", "Enter 1 to 4"},
		{"an offer of another datacentre", path, ac, url.Values{"offer_id": {idParam(elsewhere.ID)}, "gpus": {"1"}}, 422, "offer_id", "same datacentre"},
		{"the same size is no change", path, ac, url.Values{"offer_id": {idParam(offer.ID)}, "gpus": {"1"}}, 422, "gpus", "nothing to change"},
		// No agent runs here, so no GPU is free.
		{"no free GPUs", path, ac, url.Values{"gpus": {"2"}, "confirm": {"1"}}, 409, "change-error", "Not enough free GPUs"},
		{"the balance must cover an hour", a.url(routenames.RentalsChange, idParam(brokeID)), loggedIn(a, "broke renter", broke),
			url.Values{"gpus": {"2"}, "confirm": {"1"}}, 402, "change-error", "The new size needs a balance of at least ¥"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, body := c.ac.post(c.path, c.form)
			must(t, res.StatusCode == c.status, "POST %s: %d, want %d\n%s", c.path, res.StatusCode, c.status, snippet(body))
			msg := fieldError(body, c.field)
			if c.field == "change-error" {
				m := regexp.MustCompile(`(?s)id="change-error" role="alert">(.*?)</p>`).FindStringSubmatch(body)
				msg = ""
				if m != nil {
					msg = m[1]
				}
			}
			must(t, strings.Contains(msg, c.want), "message at %s = %q, want %q", c.field, msg, c.want)
			must(t, strings.Contains(body, `value="`+c.form.Get("gpus")+`"`), "the form lost the GPUs it was sent")
		})
	}
	for _, rid := range []int64{id, brokeID} {
		r, err := a.db.RentalByID(context.Background(), rid)
		must(t, err == nil && r.Status == models.RentalRunning && r.GPUs == 1 && r.OfferID == offer.ID,
			"refused changes changed rental %d: %v %s × %d (offer %d)", rid, err, r.Status, r.GPUs, r.OfferID)
	}

	// A rental that never ran has no section and nothing to switch.
	pending := mustRental(t, a.db, org, renter.ID, offer)
	res, body = ac.do("GET", a.url(routenames.RentalsShow, idParam(pending)), nil)
	must(t, res.StatusCode == 200 && !strings.Contains(body, `id="rental-change"`), "a pending rental's page: %d, switch section shown", res.StatusCode)
	res, body = ac.post(a.url(routenames.RentalsChange, idParam(pending)), url.Values{"gpus": {"2"}})
	must(t, res.StatusCode == http.StatusConflict && strings.Contains(body, "Only a running rental"), "switching a pending rental: %d\n%s", res.StatusCode, snippet(body))
}
