package idlestop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/locales"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/models/supply"
	"suanli/pricing"
)

// MaxSampleGap is the longest gap between two of a GPU's telemetry
// samples (the heartbeat stores one about every 30 s) that the watch
// still reads as one stretch: after a longer one (a node that went quiet,
// say) the idle streak starts again, so that missing readings are never
// taken for an idle GPU.
const MaxSampleGap = 2 * time.Minute

// MaxWarnLead is how long before an idle stop the renter is warned: ten
// minutes, or half the window when that is shorter. The stop never comes
// sooner than that after the warning.
const MaxWarnLead = 10 * time.Minute

// WarnLead is the warning's lead for a window of minutes.
func WarnLead(minutes int) time.Duration {
	return min(MaxWarnLead, time.Duration(minutes)*time.Minute/2)
}

// StopReason is the stop reason of a rental stopped for idling.
const StopReason = "idle stop: GPU utilisation stayed below the threshold"

// Streak is how a rental's GPUs have been used lately, as their samples
// show it.
type Streak struct {
	// Idle is true when every GPU the rental holds has samples up to now
	// (none older than MaxSampleGap at the end, no longer gap) and the
	// latest of each is below the threshold.
	Idle bool
	// Since is when the idle streak began: the earliest sample from which
	// every GPU stayed below the threshold without a gap, not before the
	// rental last started running (and that start itself when the
	// readings have been low since it, their first no later than
	// MaxSampleGap after it).
	Since time.Time
	// PeakPct is the highest utilisation of any GPU during the streak.
	PeakPct int
}

// For is how long the streak has lasted at now (0 when not idle).
func (st Streak) For(now time.Time) time.Duration {
	if !st.Idle {
		return 0
	}
	return max(now.Sub(st.Since), 0)
}

// StreakOf reads the idle streak of a running rental's GPUs at now under
// the effective setting eff: the samples of every GPU it holds, from a
// window plus a gap ago.
func (s *Service) StreakOf(ctx context.Context, rentalID int64, eff models.IdleStop, now time.Time) (Streak, error) {
	if !eff.On() {
		return Streak{}, nil
	}
	gpus, err := rentalstore.HeldGPUs(ctx, s.db(), rentalID)
	if err != nil || len(gpus) == 0 {
		return Streak{}, err
	}
	started, ran, err := rentalstore.RunStartedAt(ctx, s.db(), rentalID)
	if err != nil || !ran {
		return Streak{}, err
	}
	ids := make([]int64, 0, len(gpus))
	for _, g := range gpus {
		ids = append(ids, g.ID)
	}
	from := now.Add(-time.Duration(eff.Minutes)*time.Minute - MaxSampleGap)
	samples, err := supply.RentalGPUSamples(ctx, s.db(), rentalID, ids, from)
	if err != nil {
		return Streak{}, err
	}
	by := map[int64][]models.GPUSample{}
	for _, x := range samples {
		by[x.GPUID] = append(by[x.GPUID], x)
	}
	st := Streak{Idle: true, Since: started}
	for _, id := range ids {
		since, first, ok := idleSince(by[id], eff.BelowPct, now)
		if !ok {
			return Streak{}, nil
		}
		// The first reading comes up to a reading's cadence after the
		// start: a run whose readings all stayed low since it began
		// idled from then, as long as the wait was no longer gap than
		// MaxSampleGap (and the samples read go back that far).
		if first && !started.Before(from) && since.Sub(started) <= MaxSampleGap {
			since = started
		}
		if since.After(st.Since) {
			st.Since = since
		}
	}
	for _, x := range samples {
		if !x.At.Before(st.Since) {
			st.PeakPct = max(st.PeakPct, x.UtilPct)
		}
	}
	return st, nil
}

// idleSince is when one GPU's unbroken run of samples below belowPct that
// ends with its latest sample began (ss oldest first), and whether that
// run goes back to the first of ss; ok is false when the GPU is busy now
// or its readings stopped more than MaxSampleGap ago.
func idleSince(ss []models.GPUSample, belowPct int, now time.Time) (start time.Time, first, ok bool) {
	n := len(ss)
	if n == 0 || now.Sub(ss[n-1].At) > MaxSampleGap || ss[n-1].UtilPct >= belowPct {
		return time.Time{}, false, false
	}
	for i := n - 2; i >= 0; i-- {
		if ss[i+1].At.Sub(ss[i].At) > MaxSampleGap || ss[i].UtilPct >= belowPct {
			return ss[i+1].At, false, true
		}
	}
	return ss[0].At, true, true
}

