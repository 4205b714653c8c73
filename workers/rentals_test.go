package workers_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/agent"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/handlers"
	"suanli/models"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/web"
	"suanli/workers"
)

// A rent request is provisioned by its River job on both databases: the
// job asks the node's agent (a simulated one, over the real agent
// protocol) for the NVML checks and the launch, and the rental runs.
func TestProvisionJobRunsTheRentalThroughTheQueue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		svc := &accounts.Service{DB: db, BaseURL: "http://suanli.test"}
		u, err := svc.CreateUser(ctx, "renter@example.com", "renter-pass-2026", "Renter", false)
		if err != nil {
			t.Fatal(err)
		}
		orgs, err := db.OrgsOfUser(ctx, u.ID)
		if err != nil || len(orgs) == 0 {
			t.Fatalf("organisations: %v", err)
		}
		org, m := orgs[0].Org, orgs[0].Membership
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, org.ID, 1_000_000, "promo_credit", "test funds", nil, nil, time.Now())
		}); err != nil {
			t.Fatal(err)
		}
		wallet := &billing.Wallet{DB: db}
		rs := &rentals.Service{DB: db, Wallet: wallet, Hub: fleet.NewHub(), StepWait: 2 * time.Second}
		q, err := workers.New(db, workers.Options{Work: true, Rentals: rs, MeterEvery: time.Hour, WatchEvery: time.Hour, FetchPoll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rs.Jobs = q
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
		srv := httptest.NewServer(web.New(&handlers.Handler{DB: db, Index: ix, Accounts: svc, Sessions: web.NewSessions(db, false),
			Wallet: wallet, Rentals: rs}, web.Options{}))
		t.Cleanup(srv.Close)

		// The node's simulated agent.
		var o models.Offer
		if err := db.R.Raw(`SELECT o.* FROM offers o JOIN providers p ON p.id = o.provider_id JOIN datacenters d ON d.id = o.datacenter_id
			WHERE p.slug = 'demo-rongcheng-ai' AND d.slug = 'cd-hitech' AND o.gpu_model = 'rtx-4090'`).Scan(&o).Error; err != nil || o.ID == 0 {
			t.Fatalf("demo offer: %v", err)
		}
		var uuids []string
		db.R.Model(&models.GPU{}).Where("node_id = ?", o.NodeID).Order("idx").Pluck("uuid", &uuids)
		sim, err := gpu.SimulateCatalog(o.GPUModel, len(uuids), gpu.WithUUIDs(uuids))
		if err != nil {
			t.Fatal(err)
		}
		reader, err := gpu.Open(sim, gpu.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cred, err := rs.Fleet().IssueCredential(ctx, o.NodeID)
		if err != nil {
			t.Fatal(err)
		}
		launcher := &agent.SimulatedLauncher{}
		a, err := agent.New(agent.Config{Server: srv.URL, Token: cred, GPUs: reader, Launcher: launcher, Silent: sim.Silent,
			HeartbeatEvery: 100 * time.Millisecond, PollWait: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		actx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer reader.Close()
			_ = a.Run(actx)
		}()
		t.Cleanup(func() { cancel(); <-done })
		waitFor(t, "the agent's first heartbeat", func() bool {
			var bad int64
			db.R.Model(&models.GPU{}).Where("node_id = ? AND health <> ?", o.NodeID, models.GPUHealthy).Count(&bad)
			var n models.Node
			return db.R.First(&n, o.NodeID).Error == nil && n.Health == models.NodeHealthy && bad == 0
		})

		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		key, _ := ssh.NewPublicKey(pub)
		rt, err := rs.Rent(ctx, u, &org, &m, rentals.RentInput{OrgID: org.ID, OfferID: o.ID, GPUs: 1, SLA: "standard", Term: pricing.OnDemand,
			SSHPublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))})
		if err != nil {
			t.Fatal(err)
		}
		var got models.Rental
		waitFor(t, "the rental running", func() bool {
			got, _ = db.RentalByID(ctx, rt.ID)
			return got.Status == models.RentalRunning || got.Status == models.RentalFailed
		})
		if got.Status != models.RentalRunning || rentals.Access(&got) == nil || rentals.RentalChecks(&got) == nil {
			t.Fatalf("rental %s (%s), want running with access and checks", got.Status, got.Failure)
		}
		// The one rental's job; River records its completion once the step has returned.
		waitFor(t, "the provisioning job completed", func() bool {
			var jobs int64
			db.R.Raw(`SELECT COUNT(*) FROM river_job WHERE kind = ? AND state = 'completed'`, workers.ProvisionArgs{}.Kind()).Scan(&jobs)
			return jobs == 1
		})
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
