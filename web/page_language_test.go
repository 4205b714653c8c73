package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"golang.org/x/net/html"

	"suanli/accounts"
	"suanli/audit"
	"suanli/benchmarks"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/gpu"
	"suanli/handlers"
	"suanli/identity"
	"suanli/invoices"
	"suanli/locales"
	"suanli/models"
	"suanli/models/demodata"
	"suanli/models/invoicestore"
	"suanli/models/ledger"
	"suanli/pricing"
	"suanli/providers"
	"suanli/rentals"
	"suanli/routenames"
	"suanli/sla"
	"suanli/workers"
)

// Every page a person sees speaks the reader's language, whatever the
// market has been through: a market with real activity (a renter verified
// with the trial credit, a bank top-up confirmed and a refund asked for,
// rentals that ran on simulated agents, were metered, stopped, moved off a
// failing GPU with an incident and an SLA credit, a week term, a payout
// paid, a benchmark report, audit entries for all of it) is rendered page
// by page, every GET route of the route table that answers HTML, as the
// person who would see it. In Chinese no page shows an English message:
// neither a message of the English catalogue nor a run of lowercase English
// words that is not one of the few tokens both languages share. In English
// no page doubles a label ("Trial credit trial credit").
func TestEveryPageSpeaksTheReadersLanguage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs rentals on simulated agents")
	}
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		m := newBusyMarket(t, db)
		pages := m.pages(t)
		// A message key missing from a catalogue is shown as the key (and
		// logged): count them while the pages render.
		missing := &missingMessages{}
		prev := slog.Default()
		slog.SetDefault(slog.New(missing))
		defer slog.SetDefault(prev)
		seen := map[string]bool{}
		for _, lang := range locales.Supported {
			for _, p := range pages {
				res, body := p.as.do("GET", p.path, nil, "Accept-Language", lang)
				if want := cmpOr(p.status, http.StatusOK); res.StatusCode != want {
					t.Errorf("%s GET %s as %s: %d, want %d: %s", lang, p.path, p.as.name, res.StatusCode, want, snippet(body))
					continue
				}
				if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
					t.Errorf("%s GET %s: %s, want a page", lang, p.path, res.Header.Get("Content-Type"))
					continue
				}
				seen[p.route] = true
				text := visibleText(t, body)
				var problems []string
				if lang == locales.ZH {
					problems = englishIn(text)
				} else {
					problems = doubledLabels(text)
				}
				for _, k := range missing.take() {
					problems = append(problems, "missing message "+k)
				}
				for _, pr := range problems {
					t.Errorf("%s GET %s (as %s): %s", lang, p.path, p.as.name, pr)
				}
			}
		}
		// Every GET route that a person sees was rendered.
		for _, r := range m.a.e.Routes() {
			if r.Method != http.MethodGet || notPages[r.Name] != "" || seen[r.Name] {
				continue
			}
			t.Errorf("GET %s (%s) was not rendered: give it a page in busyMarket.pages or a reason in notPages", r.Path, r.Name)
		}
	})
}

// missingMessages is a log handler that keeps the keys of the "missing
// message" warnings locales.T logs, and drops everything else.
type missingMessages struct {
	mu   sync.Mutex
	keys []string
}

func (h *missingMessages) Enabled(context.Context, slog.Level) bool { return true }
func (h *missingMessages) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *missingMessages) WithGroup(string) slog.Handler            { return h }

func (h *missingMessages) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "missing message" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "key" {
			h.mu.Lock()
			h.keys = append(h.keys, a.Value.String())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// take returns the keys logged since the last take.
func (h *missingMessages) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := h.keys
	h.keys = nil
	return k
}

