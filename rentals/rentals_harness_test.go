package rentals_test

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/agent"
	"suanli/billing"
	"suanli/demo"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/demodata"
	"suanli/models/ledger"
	"suanli/offers"
	"suanli/pricing"
	"suanli/providers"
	"suanli/rentals"
	"suanli/secrets"
	"suanli/web"
	"suanli/workers"
)

// The rental harness: a seeded demo market, a funded renter, the rental
// service with a real River queue working its jobs, the real router behind
// httptest, and in-process simulated node agents that speak the agent
// protocol over HTTP, as the demo's do.

// testClock is the database clock of a rig: real time moved by an offset
// (Advance), or frozen (Freeze) so that a test steps it by hand. Readings
// are truncated to the microsecond, the precision PostgreSQL keeps, so a
// time read back from the database equals the one written.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
	frozen *time.Time
}

// Now implements models.DB.Now.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen != nil {
		return *c.frozen
	}
	return time.Now().Add(c.offset).Truncate(time.Microsecond)
}

// Set moves the clock to t (real time keeps running from there).
func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = time.Until(t)
}

// Advance moves the clock forward and returns the new time.
func (c *testClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	if c.frozen != nil {
		t := c.frozen.Add(d)
		c.frozen = &t
	} else {
		c.offset += d
	}
	c.mu.Unlock()
	return c.Now()
}

// Freeze stops the clock at its current reading and returns it.
func (c *testClock) Freeze() time.Time {
	now := c.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = &now
	return now
}

// weekdayMorning is 10:00 Asia/Shanghai on today's date, or the next
// weekday's: a peak hour, so that an hour's price does not depend on when
// the suite runs.
func weekdayMorning() time.Time {
	l := time.Now().In(pricing.Shanghai)
	d := time.Date(l.Year(), l.Month(), l.Day(), 10, 0, 0, 0, pricing.Shanghai)
	for d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
		d = d.AddDate(0, 0, 1)
	}
	return d
}

// rigOptions tune a rig; the zero value is a rig with generous timeouts.
type rigOptions struct {
	VerifyTimeout, LaunchTimeout, SilentAfter, StepWait time.Duration
	// FundFen is the renter's promotional credit (default ¥10,000).
	FundFen int64
	// InsertOnly keeps jobs in the queue instead of working them.
	InsertOnly bool
	// Credentials seals registry credentials (nil: none are taken).
	Credentials *secrets.Box
}

// rig is one market under test.
type rig struct {
	t        *testing.T
	ctx      context.Context
	db       *models.DB
	clock    *testClock
	rentals  *rentals.Service
	wallet   *billing.Wallet
	accounts *accounts.Service
	url      string
	user     *models.User
	org      *models.Org
	member   *models.Membership
	fund     int64
	// launcher, when set, replaces agents' simulated launcher.
	launcher agent.Launcher
	// launcherFor, when set, gives a node's agent its own launcher.
	launcherFor map[int64]agent.Launcher
}

var (
	testKeyOnce sync.Once
	testKey     string
)

// sshKey is an OpenSSH public key line for rent requests.
func sshKey(t testing.TB) string {
	testKeyOnce.Do(func() {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		k, err := ssh.NewPublicKey(pub)
		if err != nil {
			panic(err)
		}
		testKey = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " renter@test"
	})
	return testKey
}

