package rentals_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/idlestop"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
	"suanli/rentals"
)

// The idle-stop watch on real simulated agents: the heartbeats store the
// GPUs' NVML telemetry as the go-nvml mocks report it (gpu.Sim's
// SetUtilization picks the load), the test clock moves a minute at a
// time, and each step runs one watch pass, as the periodic job would.

// idleWindow is the tests' idle-stop window: the shortest allowed, so its
// warning comes half-way (2.5 minutes before the stop).
const idleWindow = idlestop.MinMinutes

// idleRig is a rig with a simulated agent on the RTX offer's node (four
// GPUs) and the idle-stop service.
type idleRig struct {
	*rig
	node *simNode
	o    models.Offer
	idle *idlestop.Service
}

func newIdleRig(t *testing.T, db *models.DB) *idleRig {
	t.Helper()
	// The clock steps a minute at a time: no node is silent for that.
	r := newRig(t, db, rigOptions{SilentAfter: time.Hour})
	r.quiet()
	o := r.rtxOffer()
	node := r.startAgent(o.NodeID)
	r.waitReady(o.NodeID)
	return &idleRig{rig: r, node: node, o: o, idle: &idlestop.Service{Rentals: r.rentals, Accounts: r.accounts}}
}

// rentIdle rents n GPUs for org (m the renter's membership) through the
// idle-stop service, with the setting s, and waits until it runs.
func (r *idleRig) rentIdle(org *models.Org, m *models.Membership, n int, s models.IdleStop) *models.Rental {
	r.t.Helper()
	rt, err := r.idle.Rent(r.ctx, r.user, org, m, rentals.RentInput{OrgID: org.ID, OfferID: r.o.ID, GPUs: n, SLA: "standard",
		Term: pricing.OnDemand, SSHPublicKey: sshKey(r.t), IdleStop: s})
	if err != nil {
		r.t.Fatalf("rent: %v", err)
	}
	got := r.waitStatus(rt.ID, models.RentalRunning)
	return &got
}

// load makes every GPU the rental holds report pct % utilisation.
func (r *idleRig) load(rentalID int64, pct int) {
	r.t.Helper()
	for _, g := range r.heldGPUs(rentalID) {
		if err := r.node.Sim.SetUtilization(g.Idx, pct); err != nil {
			r.t.Fatal(err)
		}
	}
}

// stepEvery is how far the clock moves in a step: less than
// MaxSampleGap, so that the samples a step makes cover the time (the
// server asks agents for a heartbeat every 5 s, so each step takes
// that long).
const stepEvery = 90 * time.Second

// step moves the clock stepEvery, waits until every GPU the rentals hold
// has a telemetry sample from then, and runs one watch pass.
func (r *idleRig) step(rentalIDs ...int64) idlestop.WatchResult {
	r.t.Helper()
	at := r.clock.Advance(stepEvery)
	r.waitHeartbeat(r.o.NodeID, at)
	for _, id := range rentalIDs {
		for _, g := range r.heldGPUs(id) {
			r.eventually(fmt.Sprintf("a sample of GPU %s from %s", g.UUID, at), func() bool {
				var n int64
				r.db.R.Model(&models.GPUSample{}).Where("gpu_id = ? AND at >= ?", g.ID, at).Count(&n)
				return n > 0
			})
		}
	}
	res, err := r.idle.Watch(r.ctx)
	if err != nil {
		r.t.Fatalf("watch: %v", err)
	}
	return res
}