// notPages are the GET routes that answer no page a person reads, and why.
var notPages = map[string]string{
	routenames.RentalsEvents:              "the live block of rentals.live (rendered there) as server-sent events",
	routenames.LangSwitch:                 "a redirect back to the page",
	routenames.WalletMine:                 "a redirect to the wallet of the reader's organisation",
	routenames.WalletCSV:                  "a CSV download (its memo column is the stored English text, for machines)",
	routenames.AdminAuditCSV:              "a CSV download",
	routenames.ProviderStatementCSV:       "a CSV download",
	routenames.ProviderConnectReturn:      "a redirect from Stripe back to the earnings page",
	routenames.ProviderHome:               "a redirect to the provider's dashboard (or the sign-up form, rendered as provider.home for a non-provider)",
	routenames.APIProviderDatacentersList: "JSON",
	routenames.APIProviderNodesList:       "JSON",
	routenames.APIProviderNodesShow:       "JSON",
	routenames.APIProviderOffersList:      "JSON",
	routenames.APIProviderOffersShow:      "JSON",
	routenames.APIOpenAPI:                 "JSON",
	routenames.APIOpenAPI30:               "JSON",
	routenames.APIVolumesList:             "JSON",
	routenames.APIStandingOrdersList:      "JSON",
	routenames.APIOffersList:              "JSON",
	routenames.APIOffersShow:              "JSON",
	routenames.APIOffersQuote:             "JSON",
	routenames.APIImagesList:              "JSON",
	routenames.APICatalog:                 "JSON",
	routenames.APIInstanceTypes:           "JSON",
	routenames.APIMe:                      "JSON",
	routenames.APIWallet:                  "JSON",
	routenames.APIWalletLedger:            "JSON",
	routenames.APIWalletAlerts:            "JSON",
	routenames.APIRentalsList:             "JSON",
	routenames.APIRentalsShow:             "JSON",
	routenames.APIRentalsUsage:            "JSON",
	routenames.APIBenchmarksShow:          "JSON",
	routenames.APINodesBenchmarks:         "JSON",
	routenames.AgentTasks:                 "the agents' protocol",
	routenames.Ping:                       "the latency probe",
	routenames.Healthz:                    "a probe",
	routenames.Readyz:                     "a probe",
	routenames.Metrics:                    "Prometheus",
	routenames.Static:                     "assets",
	// The API's side of console actions (web/parity_test.go).
	routenames.APIRentalsLogs:          "the container's output, as text or events",
	routenames.APIRentalsFilesList:     "JSON",
	routenames.APIRentalsFilesDownload: "a workspace file's bytes",
	routenames.APIRentalsSharesList:    "JSON",
	routenames.APIOrgsShow:             "JSON",
	routenames.APIInvitationsMine:      "JSON",
	routenames.APIWalletRefunds:        "JSON",
	routenames.APIWalletBilling:        "JSON",
	routenames.APITokensList:           "JSON",
	routenames.APIProviderProfile:      "JSON",
	routenames.APIProviderStatement:    "JSON",
	routenames.APIProviderCapacity:     "JSON",
	routenames.APIProvidersMine:        "JSON",
	routenames.APIWalletTopupsList:     "JSON",
	routenames.APIWalletTopupsShow:     "JSON",
	routenames.APIRentalsSLA:           "JSON",
	// Browser access to a container: the container's own answers, and
	// pages that need one running (rendered in both languages by
	// TestWorkspacePagesSpeakBothLanguages).
	routenames.RentalsJupyterRoot:    "a redirect to Jupyter's base URL",
	routenames.RentalsJupyter:        "the container's Jupyter",
	routenames.RentalsPortRoot:       "a redirect to the port's path",
	routenames.RentalsPort:           "the container's app",
	routenames.ShareRoot:             "a redirect to the shared port's path",
	routenames.Share:                 "the container's app, through a share link",
	routenames.RentalsTerminalSocket: "a WebSocket",
	routenames.RentalsLogs:           "the container's output",
	routenames.RentalsFilesList:      "JSON",
	routenames.RentalsFilesDownload:  "a file of the workspace",
	routenames.RentalsTerminal:       "needs a running container: TestWorkspacePagesSpeakBothLanguages",
	routenames.RentalsFiles:          "needs a running container: TestWorkspacePagesSpeakBothLanguages",
	routenames.AgentTunnel:           "the agents' protocol",
	routenames.AppsLogin:             "a redirect on a rental's apps origin",
	// VAT invoices: the accountant's CSVs, the tax system's files, the API.
	routenames.InvoicesCSV:      "a CSV download",
	routenames.AdminInvoicesCSV: "a CSV download",
	routenames.InvoicesFile:     "an issued invoice's PDF or OFD file",
	routenames.APIInvoicesFile:  "an issued invoice's PDF or OFD file",
	routenames.APIInvoicesList:  "JSON",
	routenames.APIInvoicesShow:  "JSON",
}

// busyMarket is the demo market after some real use.
type busyMarket struct {
	a       *app
	rentals *rentals.Service
	clock   *shiftClock

	admin, renter, provider, anon *actor
	// newcomer has signed up and not verified; invitee holds an invitation.
	newcomer *actor

	offer        models.Offer // the provider's RTX 4090 offer the rentals use
	termOffer    models.Offer
	failNode     int64
	sibling      int64 // the node the failing rental moved to
	renterOrg    int64
	teamOrg      int64
	labOrg       int64
	topup        int64
	stopped      int64 // an on-demand rental, metered and stopped
	moved        int64 // one moved off a failing GPU, with an SLA credit
	term         int64 // a week term, running
	failed       int64 // one whose only node failed the NVML checks
	reportID     int64
	providerID   int64
	datacenterID int64
	// invoiceAsked waits for the admin; invoiceIssued has its PDF.
	invoiceAsked, invoiceIssued int64
}

// shiftClock is real time moved forward by hand.
type shiftClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *shiftClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset).Truncate(time.Microsecond)
}

func (c *shiftClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = time.Until(t)
}

func (c *shiftClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
	return c.Now()
}