// newRig seeds the demo market into db and starts everything but agents.
func newRig(t *testing.T, db *models.DB, opts rigOptions) *rig {
	t.Helper()
	ctx := context.Background()
	clock := &testClock{}
	clock.Set(weekdayMorning())
	db.Now = clock.Now
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	svc := &accounts.Service{DB: db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
	u, err := svc.CreateUser(ctx, "renter@example.com", "renter-pass-2026", "Renter", false)
	if err != nil {
		t.Fatal(err)
	}
	orgs, err := db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("the renter's organisations: %v %v", orgs, err)
	}
	org, m := orgs[0].Org, orgs[0].Membership
	fund := cmp.Or(opts.FundFen, 1_000_000)
	if err := db.Tx(ctx, func(tx *gorm.DB) error {
		return billing.CreditPromo(tx, org.ID, fund, "promo_credit", "test funds", nil, nil, clock.Now())
	}); err != nil {
		t.Fatal(err)
	}
	wallet := &billing.Wallet{DB: db, BaseURL: "http://suanli.test"}
	rentals := &rentals.Service{DB: db, Wallet: wallet, Hub: fleet.NewHub(),
		VerifyTimeout: opts.VerifyTimeout, LaunchTimeout: opts.LaunchTimeout, SilentAfter: opts.SilentAfter,
		StepWait: cmp.Or(opts.StepWait, 2*time.Second), BaseURL: "http://suanli.test", Credentials: opts.Credentials}
	// The periodic meter, health and idle-stop passes are left to the
	// tests (they call Meter and Watch at the instants they choose); River
	// works the provisioning jobs.
	q, err := workers.New(db, workers.Options{Work: !opts.InsertOnly, Rentals: rentals, MeterEvery: time.Hour, WatchEvery: time.Hour, IdleEvery: time.Hour,
		AvailabilityEvery: time.Hour, FetchPoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rentals.Jobs = q
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = q.Stop(sctx)
	})
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	h := &handlers.Handler{DB: db, Index: ix, Accounts: svc, Sessions: web.NewSessions(db, false), Wallet: wallet, Rentals: rentals,
		Providers: &providers.Service{DB: db, Rentals: rentals, BaseURL: "http://suanli.test"}, Payouts: &providers.Payouts{DB: db},
		Tunnels: fleet.NewTunnels(db, "")}
	srv := httptest.NewServer(web.New(h, web.Options{}))
	t.Cleanup(srv.Close)
	return &rig{t: t, ctx: ctx, db: db, clock: clock, rentals: rentals, wallet: wallet, accounts: svc, url: srv.URL,
		user: u, org: &org, member: &m, fund: fund}
}

// quiet waits until the queue's start-up health pass (River runs the
// periodic watch once at start, when its leader is elected) is over: from
// then on only the test runs Watch, at the instants it chooses. A test
// that moves the clock or calls Watch waits for it first.
func (r *rig) quiet() {
	r.t.Helper()
	r.eventually("the start-up health pass", func() bool {
		var n int64
		r.db.R.Raw(`SELECT COUNT(*) FROM river_job WHERE kind = 'watch_health' AND state = 'completed'`).Scan(&n)
		return n > 0
	})
}

// offer returns the demo offer of a provider, datacentre and model.
func (r *rig) offer(provider, dc, model string) models.Offer {
	r.t.Helper()
	var o models.Offer
	err := r.db.R.Raw(`SELECT o.* FROM offers o JOIN providers p ON p.id = o.provider_id JOIN datacenters d ON d.id = o.datacenter_id
		WHERE p.slug = ? AND d.slug = ? AND o.gpu_model = ? ORDER BY o.id LIMIT 1`, provider, dc, model).Scan(&o).Error
	if err != nil || o.ID == 0 {
		r.t.Fatalf("no demo offer %s/%s/%s: %v", provider, dc, model, err)
	}
	return o
}

// rtxOffer is the demo offer the rental tests use: Rongcheng AI's four
// RTX 4090 in Chengdu Hi-tech Zone (¥5.20 per GPU-hour, none busy), the
// only node of its provider, datacentre and model.
func (r *rig) rtxOffer() models.Offer { return r.offer("demo-rongcheng-ai", "cd-hitech", "rtx-4090") }