// mails are the renter's mails about a rental whose subject is the
// message key's, newest first.
func (r *idleRig) mails(rentalID int64, key string) []models.OutboxMail {
	r.t.Helper()
	all, err := r.db.Outbox(r.ctx, r.user.Email, 100)
	if err != nil {
		r.t.Fatal(err)
	}
	// The subject up to its second argument (a time, when it has one).
	prefix, _, _ := strings.Cut(locales.T(locales.ZH, key, rentalID, "\x00"), "\x00")
	var out []models.OutboxMail
	for _, m := range all {
		if strings.HasPrefix(m.Subject, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// events counts the rental's events of a kind.
func (r *idleRig) events(rentalID int64, kind string) int {
	r.t.Helper()
	es, err := r.db.RentalEvents(r.ctx, rentalID)
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// Idle stop fires on a rental whose simulated utilisation is 0 % and not
// on one at 80 %: the idle one's renter is warned once, half-way through
// the shortest window, and the rental stops a window after it started
// idling and no sooner than the warning's lead after the warning; the
// stop keeps the volume (stopped, not released, startable again) and
// is mailed with its reason. The busy one runs on, unwarned.
func TestIdleStopFiresOnIdleGPUsOnly(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newIdleRig(t, db)
		setting := models.IdleStop{BelowPct: 10, Minutes: idleWindow}
		idle := r.rentIdle(r.org, r.member, 2, setting)
		busy := r.rentIdle(r.org, r.member, 2, setting)
		r.load(idle.ID, 0)
		r.load(busy.ID, 80)
		// From here the clock moves only when a step moves it.
		r.clock.Freeze()

		// 1.5 minutes in: idle, but not yet for the window less the lead.
		if res := r.step(idle.ID, busy.ID); res.Watched != 2 || res.Warned != 0 || res.Stopped != 0 {
			t.Fatalf("early pass: %+v, want both watched and nothing done", res)
		}
		// 3 minutes: the idle one's renter is warned, once.
		if res := r.step(idle.ID, busy.ID); res.Warned != 1 || res.Stopped != 0 {
			t.Fatalf("pass at 3 minutes: %+v, want one warning", res)
		}
		warnings := r.mails(idle.ID, "idle.mail.warning.subject")
		if len(warnings) != 1 {
			t.Fatalf("%d warning mails, want 1", len(warnings))
		}
		for _, want := range []string{fmt.Sprintf("http://suanli.test/rentals/%d", idle.ID), locales.T(locales.ZH, "idle.mail.simulated_note")} {
			if !strings.Contains(warnings[0].Body, want) {
				t.Errorf("the warning does not say %q:\n%s", want, warnings[0].Body)
			}
		}
		// A simulated node's figures are not called measured.
		if measured := locales.T(locales.ZH, "idle.mail.measured_note"); strings.Contains(warnings[0].Body, measured) || strings.Contains(warnings[0].Body, "NVML") {
			t.Errorf("the warning of a simulated node says its utilisation is measured through NVML:\n%s", warnings[0].Body)
		}
		if got := r.rental(idle.ID); got.IdleWarnedAt == nil || r.events(idle.ID, "idle_warning") != 1 {
			t.Fatalf("warned at %v, %d warning events; timeline:%s", got.IdleWarnedAt, r.events(idle.ID, "idle_warning"), r.timeline(idle.ID))
		}
		// 4.5 minutes: still idle, warned already, not yet for the window.
		if res := r.step(idle.ID, busy.ID); res.Warned != 0 || res.Stopped != 0 {
			t.Fatalf("pass at 4.5 minutes: %+v, want nothing done", res)
		}
		// 6 minutes: idle for the window, warned 3 minutes ago: stopped.
		if res := r.step(idle.ID, busy.ID); res.Stopped != 1 || res.Warned != 0 {
			t.Fatalf("pass at 6 minutes: %+v, want one stop", res)
		}
		stopped := r.waitStatus(idle.ID, models.RentalStopped)
		if stopped.StopReason != idlestop.StopReason || stopped.ReleasedAt != nil {
			t.Errorf("stopped with reason %q, released %v; want the idle-stop reason, not released", stopped.StopReason, stopped.ReleasedAt)
		}
		if v := r.volume(*stopped.VolumeID); v.Status != models.VolumeActive || v.DeleteAfter == nil {
			t.Errorf("the volume is %s, deleted after %v: want kept until its deletion date", v.Status, v.DeleteAfter)
		}
		d, err := r.rentals.Detail(r.ctx, idle.ID)
		if err != nil || !d.Startable() {
			t.Errorf("the idle-stopped rental cannot start again: %v", err)
		}
		if r.events(idle.ID, "idle_stopped") != 1 || r.event(idle.ID, "stop_requested").Detail != idlestop.StopReason {
			t.Errorf("timeline:%s", r.timeline(idle.ID))
		}
		if e := r.event(idle.ID, "idle_stopped"); !strings.Contains(e.Detail, "below 10 % for 5 minutes (highest 0 %)") {
			t.Errorf("the stop's event says %q", e.Detail)
		}
		stops := r.mails(idle.ID, "idle.mail.stopped.subject")
		if len(stops) != 1 || stops[0].ID < warnings[0].ID {
			t.Fatalf("%d stop mails (ids %v, warning %d), want 1 after the warning", len(stops), stops, warnings[0].ID)
		}
		if !strings.Contains(stops[0].Body, "/workspace") || !strings.Contains(stops[0].Body, locales.T(locales.ZH, "idle.mail.simulated_note")) {
			t.Errorf("the stop mail does not say the files are kept on a simulated node:\n%s", stops[0].Body)
		}

		// The busy rental: running, never warned.
		if got := r.rental(busy.ID); got.Status != models.RentalRunning || got.IdleWarnedAt != nil ||
			len(r.mails(busy.ID, "idle.mail.warning.subject")) != 0 || r.events(busy.ID, "idle_warning") != 0 {
			t.Errorf("the rental at 80 %%: %s, warned at %v; timeline:%s", got.Status, got.IdleWarnedAt, r.timeline(busy.ID))
		}
		// Further passes stop nothing more and warn nobody.
		if res := r.step(busy.ID); res != (idlestop.WatchResult{Watched: 1}) {
			t.Errorf("a later pass: %+v", res)
		}
	})
}

// A setting changed while the rental runs applies from the next pass: a
// rental that has idled for longer than the new window is warned first
// (never stopped unwarned); turning it off after the warning keeps it
// running; a stricter setting again warns again; readings with a gap
// start the streak again; a busy GPU ends the streak.
func TestIdleStopChangedWhileRunning(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newIdleRig(t, db)
		rt := r.rentIdle(r.org, r.member, 1, models.IdleStop{})
		r.load(rt.ID, 0)
		r.clock.Freeze()
		for range 4 {
			if res := r.step(rt.ID); res != (idlestop.WatchResult{}) {
				t.Fatalf("a pass over a rental without idle stop: %+v", res)
			}
		}
		set := func(s models.IdleStop) {
			t.Helper()
			if _, err := r.idle.Set(r.ctx, r.user, r.member, rt.ID, s); err != nil {
				t.Fatalf("set %+v: %v", s, err)
			}
		}
		set(models.IdleStop{BelowPct: 5, Minutes: idleWindow})
		if got := r.rental(rt.ID); got.IdleStop != (models.IdleStop{BelowPct: 5, Minutes: idleWindow}) || r.events(rt.ID, "idle_stop_set") != 1 {
			t.Fatalf("the setting is %+v; timeline:%s", got.IdleStop, r.timeline(rt.ID))
		}
		if res := r.step(rt.ID); res.Warned != 1 || res.Stopped != 0 {
			t.Fatalf("the first pass after the change: %+v, want a warning, no stop", res)
		}
		// Off: it runs on past the warning's lead.
		set(models.IdleStop{})
		for range 2 {
			if res := r.step(rt.ID); res != (idlestop.WatchResult{}) {
				t.Fatalf("a pass with idle stop off: %+v", res)
			}
		}
		if got := r.rental(rt.ID); got.Status != models.RentalRunning || got.IdleWarnedAt != nil {
			t.Fatalf("after turning it off: %s, warned at %v", got.Status, got.IdleWarnedAt)
		}
		// On again: warned again (the change forgot the old warning).
		set(models.IdleStop{BelowPct: 5, Minutes: idleWindow})
		if res := r.step(rt.ID); res.Warned != 1 {
			t.Fatalf("the pass after turning it on again: %+v, want a warning", res)
		}
		// The node goes quiet for longer than MaxSampleGap: the streak
		// starts again after the gap, so no stop yet, and another warning
		// once the new streak is long enough.
		r.node.Pause()
		r.clock.Advance(idlestop.MaxSampleGap + time.Minute)
		r.node.Resume()
		if res := r.step(rt.ID); res.Stopped != 0 || res.Warned != 0 {
			t.Fatalf("the pass after a gap in the readings: %+v, want nothing", res)
		}
		// A busy minute ends the streak before its stop.
		r.load(rt.ID, 50)
		if res := r.step(rt.ID); res.Stopped != 0 || res.Warned != 0 {
			t.Fatalf("a pass with the GPU at 50 %%: %+v", res)
		}
		r.load(rt.ID, 0)
		for range 2 {
			if res := r.step(rt.ID); res.Stopped != 0 || res.Warned != 0 {
				t.Fatalf("a pass early in a new streak: %+v", res)
			}
		}
		if res := r.step(rt.ID); res.Warned != 1 || res.Stopped != 0 {
			t.Fatalf("the pass 3 minutes into the new streak: %+v, want its warning", res)
		}
		if got := r.rental(rt.ID); got.Status != models.RentalRunning || len(r.mails(rt.ID, "idle.mail.stopped.subject")) != 0 {
			t.Fatalf("the rental is %s; timeline:%s", got.Status, r.timeline(rt.ID))
		}
		if n := len(r.mails(rt.ID, "idle.mail.warning.subject")); n != 3 {
			t.Errorf("%d warnings, want 3 (one per streak and setting)", n)
		}

		// Bad settings change nothing.
		before := r.rental(rt.ID)
		for _, bad := range []models.IdleStop{{BelowPct: 0, Minutes: 30}, {BelowPct: 101, Minutes: 30}, {BelowPct: 10, Minutes: 4},
			{BelowPct: 10, Minutes: idlestop.MaxMinutes + 1}, {BelowPct: 10}} {
			if _, err := r.idle.Set(r.ctx, r.user, r.member, rt.ID, bad); apperr.Code(err) != apperr.EINVALID || !isIdleField(err) {
				t.Errorf("set %+v: %v, want invalid idle_stop", bad, err)
			}
		}
		if after := r.rental(rt.ID); after.IdleStop != before.IdleStop || r.events(rt.ID, "idle_stop_set") != 3 {
			t.Errorf("refused settings changed it: %+v → %+v; timeline:%s", before.IdleStop, after.IdleStop, r.timeline(rt.ID))
		}
	})
}