// eventually waits, with a deadline, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newBusyMarket(t *testing.T, db *models.DB) *busyMarket {
	t.Helper()
	ctx := context.Background()
	clock := &shiftClock{}
	// A weekday at 10:00 in Shanghai: peak hours, whenever the suite runs.
	l := time.Now().In(pricing.Shanghai)
	start := time.Date(l.Year(), l.Month(), l.Day(), 10, 0, 0, 0, pricing.Shanghai)
	for start.Weekday() == time.Saturday || start.Weekday() == time.Sunday {
		start = start.AddDate(0, 0, 1)
	}
	clock.set(start)
	db.Now = clock.Now
	m := &busyMarket{clock: clock}
	var h *handlers.Handler
	m.a = newAppWith(t, db, func(hh *handlers.Handler) {
		h = hh
		h.Accounts.TrialCreditFen = 2000
		h.Rentals.VerifyTimeout, h.Rentals.LaunchTimeout, h.Rentals.SilentAfter = 10*time.Minute, 10*time.Minute, 10*time.Minute
		q, err := workers.New(h.DB, workers.Options{Work: true, Rentals: h.Rentals, FetchPoll: 50 * time.Millisecond,
			AvailabilityEvery: time.Hour, MeterEvery: time.Hour, WatchEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		h.Rentals.Jobs = q
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = q.Stop(sctx)
		})
	})
	a := m.a
	m.rentals = h.Rentals
	// The queue's start-up passes (River runs the periodic jobs once when
	// it starts) are over before the clock moves.
	eventually(t, "the start-up health pass", func() bool {
		var n int64
		db.R.Raw(`SELECT COUNT(*) FROM river_job WHERE kind = 'watch_health' AND state = 'completed'`).Scan(&n)
		return n > 0
	})

	// People: the platform admin, the demo provider's owner, a renter who
	// signs up in Chinese and verifies (the trial credit), a newcomer who
	// has not verified yet.
	adminUser := mustUser(t, db, "ops@suanli.example", "王芳", true)
	m.admin = loggedIn(a, "admin", adminUser)
	actx := audit.WithActor(ctx, adminUser.ID, "127.0.0.1")
	login, err := demo.SeedProvider(ctx, h.Accounts)
	if err != nil {
		t.Fatal(err)
	}
	m.provider = loginWith(a, "provider", login.Email, login.Password)
	m.anon = newActor(a, "anonymous")
	m.renter = signUpVerified(t, a, "li.lei@example.com", "李雷")
	m.newcomer = newActor(a, "newcomer")
	res, body := m.newcomer.post(a.url(routenames.AuthSignupPost), url.Values{"email": {"han.meimei@example.com"}, "name": {"韩梅梅"},
		"password": {testPassword}, "lang": {locales.ZH}}, "Accept-Language", locales.ZH)
	must(t, res.StatusCode == http.StatusSeeOther || res.StatusCode == http.StatusOK, "sign up the newcomer: %d %s", res.StatusCode, snippet(body))
	res, body = m.newcomer.post(a.url(routenames.AuthLoginPost), url.Values{"email": {"han.meimei@example.com"}, "password": {testPassword}})
	must(t, res.StatusCode == http.StatusSeeOther, "log the newcomer in: %d %s", res.StatusCode, snippet(body))

	renter := m.renter.user
	orgs, err := db.OrgsOfUser(ctx, renter.ID)
	must(t, err == nil && len(orgs) == 1, "the renter's organisations: %v %v", orgs, err)
	org, member := orgs[0].Org, orgs[0].Membership
	m.renterOrg = org.ID
	rctx := audit.WithActor(ctx, renter.ID, "127.0.0.1")

	// Money in: a bank transfer confirmed by the admin, another pending,
	// and a refund asked for.
	tp, _, err := h.Wallet.StartTopup(rctx, renter, org.ID, 100_000, models.MethodBank, locales.ZH)
	if err != nil {
		t.Fatal(err)
	}
	m.topup = tp.ID
	if err := h.Wallet.ConfirmBankTransfer(actx, adminUser, tp.ID, 100_000); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Wallet.StartTopup(rctx, renter, org.ID, 20_000, models.MethodBank, locales.ZH); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wallet.RequestRefund(rctx, renter, org.ID, 5_000); err != nil {
		t.Fatal(err)
	}
	// VAT invoices of that top-up: a 普票 waiting for the admin, and a 专票
	// the admin issued with the tax system's PDF.
	isvc := &invoices.Service{DB: db, Accounts: h.Accounts, BaseURL: h.Accounts.BaseURL}
	asked, err := isvc.Request(rctx, renter, org.ID, invoices.Input{Kind: invoicestore.Normal, Title: "李雷", Email: "li.lei@example.com", AmountFen: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	m.invoiceAsked = asked.ID
	issued, err := isvc.Request(rctx, renter, org.ID, invoices.Input{Kind: invoicestore.Special, Title: "成都天府机器人有限公司", TaxpayerID: "91350100M000100Y43",
		Address: "成都市高新区天府软件园 E3 栋", Phone: "028-8888 6666", Bank: "招商银行成都分行", BankAccount: "6214 8300 0000 1234", Remark: "GPU 算力租用", AmountFen: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	m.invoiceIssued = issued.ID
	if _, err := isvc.Issue(actx, adminUser, issued.ID, invoices.IssueInput{Number: "26510000000000000001",
		IssueDate: clock.Now().In(pricing.Shanghai).Format("2006-01-02"), File: testPDF}); err != nil {
		t.Fatal(err)
	}
	// Real-name verification started: the code waits in the SMS outbox.
	if _, err := h.Identity.StartIndividual(rctx, renter, identity.IndividualInput{Kind: identity.KindIndividual, Name: "李雷", IDNumber: testIDNumber,
		Phone: "13800138000", Consent: true}); err != nil {
		t.Fatal(err)
	}

	// Organisations: a team with an invitation, a lab the admin approved,
	// a provider waiting for review.
	team, err := h.Accounts.CreateOrg(rctx, renter, models.OrgTeam, "星河智能")
	if err != nil {
		t.Fatal(err)
	}
	m.teamOrg = team.ID
	if _, err := h.Accounts.Invite(rctx, renter, team.ID, "zhang.wei@example.com", models.RoleMember); err != nil {
		t.Fatal(err)
	}
	labOwner := mustUser(t, db, "wang.lab@example.com", "王老师", false)
	lab, err := h.Accounts.ApplyLab(ctx, labOwner, accounts.LabApplication{Institution: "四川大学", LabName: "视觉计算实验室",
		Supervisor: "王教授", EmailDomain: "scu.edu.cn", EduEmail: "wang@scu.edu.cn"})
	if err != nil {
		t.Fatal(err)
	}
	m.labOrg = lab.ID
	if err := h.Accounts.Review(actx, adminUser, lab.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	applicant := mustUser(t, db, "ops@jinjiang-gpu.example", "赵强", false)
	if _, err := h.Providers.SignUp(ctx, applicant, providers.Profile{CompanyName: "锦江算力", ContactName: "赵强",
		ContactPhone: "+86 28 8888 0001", ContactEmail: applicant.Email, LicenceNo: "91510100MA6CXXXX2X"}); err != nil {
		t.Fatal(err)
	}

	// The provider's nodes: its RTX 4090 node, a sibling of it to move a
	// rental to, and a V100 node for a week term; each runs a simulated
	// agent.
	var pid int64
	must(t, db.R.Model(&models.Provider{}).Where("slug = ?", demo.DemoProviderSlug).Pluck("id", &pid).Error == nil && pid != 0, "the demo provider")
	m.providerID = pid
	m.offer = providerOffer(t, db, pid, "cd-tianfu-swpark", "rtx-4090")
	m.datacenterID = m.offer.DatacenterID
	m.termOffer = providerOffer(t, db, pid, "cd-hitech", "v100-32g-sxm2")
	failOffer := providerOffer(t, db, pid, "cd-tifc", "rtx-4090")
	m.sibling = addSiblingNode(t, db, m.offer, 4)
	agents := map[int64]*simAgent{}
	for _, id := range []int64{m.offer.NodeID, m.sibling, m.termOffer.NodeID, failOffer.NodeID} {
		agents[id] = startSimulatedAgent(t, a, h.Rentals, id)
	}
	heardAfter := func(at time.Time) {
		t.Helper()
		for id := range agents {
			eventually(t, fmt.Sprintf("a heartbeat from node %d", id), func() bool {
				var n models.Node
				return db.R.First(&n, id).Error == nil && n.LastHeartbeatAt != nil && !n.LastHeartbeatAt.Before(at)
			})
		}
	}
	waitStatus := func(id int64, want models.RentalStatus) {
		t.Helper()
		eventually(t, fmt.Sprintf("rental %d %s", id, want), func() bool { return rentalStatus(t, db, id) == want })
	}
	rent := func(o models.Offer, gpus int, term pricing.Term) int64 {
		t.Helper()
		r, err := h.Rentals.Rent(rctx, renter, &org, &member, rentals.RentInput{OrgID: org.ID, OfferID: o.ID, GPUs: gpus, SLA: "standard",
			Term: term, SSHPublicKey: testSSHKey(t)})
		if err != nil {
			t.Fatalf("rent %d × offer %d (%s): %v", gpus, o.ID, term, err)
		}
		return r.ID
	}

	// An on-demand rental: runs, is metered for 20 minutes, stopped.
	m.stopped = rent(m.offer, 2, pricing.OnDemand)
	waitStatus(m.stopped, models.RentalRunning)
	heardAfter(clock.advance(20 * time.Minute))
	if _, err := h.Rentals.Meter(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Rentals.Stop(rctx, m.stopped, rentals.StopByUser); err != nil {
		t.Fatal(err)
	}
	waitStatus(m.stopped, models.RentalStopped)

	// A week term, paid up front and earned as it runs.
	m.term = rent(m.termOffer, 1, pricing.Week)
	waitStatus(m.term, models.RentalRunning)

	// A rental whose GPU fails: an incident, a move to the sibling, an
	// SLA credit once it has ended.
	m.moved = rent(m.offer, 1, pricing.OnDemand)
	waitStatus(m.moved, models.RentalRunning)
	var held models.GPU
	if err := db.R.Raw(`SELECT g.* FROM gpus g JOIN rental_gpus rg ON rg.gpu_id = g.id WHERE rg.rental_id = ? AND rg.released_at IS NULL`, m.moved).
		Scan(&held).Error; err != nil || held.ID == 0 {
		t.Fatalf("the moved rental's GPU: %v", err)
	}
	heardAfter(clock.advance(20 * time.Minute))
	if _, err := h.Rentals.Meter(ctx); err != nil {
		t.Fatal(err)
	}
	fault, err := gpu.ParseFault(fmt.Sprintf("xid:79@%d", held.Idx))
	if err != nil {
		t.Fatal(err)
	}
	if err := agents[m.offer.NodeID].sim.Inject(fault); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the agent reports the GPU failing", func() bool {
		var g models.GPU
		return db.R.First(&g, held.ID).Error == nil && (g.Health == models.GPUFailing || g.Health == models.GPUMissing)
	})
	// The move waits for the sibling until two minutes have passed: the
	// downtime the SLA credit makes up for.
	agents[m.sibling].paused.Store(true)
	if _, err := h.Rentals.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(m.moved, models.RentalMigrating)
	var inc models.Incident
	must(t, db.R.Where("node_id = ?", m.offer.NodeID).Order("id DESC").First(&inc).Error == nil, "no incident on node %d", m.offer.NodeID)
	must(t, inc.Kind == models.IncidentGPUFailing && inc.GPUID == held.ID, "the failing GPU's incident is %s on GPU %d, want %s on GPU %d",
		inc.Kind, inc.GPUID, models.IncidentGPUFailing, held.ID)
	clock.advance(2 * time.Minute)
	agents[m.sibling].paused.Store(false)
	waitStatus(m.moved, models.RentalRunning)
	heardAfter(clock.advance(10 * time.Minute))
	if _, err := h.Rentals.Meter(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Rentals.Stop(rctx, m.moved, rentals.StopByUser); err != nil {
		t.Fatal(err)
	}
	waitStatus(m.moved, models.RentalStopped)
	if _, err := sla.Settle(ctx, db); err != nil {
		t.Fatal(err)
	}
	var slaTxns int64
	db.R.Model(&ledger.LedgerTxn{}).Where("kind = ? AND rental_id = ?", "sla_credit", m.moved).Count(&slaTxns)
	must(t, slaTxns == 1, "the moved rental got %d SLA credits, want 1", slaTxns)

	// A rental whose only node fails the NVML checks: it fails, and
	// nothing is charged. The node's agent is dark while its GPUs go bad,
	// so that they are rented before anyone knows.
	agents[failOffer.NodeID].paused.Store(true)
	for _, f := range []string{"ecc@0", "thermal@1"} {
		fault, err := gpu.ParseFault(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := agents[failOffer.NodeID].sim.Inject(fault); err != nil {
			t.Fatal(err)
		}
	}
	m.failNode = failOffer.NodeID
	m.failed = rent(failOffer, 2, pricing.OnDemand)
	agents[failOffer.NodeID].paused.Store(false)
	waitStatus(m.failed, models.RentalFailed)

	// A benchmark report of the provider's node (simulated).
	task, err := benchmarks.Request(ctx, h.Rentals.Fleet(), m.sibling, models.BenchOnDemand)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the benchmark report", func() bool {
		var rep models.BenchmarkReport
		if db.R.Where("task_id = ?", task).First(&rep).Error != nil {
			return false
		}
		m.reportID = rep.ID
		return true
	})

	// Last month's payout, paid by bank transfer.
	period := start.AddDate(0, -1, 0).Format("2006-01")
	if n, err := h.Payouts.Run(actx, period); err != nil || n == 0 {
		t.Fatalf("payout run for %s: %d payouts, %v", period, n, err)
	}
	var po models.Payout
	if err := db.R.Where("provider_id = ?", pid).First(&po).Error; err != nil {
		t.Fatal(err)
	}
	if err := h.Payouts.MarkPaid(actx, adminUser, po.ID, "CMB-20261201-0001"); err != nil {
		t.Fatal(err)
	}
	problems, err := ledger.LedgerCheck(ctx, db)
	must(t, err == nil && len(problems) == 0, "ledger: %v %v", problems, err)
	return m
}

// loginWith returns an actor logged in with an email and password.
func loginWith(a *app, name, email, password string) *actor {
	a.t.Helper()
	ac := newActor(a, name)
	res, body := ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {email}, "password": {password}})
	must(a.t, res.StatusCode == http.StatusSeeOther, "%s: log in: %d %s", name, res.StatusCode, snippet(body))
	u, err := a.db.UserByEmail(context.Background(), email)
	if err != nil {
		a.t.Fatal(err)
	}
	ac.user = u
	return ac
}

// signUpVerified signs a person up through the sign-up form in Chinese and
// opens the mailed verification link, as they would.
func signUpVerified(t *testing.T, a *app, email, name string) *actor {
	t.Helper()
	ac := newActor(a, name)
	res, body := ac.post(a.url(routenames.AuthSignupPost), url.Values{"email": {email}, "name": {name}, "password": {testPassword}, "lang": {locales.ZH}},
		"Accept-Language", locales.ZH)
	must(t, res.StatusCode == http.StatusSeeOther || res.StatusCode == http.StatusOK, "sign up %s: %d %s", email, res.StatusCode, snippet(body))
	res, body = ac.do("GET", a.url(routenames.AuthVerify)+"?token="+mailedToken(t, a.db, email, "/verify"), nil, "Accept-Language", locales.ZH)
	must(t, res.StatusCode == http.StatusOK || res.StatusCode == http.StatusSeeOther, "verify %s: %d %s", email, res.StatusCode, snippet(body))
	return loginWith(a, name, email, testPassword)
}

// providerOffer is a demo provider's offer of a model in a datacentre.
func providerOffer(t *testing.T, db *models.DB, providerID int64, dc, model string) models.Offer {
	t.Helper()
	var o models.Offer
	err := db.R.Raw(`SELECT o.* FROM offers o JOIN datacenters d ON d.id = o.datacenter_id
		WHERE o.provider_id = ? AND d.slug = ? AND o.gpu_model = ? ORDER BY o.id LIMIT 1`, providerID, dc, model).Scan(&o).Error
	if err != nil || o.ID == 0 {
		t.Fatalf("no offer %s/%s of provider %d: %v", dc, model, providerID, err)
	}
	return o
}

// addSiblingNode adds another node, with its own offer, of the offer's
// provider, datacentre and model with n free GPUs, and returns its id.
func addSiblingNode(t *testing.T, db *models.DB, o models.Offer, n int) int64 {
	t.Helper()
	var slugs struct{ Provider, Datacenter string }
	if err := db.R.Raw(`SELECT p.slug AS provider, d.slug AS datacenter FROM providers p, datacenters d WHERE p.id = ? AND d.id = ?`,
		o.ProviderID, o.DatacenterID).Scan(&slugs).Error; err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("cd-tianfu-swpark-rtx-4090-%02d", 90+n)
	l := demodata.Listing{ProviderSlug: slugs.Provider, DatacenterSlug: slugs.Datacenter,
		Node: models.Node{Name: name, GPUModel: o.GPUModel, Status: "active", Demo: true, Health: models.NodeUnknown, AgentInfo: "{}"}}
	for i := range n {
		l.GPUs = append(l.GPUs, models.GPU{Idx: i, UUID: fmt.Sprintf("GPU-5b1b11e0-0000-4000-8000-%06d%06d", o.NodeID, i),
			GPUModel: o.GPUModel, State: models.GPUFree, Health: models.GPUHealthUnknown, Telemetry: "{}"})
	}
	sib := o
	sib.ID, sib.MaxGPUs, sib.AvailableGPUs = 0, n, n
	l.Offer = sib
	if err := demodata.CreateMarket(context.Background(), db, &demodata.MarketSeed{Listings: []demodata.Listing{l}}); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.R.Model(&models.Node{}).Where("name = ?", name).Pluck("id", &id).Error; err != nil || id == 0 {
		t.Fatalf("sibling node: %v", err)
	}
	return id
}

// page is one page to render, as the person who sees it, and the status
// it answers (0: 200).
type page struct {
	route  string
	path   string
	as     *actor
	status int
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// pages lists every page of the route table with the market's records in
// it, as the person who sees it.
func (m *busyMarket) pages(t *testing.T) []page {
	t.Helper()
	a := m.a
	var out []page
	add := func(as *actor, route string, query string, params ...any) {
		out = append(out, page{route: route, path: a.url(route, params...) + query, as: as})
	}
	id := idParam
	pid := id(m.providerID)
	for _, as := range []*actor{m.anon, m.renter} {
		add(as, routenames.Home, "")
		add(as, routenames.OffersList, "")
		add(as, routenames.OffersShow, "", id(m.offer.ID))
		add(as, routenames.DatacentersShow, "", "cd-tianfu-swpark")
		add(as, routenames.SLA, "")
		add(as, routenames.TCO, "")
		add(as, routenames.BenchmarksShow, "", id(m.reportID))
		add(as, routenames.NodesBenchmarks, "", id(m.sibling))
		add(as, routenames.APIDocs, "")
	}
	// The offer list filtered to nothing (it says which filter excluded
	// what), by latency from a city, and as a fragment.
	add(m.anon, routenames.OffersList, query("gpu", "b200", "city", "chengdu", "max_price", "1", "available", "1"))
	add(m.renter, routenames.OffersList, query("from", "chongqing", "max_latency_ms", "20", "sort", "latency"))
	add(m.anon, routenames.OffersList, query("sort", "measured"))
	add(m.anon, routenames.AuthSignup, "")
	add(m.anon, routenames.AuthLogin, "")
	add(m.anon, routenames.PasswordForgot, "")
	add(m.anon, routenames.PasswordReset, "?token=not-a-token")
	// A link that does not work is a page too.
	out = append(out, page{route: routenames.AuthVerify, path: a.url(routenames.AuthVerify) + "?token=not-a-token", as: m.anon, status: http.StatusBadRequest},
		page{route: routenames.LabsConfirm, path: a.url(routenames.LabsConfirm) + "?token=not-a-token", as: m.renter, status: http.StatusBadRequest})
	add(m.newcomer, routenames.AccountShow, "")
	add(m.newcomer, routenames.OffersList, "")
	add(m.renter, routenames.AccountShow, "")
	add(m.renter, routenames.OrgsShow, "", id(m.renterOrg))
	add(m.renter, routenames.OrgsShow, "", id(m.teamOrg))
	add(m.renter, routenames.LabsApply, "")
	add(m.renter, routenames.InvitationsAccept, "?token=not-a-token")
	add(m.renter, routenames.WalletShow, "", id(m.renterOrg))
	add(m.renter, routenames.TopupsShow, "", id(m.topup))
	add(m.renter, routenames.RentalsNew, "", id(m.offer.ID))
	add(m.renter, routenames.RentalsNew, query("term", "week"), id(m.termOffer.ID))
	add(m.renter, routenames.Console, "")
	add(m.renter, routenames.StandingOrders, "")
	add(m.renter, routenames.StandingOrdersNotices, "")
	for _, r := range []int64{m.stopped, m.moved, m.term, m.failed} {
		add(m.renter, routenames.RentalsShow, "", id(r))
		add(m.renter, routenames.RentalsLive, "", id(r))
		add(m.renter, routenames.RentalsUsage, "", id(r))
	}
	for _, r := range []string{routenames.AdminHome, routenames.AdminUsers, routenames.AdminOrgs, routenames.AdminPayouts, routenames.AdminOutbox, routenames.AdminJobs, routenames.AdminAudit} {
		add(m.admin, r, "")
	}
	add(m.renter, routenames.RealNameShow, "")
	add(m.admin, routenames.AdminRealName, "", id(m.renter.user.ID))
	add(m.admin, routenames.AdminSMS, "")
	add(m.renter, routenames.InvoicesPage, "", id(m.renterOrg))
	add(m.renter, routenames.InvoicesPage, "", id(m.teamOrg)) // none yet
	add(m.admin, routenames.AdminInvoices, "")
	add(m.admin, routenames.AdminInvoicesShow, "", id(m.invoiceAsked))
	add(m.admin, routenames.AdminInvoicesShow, "", id(m.invoiceIssued))
	add(m.renter, routenames.ProviderHome, "") // the provider sign-up form
	for _, r := range []string{routenames.ProviderDashboard, routenames.ProviderProfile, routenames.ProviderDatacenters, routenames.ProviderNodes, routenames.ProviderNodesLive,
		routenames.ProviderOffers, routenames.ProviderOffersNew, routenames.ProviderCapacity, routenames.ProviderEarnings, routenames.ProviderStatement} {
		add(m.provider, r, "", pid)
	}
	add(m.provider, routenames.ProviderDatacentersEdit, "", pid, id(m.datacenterID))
	add(m.provider, routenames.ProviderOffersEdit, "", pid, id(m.offer.ID))
	for _, n := range []int64{m.offer.NodeID, m.sibling, m.termOffer.NodeID, m.failNode} {
		add(m.provider, routenames.ProviderNodesShow, "", pid, id(n))
		add(m.provider, routenames.ProviderNodesLiveOne, "", pid, id(n))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].route < out[j].route })
	return out
}