// addSibling creates another node (with its own offer) of the offer's
// provider, datacentre and model, with n free GPUs, and returns its id.
func (r *rig) addSibling(o models.Offer, n int) int64 {
	r.t.Helper()
	var slugs struct{ Provider, Datacenter string }
	if err := r.db.R.Raw(`SELECT p.slug AS provider, d.slug AS datacenter FROM providers p, datacenters d WHERE p.id = ? AND d.id = ?`,
		o.ProviderID, o.DatacenterID).Scan(&slugs).Error; err != nil {
		r.t.Fatal(err)
	}
	name := fmt.Sprintf("sibling-of-%d", o.NodeID)
	l := demodata.Listing{ProviderSlug: slugs.Provider, DatacenterSlug: slugs.Datacenter,
		Node: models.Node{Name: name, GPUModel: o.GPUModel, Status: "active", Health: models.NodeUnknown, AgentInfo: "{}"}}
	for i := range n {
		l.GPUs = append(l.GPUs, models.GPU{Idx: i, UUID: fmt.Sprintf("GPU-5b1b11e0-0000-4000-8000-%06d%06d", o.NodeID, i),
			GPUModel: o.GPUModel, State: models.GPUFree, Health: models.GPUHealthUnknown, Telemetry: "{}"})
	}
	sib := o
	sib.ID, sib.MaxGPUs, sib.AvailableGPUs = 0, n, n
	l.Offer = sib
	if err := demodata.CreateMarket(r.ctx, r.db, &demodata.MarketSeed{Listings: []demodata.Listing{l}}); err != nil {
		r.t.Fatal(err)
	}
	var id int64
	if err := r.db.R.Model(&models.Node{}).Where("name = ?", name).Pluck("id", &id).Error; err != nil || id == 0 {
		r.t.Fatalf("sibling node: %v", err)
	}
	return id
}

// simNode is a node's simulated agent.
type simNode struct {
	ID       int64
	Sim      *gpu.Sim
	Launcher *agent.SimulatedLauncher
	paused   atomic.Bool
}

// Pause makes the agent go dark, as a lost network would: no heartbeats,
// no polls, and results held until Resume.
func (n *simNode) Pause()  { n.paused.Store(true) }
func (n *simNode) Resume() { n.paused.Store(false) }

func (n *simNode) silent() bool { return n.paused.Load() || n.Sim.Silent() }

// startAgent runs a simulated agent for the node with a fresh credential.
func (r *rig) startAgent(nodeID int64) *simNode {
	r.t.Helper()
	cred, err := r.rentals.Fleet().IssueCredential(r.ctx, nodeID)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.startAgentWith(nodeID, cred)
}