func isIdleField(err error) bool {
	ae, ok := apperr.As(err)
	return ok && ae.Field == idlestop.Field
}

// lab makes a funded lab whose member is the rig's renter (member) and
// whose owner is pi.
func (r *idleRig) lab() (lab *models.Org, member *models.Membership, pi *models.User) {
	r.t.Helper()
	pi, err := r.accounts.CreateUser(r.ctx, "pi@example.com", "pi-pass-2026-lab", "PI", false)
	if err != nil {
		r.t.Fatal(err)
	}
	now := r.clock.Now()
	lab = &models.Org{Kind: models.OrgLab, Name: "Vision Lab", Status: models.OrgApproved, Institution: "Peking University",
		Supervisor: "Prof. Zhang", EmailDomain: "pku.edu.cn", CreatedAt: now}
	member = &models.Membership{UserID: r.user.ID, Role: models.RoleMember, EduEmail: "renter@pku.edu.cn", ConfirmedAt: &now, CreatedAt: now}
	if err := r.db.Tx(r.ctx, func(tx *gorm.DB) error {
		if err := models.InsertOrg(tx, lab); err != nil {
			return err
		}
		member.OrgID = lab.ID
		if err := models.AddMember(tx, member); err != nil {
			return err
		}
		if err := models.AddMember(tx, &models.Membership{OrgID: lab.ID, UserID: pi.ID, Role: models.RoleOwner, CreatedAt: now}); err != nil {
			return err
		}
		return billing.CreditPromo(tx, lab.ID, 1_000_000, "promo_credit", "test funds", nil, nil, now)
	}); err != nil {
		r.t.Fatal(err)
	}
	return lab, member, pi
}