// visibleText is what a reader of the page sees, one string per block
// (a paragraph, a table cell, a list item, a button, an option, an
// attribute a browser shows: title, placeholder, alt, aria-label). Text in
// <code>, <pre> and <kbd> is marked with codeMark around it: it is
// machine text (commands, identifiers) the same in every language. Text
// in an element marked as another language (lang="en" inside a Chinese
// page: an English document quoted as it is) is left out.
func visibleText(t *testing.T, body string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse page: %v", err)
	}
	var blocks []string
	var cur strings.Builder
	flush := func() {
		if s := strings.Join(strings.Fields(cur.String()), " "); s != "" {
			blocks = append(blocks, s)
		}
		cur.Reset()
	}
	pageLang := ""
	var walk func(n *html.Node, code bool)
	walk = func(n *html.Node, code bool) {
		switch n.Type {
		case html.TextNode:
			if code {
				cur.WriteString(" " + codeMark + n.Data + codeMark + " ")
			} else {
				cur.WriteString(n.Data)
			}
			return
		case html.ElementNode:
			switch n.Data {
			case "script", "style", "noscript", "template":
				return
			}
			for _, at := range n.Attr {
				if at.Key == "lang" {
					if n.Data == "html" {
						pageLang = at.Val
					} else if at.Val != pageLang {
						return
					}
				}
			}
			for _, at := range n.Attr {
				show := at.Key == "title" || at.Key == "placeholder" || at.Key == "alt" || at.Key == "aria-label" ||
					(at.Key == "value" && n.Data == "input" && slices.ContainsFunc(n.Attr, func(b html.Attribute) bool {
						return b.Key == "type" && (b.Val == "submit" || b.Val == "button")
					}))
				if show && strings.TrimSpace(at.Val) != "" {
					flush()
					blocks = append(blocks, strings.Join(strings.Fields(at.Val), " "))
				}
			}
			code = code || n.Data == "code" || n.Data == "pre" || n.Data == "kbd" || n.Data == "samp"
		}
		block := n.Type == html.ElementNode && !inline[n.Data]
		if block {
			flush()
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, code)
		}
		if block {
			flush()
		}
	}
	walk(doc, false)
	flush()
	return blocks
}

