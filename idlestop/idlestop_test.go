package idlestop

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// The stricter of a rental's setting and its lab's policy applies, part
// by part; either alone applies; neither is off.
func TestEffective(t *testing.T) {
	s := func(pct, minutes int) models.IdleStop { return models.IdleStop{BelowPct: pct, Minutes: minutes} }
	for _, c := range []struct {
		name              string
		own, policy, want models.IdleStop
	}{
		{"neither", s(0, 0), s(0, 0), s(0, 0)},
		{"own only", s(10, 60), s(0, 0), s(10, 60)},
		{"policy only", s(0, 0), s(20, 30), s(20, 30)},
		{"own stricter", s(50, 10), s(20, 30), s(50, 10)},
		{"own looser (set before the policy)", s(5, 120), s(20, 30), s(20, 30)},
		{"mixed: the higher threshold and the shorter window", s(50, 60), s(20, 30), s(50, 30)},
	} {
		if got := Effective(c.own, c.policy); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Check takes off and in-bounds settings, refuses out-of-bounds ones and,
// under a lab's policy, looser ones, always naming idle_stop; a policy
// counts only on a lab.
func TestCheck(t *testing.T) {
	lab := &models.Org{Kind: models.OrgLab, IdlePolicy: models.IdleStop{BelowPct: 20, Minutes: 30}}
	team := &models.Org{Kind: models.OrgTeam, IdlePolicy: models.IdleStop{BelowPct: 20, Minutes: 30}}
	for _, c := range []struct {
		v   models.IdleStop
		org *models.Org
		ok  bool
	}{
		{models.IdleStop{}, lab, true},
		{models.IdleStop{BelowPct: 1, Minutes: MinMinutes}, nil, true},
		{models.IdleStop{BelowPct: 100, Minutes: MaxMinutes}, nil, true},
		{models.IdleStop{BelowPct: 0, Minutes: 30}, nil, false},
		{models.IdleStop{BelowPct: 101, Minutes: 30}, nil, false},
		{models.IdleStop{BelowPct: 10, Minutes: MinMinutes - 1}, nil, false},
		{models.IdleStop{BelowPct: 10, Minutes: MaxMinutes + 1}, nil, false},
		{models.IdleStop{BelowPct: 10}, nil, false},
		{models.IdleStop{Minutes: 30}, nil, false},
		{models.IdleStop{BelowPct: 20, Minutes: 30}, lab, true},
		{models.IdleStop{BelowPct: 40, Minutes: 10}, lab, true},
		{models.IdleStop{BelowPct: 19, Minutes: 30}, lab, false},
		{models.IdleStop{BelowPct: 20, Minutes: 31}, lab, false},
		{models.IdleStop{BelowPct: 10, Minutes: 60}, team, true},
	} {
		err := Check(c.v, c.org)
		if c.ok != (err == nil) {
			t.Errorf("%+v under %+v: %v, want ok %v", c.v, c.org, err, c.ok)
		}
		if ae, isApp := apperr.As(err); err != nil && (!isApp || ae.Code != apperr.EINVALID || ae.Field != Field || ae.Key == "") {
			t.Errorf("%+v: %v, want invalid naming %s with a message key", c.v, err, Field)
		}
	}
}

// One GPU's idle run: the unbroken run of low samples that ends with the
// latest, broken by a high one or a gap; none when the latest is high or
// old.
func TestIdleSince(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	ss := func(pairs ...int) []models.GPUSample {
		var out []models.GPUSample
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, models.GPUSample{At: at(pairs[i]), UtilPct: pairs[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name      string
		samples   []models.GPUSample
		now       int
		start     int
		first, ok bool
	}{
		{"none", nil, 100, 0, false, false},
		{"all low", ss(0, 0, 30, 5, 60, 9), 70, 0, true, true},
		{"the latest high", ss(0, 0, 30, 10), 40, 0, false, false},
		{"a high one before", ss(0, 0, 30, 50, 60, 0, 90, 0), 100, 60, false, true},
		{"a gap before", ss(0, 0, 200, 0, 230, 0), 240, 200, false, true},
		{"a gap of exactly MaxSampleGap", ss(0, 0, 120, 0), 130, 0, true, true},
		{"readings stopped", ss(0, 0, 30, 0), 30 + 121, 0, false, false},
	} {
		start, first, ok := idleSince(c.samples, 10, at(c.now))
		if ok != c.ok || (ok && (!start.Equal(at(c.start)) || first != c.first)) {
			t.Errorf("%s: %s %v %v, want %s %v %v", c.name, start, first, ok, at(c.start), c.first, c.ok)
		}
	}
}

// The stop comes a window after the streak began, and never sooner than
// the warning's lead after the warning (or now, unwarned); a warning from
// before the streak is another streak's.
func TestStopsAt(t *testing.T) {
	since := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	st := Streak{Idle: true, Since: since}
	eff := models.IdleStop{BelowPct: 10, Minutes: 60}
	if lead := WarnLead(60); lead != 10*time.Minute || WarnLead(MinMinutes) != 150*time.Second {
		t.Fatalf("leads: %s, %s", lead, WarnLead(MinMinutes))
	}
	warned := since.Add(50 * time.Minute)
	for _, c := range []struct {
		name     string
		warnedAt *time.Time
		now      time.Time
		want     time.Time
	}{
		{"unwarned, early", nil, since.Add(5 * time.Minute), since.Add(time.Hour)},
		{"unwarned, past the window", nil, since.Add(90 * time.Minute), since.Add(100 * time.Minute)},
		{"warned on time", &warned, since.Add(55 * time.Minute), since.Add(time.Hour)},
		{"warned late", new(since.Add(58 * time.Minute)), since.Add(59 * time.Minute), since.Add(68 * time.Minute)},
		{"warned in another streak", new(since.Add(-time.Minute)), since.Add(55 * time.Minute), since.Add(65 * time.Minute)},
	} {
		if got := StopsAt(st, eff, c.warnedAt, c.now); !got.Equal(c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// A warning or a stop acts only on a rental as the watch listed it: its
// row, locked before any change, still running on demand with GPUs, with
// the same setting and last warning, and its lab (read in the same
// transaction) with the same policy. Anything else is errChanged, which
// rolls the warning or the stop back for the next pass to judge afresh.
func TestUnchanged(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		now := time.Now().UTC().Truncate(time.Second)
		policy := models.IdleStop{BelowPct: 30, Minutes: 20}
		lab := &models.Org{Kind: models.OrgLab, Name: "Vision Lab", Status: models.OrgApproved, IdlePolicy: policy, CreatedAt: now}
		if err := db.Tx(context.Background(), func(tx *gorm.DB) error { return models.InsertOrg(tx, lab) }); err != nil {
			t.Fatal(err)
		}
		own := models.IdleStop{BelowPct: 40, Minutes: 10}
		listed := rentalstore.IdleWatch{RentalID: 1, OrgID: lab.ID, OwnBelowPct: own.BelowPct, OwnMinutes: own.Minutes,
			PolicyBelowPct: policy.BelowPct, PolicyMinutes: policy.Minutes, WarnedAt: &now}
		rental := func() models.Rental {
			at := now
			return models.Rental{ID: 1, OrgID: lab.ID, Status: models.RentalRunning, Term: pricing.OnDemand, IdleStop: own, IdleWarnedAt: &at}
		}
		check := func(r models.Rental) error {
			t.Helper()
			return db.Tx(context.Background(), func(tx *gorm.DB) error { return unchanged(tx, &r, &listed) })
		}
		if err := check(rental()); err != nil {
			t.Fatalf("the rental as listed: %v", err)
		}
		later := now.Add(time.Minute)
		for name, change := range map[string]func(*models.Rental){
			"migrating":         func(r *models.Rental) { r.Status = models.RentalMigrating },
			"stopped":           func(r *models.Rental) { r.Status = models.RentalStopped },
			"a week's term":     func(r *models.Rental) { r.Term = pricing.Week },
			"no GPUs":           func(r *models.Rental) { r.NoGPU = true },
			"a new setting":     func(r *models.Rental) { r.IdleStop = models.IdleStop{BelowPct: 40, Minutes: 30} },
			"setting off":       func(r *models.Rental) { r.IdleStop = models.IdleStop{} },
			"warning forgotten": func(r *models.Rental) { r.IdleWarnedAt = nil },
			"warned again":      func(r *models.Rental) { r.IdleWarnedAt = &later },
		} {
			r := rental()
			change(&r)
			if err := check(r); !errors.Is(err, errChanged) {
				t.Errorf("%s: %v, want errChanged", name, err)
			}
		}
		// The lab's policy changes after the listing.
		if err := db.Tx(context.Background(), func(tx *gorm.DB) error {
			return models.SetOrgIdlePolicy(tx, lab.ID, models.IdleStop{BelowPct: 30, Minutes: 5})
		}); err != nil {
			t.Fatal(err)
		}
		if err := check(rental()); !errors.Is(err, errChanged) {
			t.Errorf("after the policy changed: %v, want errChanged", err)
		}
	})
}