// startAgentWith runs a simulated agent for the node's seeded GPUs that
// presents token (a credential or a registration token). It stops when
// the test ends.
func (r *rig) startAgentWith(nodeID int64, token string) *simNode {
	r.t.Helper()
	var n models.Node
	if err := r.db.R.First(&n, nodeID).Error; err != nil {
		r.t.Fatal(err)
	}
	var uuids []string
	if err := r.db.R.Model(&models.GPU{}).Where("node_id = ?", nodeID).Order("idx").Pluck("uuid", &uuids).Error; err != nil {
		r.t.Fatal(err)
	}
	sim, err := gpu.SimulateCatalog(n.GPUModel, len(uuids), gpu.WithUUIDs(uuids))
	if err != nil {
		r.t.Fatal(err)
	}
	reader, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	sn := &simNode{ID: nodeID, Sim: sim, Launcher: &agent.SimulatedLauncher{Host: n.Name + ".sim.invalid"}}
	var launcher agent.Launcher = sn.Launcher
	if r.launcher != nil {
		launcher = r.launcher
	}
	if l := r.launcherFor[nodeID]; l != nil {
		launcher = l
	}
	a, err := agent.New(agent.Config{Server: r.url, Token: token, GPUs: reader, Launcher: launcher, Silent: sn.silent,
		HeartbeatEvery: 100 * time.Millisecond, PollWait: time.Second, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer reader.Close()
		_ = a.Run(ctx)
	}()
	r.t.Cleanup(func() {
		cancel()
		<-done
	})
	return sn
}

// eventually waits (generously) until cond holds.
func (r *rig) eventually(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReady waits until each node's agent has reported every GPU healthy.
func (r *rig) waitReady(nodeIDs ...int64) {
	r.t.Helper()
	for _, id := range nodeIDs {
		r.eventually(fmt.Sprintf("node %d's agent reports healthy GPUs", id), func() bool {
			var n models.Node
			if r.db.R.First(&n, id).Error != nil || n.Health != models.NodeHealthy {
				return false
			}
			var notHealthy int64
			r.db.R.Model(&models.GPU{}).Where("node_id = ? AND health <> ?", id, models.GPUHealthy).Count(&notHealthy)
			return notHealthy == 0
		})
	}
}

// waitHeartbeat waits until the node has sent a heartbeat stamped at or
// after t by the database clock.
func (r *rig) waitHeartbeat(nodeID int64, t time.Time) {
	r.t.Helper()
	r.eventually(fmt.Sprintf("a heartbeat from node %d after %s", nodeID, t), func() bool {
		var n models.Node
		return r.db.R.First(&n, nodeID).Error == nil && n.LastHeartbeatAt != nil && !n.LastHeartbeatAt.Before(t)
	})
}

// provisionSnoozes is how many times the rental's provisioning job was
// snoozed: each time a step ran out of its StepWait still waiting for the
// agent. River counts them in the job's metadata.
func (r *rig) provisionSnoozes(rentalID int64) int {
	r.t.Helper()
	q := `SELECT COALESCE(MAX(CAST(json_extract(metadata, '$.snoozes') AS INTEGER)), 0) FROM river_job
		WHERE kind = ? AND CAST(json_extract(args, '$.rental_id') AS INTEGER) = ?`
	if r.db.Dialect == "postgres" {
		q = `SELECT COALESCE(MAX((metadata->>'snoozes')::int), 0) FROM river_job WHERE kind = ? AND (args->>'rental_id')::bigint = ?`
	}
	var n int
	if err := r.db.R.Raw(q, workers.ProvisionArgs{}.Kind(), rentalID).Scan(&n).Error; err != nil {
		r.t.Fatal(err)
	}
	return n
}

// rent rents GPUs of an offer for the renter's personal organisation.
func (r *rig) rent(offerID int64, gpus int, change ...func(*rentals.RentInput)) (*models.Rental, error) {
	in := rentals.RentInput{OrgID: r.org.ID, OfferID: offerID, GPUs: gpus, SLA: "standard", Term: pricing.OnDemand, SSHPublicKey: sshKey(r.t)}
	for _, c := range change {
		c(&in)
	}
	return r.rentals.Rent(r.ctx, r.user, r.org, r.member, in)
}

func (r *rig) mustRent(offerID int64, gpus int, change ...func(*rentals.RentInput)) *models.Rental {
	r.t.Helper()
	rt, err := r.rent(offerID, gpus, change...)
	if err != nil {
		r.t.Fatalf("rent: %v", err)
	}
	return rt
}

// rental reads a rental back.
func (r *rig) rental(id int64) models.Rental {
	r.t.Helper()
	rt, err := r.db.RentalByID(r.ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return rt
}

// timeline is a rental's events, for failure messages.
func (r *rig) timeline(id int64) string {
	es, err := r.db.RentalEvents(r.ctx, id)
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, " (%v)", err)
	}
	for _, e := range es {
		fmt.Fprintf(&b, "\n  %s %s: %s", e.At.UTC().Format("15:04:05.000"), e.Kind, e.Detail)
	}
	return b.String()
}

// waitStatus waits until the rental is in status want; a rental that
// settles in another final status fails the test at once.
func (r *rig) waitStatus(id int64, want models.RentalStatus) models.Rental {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rt := r.rental(id)
		if rt.Status == want {
			return rt
		}
		final := rt.Status == models.RentalFailed || rt.Status == models.RentalStopped
		if final || time.Now().After(deadline) {
			r.t.Fatalf("rental %d is %s (failure %q, stop reason %q), want %s; timeline:%s", id, rt.Status, rt.Failure, rt.StopReason, want, r.timeline(id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// event returns the rental's first event of a kind.
func (r *rig) event(id int64, kind string) models.RentalEvent {
	r.t.Helper()
	es, err := r.db.RentalEvents(r.ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, e := range es {
		if e.Kind == kind {
			return e
		}
	}
	r.t.Fatalf("rental %d has no %q event; timeline:%s", id, kind, r.timeline(id))
	return models.RentalEvent{}
}

// heldGPUs are the rental's GPUs not released.
func (r *rig) heldGPUs(id int64) []models.GPU {
	r.t.Helper()
	var gs []models.GPU
	if err := r.db.R.Raw(`SELECT g.* FROM gpus g JOIN rental_gpus rg ON rg.gpu_id = g.id WHERE rg.rental_id = ? AND rg.released_at IS NULL ORDER BY g.idx`, id).
		Scan(&gs).Error; err != nil {
		r.t.Fatal(err)
	}
	return gs
}

// gpu reads a GPU back.
func (r *rig) gpu(id int64) models.GPU {
	r.t.Helper()
	var g models.GPU
	if err := r.db.R.First(&g, id).Error; err != nil {
		r.t.Fatal(err)
	}
	return g
}

// balance is the renter's wallet balance.
func (r *rig) balance() int64 {
	r.t.Helper()
	b, err := ledger.WalletBalance(r.ctx, r.db, r.org.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// walletSum is what the rental's ledger transactions did to its wallet
// (negative: charged).
func (r *rig) walletSum(rentalID int64) int64 {
	r.t.Helper()
	var sum int64
	if err := r.db.R.Raw(`SELECT COALESCE(SUM(e.amount_fen), 0) FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
		JOIN ledger_accounts a ON a.id = e.account_id WHERE t.rental_id = ? AND a.kind = ?`, rentalID, ledger.AccWallet).Scan(&sum).Error; err != nil {
		r.t.Fatal(err)
	}
	return sum
}

// txns are the rental's ledger transactions.
func (r *rig) txns(rentalID int64) []ledger.LedgerTxn {
	r.t.Helper()
	var ts []ledger.LedgerTxn
	if err := r.db.R.Where("rental_id = ?", rentalID).Order("id").Find(&ts).Error; err != nil {
		r.t.Fatal(err)
	}
	return ts
}

// emptyTxns counts the rental's ledger transactions that move no money
// (a transaction row without entries).
func (r *rig) emptyTxns(rentalID int64) int64 {
	r.t.Helper()
	var n int64
	if err := r.db.R.Raw(`SELECT COUNT(*) FROM ledger_txns t WHERE t.rental_id = ? AND NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.txn_id = t.id)`,
		rentalID).Scan(&n).Error; err != nil {
		r.t.Fatal(err)
	}
	return n
}

// checkLedger fails the test unless the whole ledger balances.
func (r *rig) checkLedger() {
	r.t.Helper()
	problems, err := ledger.LedgerCheck(r.ctx, r.db)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, p := range problems {
		r.t.Errorf("ledger: %s", p)
	}
}

// stop stops a rental and waits until its agent confirmed.
func (r *rig) stop(id int64) models.Rental {
	r.t.Helper()
	if _, err := r.rentals.Stop(r.ctx, id, rentals.StopByUser); err != nil {
		r.t.Fatalf("stop: %v", err)
	}
	return r.waitStatus(id, models.RentalStopped)
}

// rateOf is what a rental pays per second (as rentals.rate).
func rateOf(rt models.Rental) pricing.Rate {
	return pricing.Rate{PricePerGPUHourFen: rt.PricePerGPUHourFen, GPUs: rt.GPUs, OffpeakPct: rt.OffpeakPct,
		StudentPct: rt.StudentPct, SLASurchargePct: rt.SLASurchargePct}
}

// markNodeAlive makes a node rentable without an agent: healthy, with a
// heartbeat now, every GPU healthy.
func (r *rig) markNodeAlive(nodeID int64) {
	r.t.Helper()
	now := r.clock.Now()
	if err := r.db.W.Model(&models.Node{}).Where("id = ?", nodeID).
		Updates(map[string]any{"health": models.NodeHealthy, "last_heartbeat_at": now}).Error; err != nil {
		r.t.Fatal(err)
	}
	if err := r.db.W.Model(&models.GPU{}).Where("node_id = ?", nodeID).
		Updates(map[string]any{"health": models.GPUHealthy, "checked_at": now}).Error; err != nil {
		r.t.Fatal(err)
	}
}