// codeMark delimits machine text in visibleText's blocks.
const codeMark = "\x00"

// inline are the elements whose text runs on with their neighbours'.
var inline = map[string]bool{"a": true, "abbr": true, "b": true, "bdi": true, "br": false, "code": true, "data": true, "em": true,
	"i": true, "kbd": true, "label": true, "mark": true, "q": true, "s": true, "samp": true, "small": true, "span": true,
	"strong": true, "sub": true, "sup": true, "time": true, "u": true, "var": true, "wbr": true, "output": true, "meter": true}

// englishMessages are the English catalogue's messages a Chinese page
// must not show: the literal parts (between format verbs) of every
// message that differs from its Chinese, of at least two words and ten
// characters.
var englishMessages = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	verb := regexp.MustCompile(`%(?:\[\d+\])?[-+# 0]*\d*(?:\.\d+)?[a-zA-Z%]`)
	for _, k := range locales.Keys(locales.EN) {
		en := locales.T(locales.EN, k)
		zh := ""
		if locales.Has(locales.ZH, k) {
			zh = locales.T(locales.ZH, k)
		}
		if en == zh {
			continue
		}
		for _, part := range verb.Split(en, -1) {
			part = strings.TrimFunc(part, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
			if len(part) < 10 || len(strings.Fields(part)) < 2 || strings.Contains(zh, part) {
				continue
			}
			out[part] = k
		}
	}
	return out
})