// Warned reports whether a warning at warnedAt (nil: none) belongs to the
// streak: it was given since the streak began.
func (st Streak) Warned(warnedAt *time.Time) bool {
	return st.Idle && warnedAt != nil && !warnedAt.Before(st.Since)
}

// StopsAt is when the watch stops a rental whose GPUs stay idle, at now
// under eff, warned at warnedAt (nil: never): a window after the streak
// began, and never sooner than the warning's lead after its warning (or
// after now, when the streak has had none yet).
func StopsAt(st Streak, eff models.IdleStop, warnedAt *time.Time, now time.Time) time.Time {
	at := st.Since.Add(time.Duration(eff.Minutes) * time.Minute)
	from := now
	if st.Warned(warnedAt) {
		from = *warnedAt
	}
	if soonest := from.Add(WarnLead(eff.Minutes)); at.Before(soonest) {
		return soonest
	}
	return at
}

// WatchResult counts what one watch pass did.
type WatchResult struct {
	// Watched counts the running rentals an idle-stop setting applies to;
	// Warned those whose renters were warned; Stopped those stopped.
	Watched, Warned, Stopped int
}

// watchBatch is how many rentals one listing reads.
const watchBatch = 500

// Watch looks once at every running GPU rental an idle-stop setting
// applies to (its own or its lab's, Effective). When every GPU it holds
// has stayed below the threshold for the window less the warning's lead
// (WarnLead), its renter is mailed a warning, once per idle streak; when
// they have for the whole window, and the warning is at least the lead
// old, the rental is stopped (rentals.Service.Stop: billing ends, the
// volume is kept) and the renter is mailed why. Only measured samples
// count: a rental that has not run for the window, or whose readings
// have a gap, is not idle (MaxSampleGap). One rental's failure does not
// keep the others from being watched; the pass returns the failures.
func (s *Service) Watch(ctx context.Context) (WatchResult, error) {
	var res WatchResult
	var errs []error
	after := int64(0)
	for {
		ws, err := rentalstore.IdleWatchList(ctx, s.db(), after, watchBatch)
		if err != nil {
			return res, err
		}
		for i := range ws {
			if err := s.watchOne(ctx, &ws[i], &res); err != nil {
				slog.Error("idle watch", "rental", ws[i].RentalID, "err", err)
				errs = append(errs, fmt.Errorf("rental %d: %w", ws[i].RentalID, err))
			}
		}
		if len(ws) < watchBatch {
			return res, errors.Join(errs...)
		}
		after = ws[len(ws)-1].RentalID
	}
}

// watchOne warns or stops one rental, as Watch says.
func (s *Service) watchOne(ctx context.Context, w *rentalstore.IdleWatch, res *WatchResult) error {
	eff := Effective(w.Own(), w.Policy())
	if !eff.On() {
		return nil
	}
	res.Watched++
	now := s.db().Now().UTC()
	st, err := s.StreakOf(ctx, w.RentalID, eff, now)
	if err != nil {
		return err
	}
	window, lead := time.Duration(eff.Minutes)*time.Minute, WarnLead(eff.Minutes)
	idle := st.For(now)
	if !st.Idle || idle < window-lead {
		return nil
	}
	n := notice{eff: eff, lab: eff != w.Own(), simulated: w.Simulated, streak: st}
	if !st.Warned(w.WarnedAt) {
		n.stopsAt = StopsAt(st, eff, nil, now)
		warned, err := s.warn(ctx, w, n, now)
		if warned {
			res.Warned++
		}
		return err
	}
	if idle < window || now.Before(w.WarnedAt.Add(lead)) {
		return nil
	}
	stopped := false
	_, err = s.Rentals.Stop(ctx, w.RentalID, StopReason, func(tx *gorm.DB, r *models.Rental) error {
		if err := unchanged(tx, r, w); err != nil {
			return err
		}
		stopped = true
		return s.stopped(tx, r, n, now)
	})
	if errors.Is(err, errChanged) {
		return nil
	}
	if err != nil {
		return err
	}
	if stopped {
		res.Stopped++
		slog.Info("rental stopped for idling", "rental", w.RentalID, "below_pct", eff.BelowPct, "minutes", eff.Minutes,
			"idle_since", st.Since, "peak_pct", st.PeakPct, "lab_policy", n.lab, "simulated", w.Simulated)
	}
	return nil
}

