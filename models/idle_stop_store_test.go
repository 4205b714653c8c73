package models_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/rentalstore"
)

// The idle-stop watch's list holds running on-demand GPU rentals with a
// setting of their own or a policy of their organisation (a lab), after
// the id asked, with both read back; not stopped ones, not no-GPU ones,
// not a week's (prepaid), not those without either (a team's policy
// values do not count). Settings and policies round-trip through the
// records; a warning is recorded once per streak, and a policy change
// forgets those of its organisation's running rentals; the run's start
// is its latest running or migrated event.
func TestIdleStopStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		n, _ := seededNode(t, db)
		own := testRental(t, db, n)
		byPolicy := testRental(t, db, n)
		// A team's policy values do not count: only labs have policies.
		teamPolicy := testRental(t, db, n)
		stopped := testRental(t, db, n)
		noGPU := testRental(t, db, n)
		week := testRental(t, db, n)
		now := time.Now().UTC().Truncate(time.Second)
		set := models.IdleStop{BelowPct: 10, Minutes: 30}
		policy := models.IdleStop{BelowPct: 20, Minutes: 15}
		err := db.Tx(ctx, func(tx *gorm.DB) error {
			for _, id := range []int64{own.ID, stopped.ID, noGPU.ID, week.ID} {
				if err := rentalstore.SetRentalIdleStop(tx, id, set, now); err != nil {
					return err
				}
			}
			for _, org := range []int64{byPolicy.OrgID, teamPolicy.OrgID} {
				if err := models.SetOrgIdlePolicy(tx, org, policy); err != nil {
					return err
				}
			}
			if err := tx.Model(&models.Org{}).Where("id = ?", byPolicy.OrgID).Update("kind", models.OrgLab).Error; err != nil {
				return err
			}
			if err := tx.Model(&models.Rental{}).Where("id = ?", stopped.ID).Update("status", models.RentalStopped).Error; err != nil {
				return err
			}
			if err := tx.Model(&models.Rental{}).Where("id = ?", week.ID).Update("term", "week").Error; err != nil {
				return err
			}
			return tx.Model(&models.Rental{}).Where("id = ?", noGPU.ID).Update("no_gpu", true).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err := db.RentalByID(ctx, own.ID)
		if err != nil || r.IdleStop != set || r.IdleWarnedAt != nil {
			t.Fatalf("the rental's setting read back: %+v, warned %v, %v", r.IdleStop, r.IdleWarnedAt, err)
		}
		org, err := db.OrgByID(ctx, byPolicy.OrgID)
		if err != nil || org.IdlePolicy != policy {
			t.Fatalf("the organisation's policy read back: %+v, %v", org.IdlePolicy, err)
		}

		ws, err := rentalstore.IdleWatchList(ctx, db, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != 2 || ws[0].RentalID != own.ID || ws[1].RentalID != byPolicy.ID {
			t.Fatalf("watch list: %+v, want rentals %d and %d", ws, own.ID, byPolicy.ID)
		}
		if ws[0].Own() != set || ws[0].Policy().On() || ws[1].Own().On() || ws[1].Policy() != policy {
			t.Errorf("settings listed: %+v %+v / %+v %+v", ws[0].Own(), ws[0].Policy(), ws[1].Own(), ws[1].Policy())
		}
		if ws[0].UserID != own.UserID || ws[0].OrgID != own.OrgID || ws[0].NodeID == nil || *ws[0].NodeID != n.ID || ws[0].Simulated != n.Simulated {
			t.Errorf("listed row: %+v", ws[0])
		}
		if after, err := rentalstore.IdleWatchList(ctx, db, own.ID, 10); err != nil || len(after) != 1 || after[0].RentalID != byPolicy.ID {
			t.Errorf("after rental %d: %+v, %v", own.ID, after, err)
		}
		if one, err := rentalstore.IdleWatchList(ctx, db, 0, 1); err != nil || len(one) != 1 {
			t.Errorf("limit 1: %+v, %v", one, err)
		}

		// One warning per streak: a second one since the streak began is
		// not recorded; one for a later streak is.
		streak := now.Add(-10 * time.Minute)
		warn := func(since, at time.Time) bool {
			t.Helper()
			var ok bool
			if err := db.Tx(ctx, func(tx *gorm.DB) error {
				var err error
				ok, err = rentalstore.MarkIdleWarned(tx, own.ID, since, at)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !warn(streak, now) || warn(streak, now.Add(time.Minute)) || !warn(now.Add(5*time.Minute), now.Add(6*time.Minute)) {
			t.Error("warnings recorded: want the first of a streak only")
		}
		if r, _ := db.RentalByID(ctx, own.ID); r.IdleWarnedAt == nil || !r.IdleWarnedAt.Equal(now.Add(6*time.Minute)) {
			t.Errorf("warned at %v", r.IdleWarnedAt)
		}
		// A policy change forgets the warnings of the organisation's
		// running rentals, not others'.
		for _, id := range []int64{byPolicy.ID, stopped.ID} {
			if err := db.W.Model(&models.Rental{}).Where("id = ?", id).Update("idle_warned_at", now).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := db.W.Model(&models.Rental{}).Where("id = ?", stopped.ID).Update("org_id", byPolicy.OrgID).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return rentalstore.ForgetOrgIdleWarnings(tx, byPolicy.OrgID) }); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[int64]bool{byPolicy.ID: false, stopped.ID: true, own.ID: true} {
			if r, _ := db.RentalByID(ctx, id); (r.IdleWarnedAt != nil) != want {
				t.Errorf("rental %d (%s, org %d) warned at %v after its lab's policy changed; want kept: %v", id, r.Status, r.OrgID, r.IdleWarnedAt, want)
			}
		}
		// A new setting forgets the warning.
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return rentalstore.SetRentalIdleStop(tx, own.ID, models.IdleStop{}, now) }); err != nil {
			t.Fatal(err)
		}
		if r, _ := db.RentalByID(ctx, own.ID); r.IdleWarnedAt != nil || r.IdleStop.On() {
			t.Errorf("after turning it off: %+v, warned %v", r.IdleStop, r.IdleWarnedAt)
		}

		if at, ran, err := rentalstore.RunStartedAt(ctx, db, own.ID); err != nil || ran {
			t.Errorf("run start without events: %v, %v", at, err)
		}
		for i, kind := range []string{"running", "stop_requested", "migrated", "stopped"} {
			if err := db.W.Create(&models.RentalEvent{RentalID: own.ID, At: now.Add(time.Duration(i) * time.Minute), Kind: kind}).Error; err != nil {
				t.Fatal(err)
			}
		}
		if at, ran, err := rentalstore.RunStartedAt(ctx, db, own.ID); err != nil || !ran || !at.Equal(now.Add(2*time.Minute)) {
			t.Errorf("run start: %v, %v; want the migrated event's", at, err)
		}
	})
}