// sharedWords are the lowercase words a Chinese page may show beside
// others: units, written the same in Chinese ("9 ms"). Product and model
// names are capitalised (GeForce RTX, NVLink), and addresses, hosts, slugs,
// ids and commands are identifiers or machine text (see identifier and
// codeMark), so none of them need listing.
var sharedWords = map[string]bool{"ms": true}

// lowerRun finds two or more lowercase English words in a row.
var lowerRun = regexp.MustCompile(`\b[a-z]{2,}(?:['’][a-z]+)?(?:[ ,;:]+[a-z]{2,}(?:['’][a-z]+)?)+\b`)

// identifier is text a reader copies rather than reads: an address, a
// host, a path, a slug or an id.
var identifier = regexp.MustCompile(`\S*[@/._\-=:]\S*\w\S*|\S*\d\S*`)

// englishIn lists the English message text in a Chinese page's blocks.
func englishIn(blocks []string) []string {
	var out []string
	seen := map[string]bool{}
	report := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, b := range blocks {
		plain := strings.ReplaceAll(b, codeMark, "")
		for part, key := range englishMessages() {
			if strings.Contains(plain, part) {
				report(fmt.Sprintf("English message %q (%s) in %q", part, key, plain))
			}
		}
		// Outside machine text, no run of lowercase English words.
		var prose strings.Builder
		for i, seg := range strings.Split(b, codeMark) {
			if i%2 == 0 {
				prose.WriteString(seg)
			}
			prose.WriteString(" ")
		}
		words := identifier.ReplaceAllString(prose.String(), " ")
		for _, run := range lowerRun.FindAllString(words, -1) {
			n := 0
			for _, w := range strings.FieldsFunc(run, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == ':' }) {
				if !sharedWords[w] {
					n++
				}
			}
			if n >= 2 {
				report(fmt.Sprintf("English words %q in %q", run, plain))
			}
		}
	}
	return out
}

// doubledLabels lists the phrases an English page's blocks say twice in a
// row.
func doubledLabels(blocks []string) []string {
	var out []string
	for _, b := range blocks {
		plain := strings.ReplaceAll(b, codeMark, "")
		words := strings.Fields(plain)
		for n := 1; n <= 4; n++ {
			for i := 0; i+2*n <= len(words); i++ {
				a := strings.ToLower(strings.Join(words[i:i+n], " "))
				c := strings.ToLower(strings.Join(words[i+n:i+2*n], " "))
				if a == c && len(a) >= 3 && strings.IndexFunc(a, unicode.IsLetter) >= 0 {
					out = append(out, fmt.Sprintf("%q said twice in %q", strings.Join(words[i:i+n], " "), plain))
				}
			}
		}
	}
	return out
}