// A lab's policy holds its members' rentals to it: a rent or a change
// looser than the policy is refused and changes nothing; only the lab's
// admins set it; a rental whose own setting was looser (set before the
// policy) is stopped by the policy, here at 20 % utilisation, above its
// own 10 % threshold and below the policy's 30 %.
func TestIdleStopLabPolicyOverridesAMembersSetting(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newIdleRig(t, db)
		lab, member, pi := r.lab()
		looser := models.IdleStop{BelowPct: 10, Minutes: 60}
		rt := r.rentIdle(lab, member, 1, looser)
		r.load(rt.ID, 20)
		r.clock.Freeze()

		policy := models.IdleStop{BelowPct: 30, Minutes: idleWindow}
		if err := r.idle.SetLabPolicy(r.ctx, r.user, lab.ID, policy); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a member sets the lab's policy: %v, want forbidden", err)
		}
		if err := r.idle.SetLabPolicy(r.ctx, r.user, r.org.ID, policy); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a policy on a personal organisation: %v, want not found (labs only)", err)
		}
		if err := r.idle.SetLabPolicy(r.ctx, pi, lab.ID, models.IdleStop{BelowPct: 30, Minutes: 2}); apperr.Code(err) != apperr.EINVALID {
			t.Errorf("a 2-minute policy: %v, want invalid", err)
		}
		if err := r.idle.SetLabPolicy(r.ctx, pi, lab.ID, policy); err != nil {
			t.Fatalf("the lab's admin sets the policy: %v", err)
		}
		labNow, err := db.OrgByID(r.ctx, lab.ID)
		if err != nil || labNow.IdlePolicy != policy {
			t.Fatalf("the stored policy: %+v, %v", labNow.IdlePolicy, err)
		}

		// Looser than the policy: refused, nothing rented or changed.
		var rentals0 int64
		db.R.Model(&models.Rental{}).Where("org_id = ?", lab.ID).Count(&rentals0)
		for _, s := range []models.IdleStop{looser, {BelowPct: 50, Minutes: 60}, {BelowPct: 20, Minutes: idleWindow}} {
			_, err := r.idle.Rent(r.ctx, r.user, labNow, member, rentals.RentInput{OrgID: lab.ID, OfferID: r.o.ID, GPUs: 1, SLA: "standard",
				Term: pricing.OnDemand, SSHPublicKey: sshKey(t), IdleStop: s})
			if ae, ok := apperr.As(err); !ok || ae.Field != idlestop.Field || ae.Key != "idle.err.looser" {
				t.Errorf("rent with %+v under the policy: %v, want refused naming idle_stop", s, err)
			}
			if _, err := r.idle.Set(r.ctx, r.user, member, rt.ID, s); !isIdleField(err) {
				t.Errorf("change to %+v under the policy: %v, want refused naming idle_stop", s, err)
			}
		}
		var rentals1 int64
		db.R.Model(&models.Rental{}).Where("org_id = ?", lab.ID).Count(&rentals1)
		if rentals1 != rentals0 || r.rental(rt.ID).IdleStop != looser {
			t.Fatalf("refused requests changed something: %d → %d rentals, setting %+v", rentals0, rentals1, r.rental(rt.ID).IdleStop)
		}
		if got := idlestop.Effective(looser, idlestop.Policy(labNow)); got != policy {
			t.Fatalf("effective %+v, want the policy %+v", got, policy)
		}

		// The watch applies the policy: warned at 3 minutes, stopped at 6.
		warned, stopped := 0, 0
		for range 4 {
			res := r.step(rt.ID)
			warned, stopped = warned+res.Warned, stopped+res.Stopped
		}
		if warned != 1 || stopped != 1 {
			t.Fatalf("%d warnings and %d stops, want 1 and 1; timeline:%s", warned, stopped, r.timeline(rt.ID))
		}
		r.waitStatus(rt.ID, models.RentalStopped)
		stops := r.mails(rt.ID, "idle.mail.stopped.subject")
		if len(stops) != 1 || !strings.Contains(stops[0].Body, locales.T(locales.ZH, "idle.mail.lab_note")) ||
			!strings.Contains(stops[0].Body, "30%") {
			t.Errorf("the stop mail does not name the lab's policy: %+v", stops)
		}
	})
}

