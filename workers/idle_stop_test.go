package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/locales"
	"suanli/models"
	"suanli/rentals"
	"suanli/workers"
)

// The idle-stop pass is a periodic River job of a queue that works
// rentals: on both databases it runs on its own schedule and warns the
// renter of a running rental whose GPU has read 0 % for ten minutes
// (stored samples, as the heartbeats store them), longer than its
// 5-minute window: once, and without stopping it, as the stop waits for
// the warning's lead.
func TestIdleStopJobRunsOnItsSchedule(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		u, err := (&accounts.Service{DB: db}).CreateUser(ctx, "idle@example.com", "idle-pass-2026", "Renter", false)
		if err != nil {
			t.Fatal(err)
		}
		orgs, err := db.OrgsOfUser(ctx, u.ID)
		if err != nil || len(orgs) == 0 {
			t.Fatalf("organisations: %v", err)
		}
		var g models.GPU
		if err := db.R.Order("id").First(&g).Error; err != nil {
			t.Fatal(err)
		}
		var o models.Offer
		if err := db.R.Where("node_id = ?", g.NodeID).First(&o).Error; err != nil {
			t.Fatal(err)
		}
		now := db.Now().UTC().Truncate(time.Second)
		started := now.Add(-10 * time.Minute)
		r := &models.Rental{OrgID: orgs[0].Org.ID, UserID: u.ID, OfferID: o.ID, ProviderID: o.ProviderID, NodeID: &g.NodeID, GPUs: 1,
			SLA: "standard", Term: "on_demand", Status: models.RentalRunning, SSHPublicKey: "ssh-ed25519 AAAA test", WorkspaceID: "ws-idle",
			PricePerGPUHourFen: o.PricePerGPUHourFen, RunningSince: &started, BilledUntil: &started, CreatedAt: started, UpdatedAt: started,
			IdleStop: models.IdleStop{BelowPct: 10, Minutes: 5}}
		if err := db.W.Create(r).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Create(&models.RentalGPU{RentalID: r.ID, GPUID: g.ID, NodeID: g.NodeID, AttachedAt: started}).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Create(&models.RentalEvent{RentalID: r.ID, At: started, Kind: "running"}).Error; err != nil {
			t.Fatal(err)
		}
		for at := started.Add(30 * time.Second); !at.After(now); at = at.Add(30 * time.Second) {
			if err := db.W.Create(&models.GPUSample{GPUID: g.ID, At: at, PowerW: 60, TempC: 35, SMClockMHz: 210}).Error; err != nil {
				t.Fatal(err)
			}
		}

		rs := &rentals.Service{DB: db, Wallet: &billing.Wallet{DB: db}, Hub: fleet.NewHub(), BaseURL: "http://suanli.test"}
		q, err := workers.New(db, workers.Options{Work: true, Rentals: rs, MeterEvery: time.Hour, WatchEvery: time.Hour,
			IdleEvery: 200 * time.Millisecond, FetchPoll: 50 * time.Millisecond})
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
		waitFor(t, "the idle-stop job's warning", func() bool {
			got, err := db.RentalByID(ctx, r.ID)
			return err == nil && got.IdleWarnedAt != nil
		})
		// Later passes find it warned for this streak already.
		waitFor(t, "three completed idle-stop passes", func() bool {
			var jobs int64
			db.R.Raw(`SELECT COUNT(*) FROM river_job WHERE kind = ? AND state = 'completed'`, workers.IdleStopArgs{}.Kind()).Scan(&jobs)
			return jobs >= 3
		})
		mails, err := db.Outbox(ctx, u.Email, 10)
		if err != nil {
			t.Fatal(err)
		}
		subject, _, _ := strings.Cut(locales.T(locales.ZH, "idle.mail.warning.subject", r.ID, "\x00"), "\x00")
		warned := 0
		for _, m := range mails {
			if strings.HasPrefix(m.Subject, subject) {
				warned++
			}
		}
		if warned != 1 {
			t.Errorf("%d warnings mailed, want 1 (once per idle streak)", warned)
		}
		if got, err := db.RentalByID(ctx, r.ID); err != nil || got.Status != models.RentalRunning {
			t.Errorf("the rental is %s (%v), want running until the warning's lead has passed", got.Status, err)
		}
	})
}