// errChanged rolls back a warning or a stop whose rental changed after
// the watch listed it; the next pass judges it afresh.
var errChanged = errors.New("idle stop: the rental changed since the watch read it")

// unchanged checks in tx that r, the rental's row locked there before any
// change, is as the watch listed it in w: running on demand with GPUs,
// with the same setting, the same last warning and its lab's same policy.
// So a stop or a warning never follows a setting or a policy that changed
// meanwhile (a policy change forgets the warnings, ForgetOrgIdleWarnings),
// nor stops a rental that began migrating: errChanged otherwise.
func unchanged(tx *gorm.DB, r *models.Rental, w *rentalstore.IdleWatch) error {
	if r.Status != models.RentalRunning || !Applies(r.Term) || r.NoGPU || r.IdleStop != w.Own() || !sameTime(r.IdleWarnedAt, w.WarnedAt) {
		return errChanged
	}
	org, err := models.OrgByIDIn(tx, r.OrgID)
	if err != nil {
		return err
	}
	if Policy(org) != w.Policy() {
		return errChanged
	}
	return nil
}

// sameTime reports whether a and b are both unset or the same instant.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// notice is what a warning or a stop says.
type notice struct {
	eff models.IdleStop
	// lab: the lab's policy set (part of) eff.
	lab, simulated bool
	streak         Streak
	stopsAt        time.Time
}

// warn mails the renter of w's rental that it will stop at n.stopsAt
// unless its GPUs are used, and puts it on the timeline: once per idle
// streak (a warning recorded since the streak began wins), and only while
// it is as the watch listed it (unchanged).
func (s *Service) warn(ctx context.Context, w *rentalstore.IdleWatch, n notice, now time.Time) (bool, error) {
	rentalID := w.RentalID
	warned := false
	err := s.db().Tx(ctx, func(tx *gorm.DB) error {
		r, err := models.RentalForUpdate(tx, rentalID)
		if err != nil {
			return err
		}
		if err := unchanged(tx, &r, w); err != nil {
			return err
		}
		if warned, err = rentalstore.MarkIdleWarned(tx, rentalID, n.streak.Since, now); err != nil || !warned {
			return err
		}
		u, err := models.UserByIDIn(tx, r.UserID)
		if err != nil {
			return err
		}
		idleMin := int(now.Sub(n.streak.Since) / time.Minute)
		at := n.stopsAt.In(pricing.Shanghai).Format("15:04")
		if err := models.AddRentalEvent(tx, rentalID, now, "idle_warning",
			fmt.Sprintf("every GPU below %d %% for %d minutes; stops at %s (UTC+8) unless used", n.eff.BelowPct, idleMin, at), nil,
			locales.M("idle.event.warning", n.eff.BelowPct, idleMin, at)); err != nil {
			return err
		}
		return models.EnqueueMail(tx, s.warningMail(u, &r, n, idleMin, now))
	})
	if errors.Is(err, errChanged) {
		return false, nil
	}
	if warned && err == nil {
		slog.Info("idle stop warning mailed", "rental", rentalID, "stops_at", n.stopsAt, "below_pct", n.eff.BelowPct, "minutes", n.eff.Minutes)
	}
	return warned && err == nil, err
}

// stopped records in the stop's transaction why the rental stopped, on
// its timeline and in a mail to its renter.
func (s *Service) stopped(tx *gorm.DB, r *models.Rental, n notice, now time.Time) error {
	u, err := models.UserByIDIn(tx, r.UserID)
	if err != nil {
		return err
	}
	if err := models.AddRentalEvent(tx, r.ID, now, "idle_stopped",
		fmt.Sprintf("every GPU below %d %% for %d minutes (highest %d %%)", n.eff.BelowPct, n.eff.Minutes, n.streak.PeakPct), nil,
		locales.M("idle.event.stopped", n.eff.BelowPct, n.eff.Minutes, n.streak.PeakPct)); err != nil {
		return err
	}
	return models.EnqueueMail(tx, s.stoppedMail(u, r, n, now))
}