// A lab's policy that changes after a warning forgets it: the next pass
// warns again under the new policy, and the stop comes no sooner than the
// new warning's lead, not when the old warning would have allowed. Idle
// stop is for on-demand rentals: a week's refuses a setting, and renting
// one with it rents nothing.
func TestIdleStopLabPolicyChangeWarnsAgain(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newIdleRig(t, db)
		lab, member, pi := r.lab()
		if err := r.idle.SetLabPolicy(r.ctx, pi, lab.ID, models.IdleStop{BelowPct: 30, Minutes: 2 * idleWindow}); err != nil {
			t.Fatal(err)
		}
		rt := r.rentIdle(lab, member, 1, models.IdleStop{})
		r.load(rt.ID, 0)
		r.clock.Freeze()
		// A 10-minute window warns 5 minutes before: at 6 minutes.
		warned := 0
		for range 4 {
			res := r.step(rt.ID)
			if res.Stopped != 0 {
				t.Fatalf("a pass under the 10-minute policy stopped it: %+v", res)
			}
			warned += res.Warned
		}
		if warned != 1 {
			t.Fatalf("%d warnings in 6 minutes under the 10-minute policy, want 1; timeline:%s", warned, r.timeline(rt.ID))
		}
		// Shortened to 5 minutes: the rental has idled for longer, and its
		// warning promised a stop at 11 minutes.
		if err := r.idle.SetLabPolicy(r.ctx, pi, lab.ID, models.IdleStop{BelowPct: 30, Minutes: idleWindow}); err != nil {
			t.Fatal(err)
		}
		if got := r.rental(rt.ID); got.IdleWarnedAt != nil {
			t.Fatalf("the policy change kept the warning of %v", got.IdleWarnedAt)
		}
		// 7.5 minutes: warned again, stopping 2.5 minutes later at the soonest.
		if res := r.step(rt.ID); res.Warned != 1 || res.Stopped != 0 {
			t.Fatalf("the pass after the change: %+v, want a new warning", res)
		}
		// 9 minutes: 1.5 minutes after the new warning, not yet.
		if res := r.step(rt.ID); res.Warned != 0 || res.Stopped != 0 {
			t.Fatalf("the pass 1.5 minutes after the new warning: %+v, want nothing", res)
		}
		if res := r.step(rt.ID); res.Stopped != 1 {
			t.Fatalf("the pass 3 minutes after the new warning: %+v, want the stop", res)
		}
		r.waitStatus(rt.ID, models.RentalStopped)
		if n := len(r.mails(rt.ID, "idle.mail.warning.subject")); n != 2 {
			t.Errorf("%d warning mails, want 2 (one per policy)", n)
		}

		// A week is paid up front: no idle stop for it.
		var before int64
		db.R.Model(&models.Rental{}).Count(&before)
		_, err := r.idle.Rent(r.ctx, r.user, r.org, r.member, rentals.RentInput{OrgID: r.org.ID, OfferID: r.o.ID, GPUs: 1, SLA: "standard",
			Term: pricing.Week, SSHPublicKey: sshKey(t), IdleStop: models.IdleStop{BelowPct: 10, Minutes: 60}})
		if ae, ok := apperr.As(err); !ok || ae.Field != idlestop.Field || ae.Key != "idle.err.term" {
			t.Errorf("a week's rental with idle stop: %v, want refused naming idle_stop", err)
		}
		var after int64
		db.R.Model(&models.Rental{}).Count(&after)
		if after != before {
			t.Errorf("the refused rent made a rental: %d → %d", before, after)
		}
		week, err := r.idle.Rent(r.ctx, r.user, r.org, r.member, rentals.RentInput{OrgID: r.org.ID, OfferID: r.o.ID, GPUs: 1, SLA: "standard",
			Term: pricing.Week, SSHPublicKey: sshKey(t)})
		if err != nil {
			t.Fatalf("rent a week: %v", err)
		}
		if _, err := r.idle.Set(r.ctx, r.user, r.member, week.ID, models.IdleStop{BelowPct: 10, Minutes: 60}); !isIdleField(err) {
			t.Errorf("idle stop on a week's rental: %v, want refused naming idle_stop", err)
		}
		if got := r.rental(week.ID); got.IdleStop.On() {
			t.Errorf("the refused setting was stored: %+v", got.IdleStop)
		}
	})
}
