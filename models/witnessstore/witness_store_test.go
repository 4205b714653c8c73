package witnessstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/witnessstore"
)

// The audit runs' queries: which offers are due (not the demo's, none
// running, none started within the period), which runs expired, and
// which ended runs still hold a rental.
func TestAuditQueries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		var os []models.Offer
		if err := db.R.Where("status = ?", models.OfferListed).Order("id").Limit(3).Find(&os).Error; err != nil || len(os) < 3 {
			t.Fatalf("offers: %d %v", len(os), err)
		}
		if due, err := witnessstore.AuditCandidates(ctx, db, time.Now().Add(-time.Hour), 10); err != nil || len(due) != 0 {
			t.Fatalf("the demo's offers are due for audits: %d %v", len(due), err)
		}
		// Real providers' offers (as far as audits go).
		for _, o := range os {
			if err := db.W.Model(&models.Offer{}).Where("id = ?", o.ID).Updates(map[string]any{"demo": false, "synthetic": false, "awaiting_node": false}).Error; err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().UTC().Truncate(time.Second)
		due, err := witnessstore.AuditCandidates(ctx, db, now.Add(-24*time.Hour), 10)
		if err != nil || len(due) != 3 || due[0].ID != os[0].ID {
			t.Fatalf("due: %+v %v, want the 3 offers, never audited, by id", due, err)
		}
		// Offer 0 audited an hour ago (done), offer 1 being audited, offer
		// 2 audited two days ago.
		runs := []witnessstore.AuditRun{
			{OfferID: os[0].ID, Status: witnessstore.AuditPassed, StartedAt: now.Add(-time.Hour), Deadline: now.Add(-50 * time.Minute)},
			{OfferID: os[1].ID, Status: witnessstore.AuditRunning, StartedAt: now.Add(-30 * time.Hour), Deadline: now.Add(-29 * time.Hour)},
			{OfferID: os[2].ID, Status: witnessstore.AuditTimedOut, StartedAt: now.Add(-48 * time.Hour), Deadline: now.Add(-47 * time.Hour)},
		}
		for i := range runs {
			if err := witnessstore.InsertAuditRun(ctx, db, &runs[i]); err != nil {
				t.Fatal(err)
			}
		}
		due, err = witnessstore.AuditCandidates(ctx, db, now.Add(-24*time.Hour), 10)
		if err != nil || len(due) != 1 || due[0].ID != os[2].ID {
			t.Fatalf("due: %+v %v, want only offer %d", due, err, os[2].ID)
		}
		exp, err := witnessstore.ExpiredAudits(ctx, db, now)
		if err != nil || len(exp) != 1 || exp[0].ID != runs[1].ID {
			t.Fatalf("expired: %+v %v", exp, err)
		}
		if ok, err := witnessstore.FinishAuditRun(ctx, db, runs[1].ID, witnessstore.AuditTimedOut, "late", now); !ok || err != nil {
			t.Fatalf("finishing: %v %v", ok, err)
		}
		if ok, err := witnessstore.FinishAuditRun(ctx, db, runs[1].ID, witnessstore.AuditPassed, "", now); ok || err != nil {
			t.Fatalf("finishing twice: %v %v", ok, err)
		}
		at, ok, err := witnessstore.LastAuditStarted(ctx, db, os[2].ID)
		if err != nil || !ok || !at.Equal(runs[2].StartedAt) {
			t.Fatalf("last audit of offer %d: %v %v %v", os[2].ID, at, ok, err)
		}
		org := func(name string) models.Org {
			o := models.Org{Kind: models.OrgTeam, Name: name, Status: models.OrgActive, CreatedAt: now}
			if err := db.W.Create(&o).Error; err != nil {
				t.Fatal(err)
			}
			return o
		}
		audit, other := org("audit"), org("other")
		u := models.User{Email: "platform-audit@example.com", Name: "Audit", PasswordHash: "x"}
		if err := db.W.Create(&u).Error; err != nil {
			t.Fatal(err)
		}
		if ids, err := witnessstore.AuditRentalsToRelease(ctx, db, audit.ID); err != nil || len(ids) != 0 {
			t.Fatalf("to release without rentals: %v %v", ids, err)
		}
		// The audit organisation's rentals: one a running run holds, one
		// of an ended run, one no run names (the rent committed, the
		// run's write lost), one released already, one failed; and
		// another organisation's.
		var made []int64
		rent := func(org models.Org, status models.RentalStatus, released bool) int64 {
			r := models.Rental{OrgID: org.ID, UserID: u.ID, OfferID: os[0].ID, ProviderID: os[0].ProviderID, GPUs: 1, SLA: "standard",
				Term: "on_demand", Status: status, WorkspaceID: fmt.Sprintf("ws-audit-%d", len(made)), PricePerGPUHourFen: 100, CreatedAt: now, UpdatedAt: now}
			if released {
				r.ReleasedAt = &now
			}
			if err := db.W.Create(&r).Error; err != nil {
				t.Fatal(err)
			}
			made = append(made, r.ID)
			return r.ID
		}
		held, ended, orphan := rent(audit, models.RentalRunning, false), rent(audit, models.RentalRunning, false), rent(audit, models.RentalRunning, false)
		rent(audit, models.RentalStopped, true)
		rent(audit, models.RentalFailed, false)
		rent(other, models.RentalRunning, false)
		for _, hold := range []struct {
			status string
			rental int64
		}{{witnessstore.AuditRunning, held}, {witnessstore.AuditPassed, ended}} {
			run := witnessstore.AuditRun{OfferID: os[0].ID, Status: witnessstore.AuditRunning, StartedAt: now, Deadline: now.Add(time.Hour)}
			if err := witnessstore.InsertAuditRun(ctx, db, &run); err != nil {
				t.Fatal(err)
			}
			if err := witnessstore.SetAuditRental(ctx, db, run.ID, hold.rental); err != nil {
				t.Fatal(err)
			}
			if hold.status != witnessstore.AuditRunning {
				if _, err := witnessstore.FinishAuditRun(ctx, db, run.ID, hold.status, "", now); err != nil {
					t.Fatal(err)
				}
			}
		}
		ids, err := witnessstore.AuditRentalsToRelease(ctx, db, audit.ID)
		if err != nil || len(ids) != 2 || ids[0] != ended || ids[1] != orphan {
			t.Fatalf("to release: %v %v, want the ended run's %d and the orphan %d", ids, err, ended, orphan)
		}
	})
}
