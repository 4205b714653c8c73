package rentalpages

import (
	"time"

	"suanli/views"
)

// IdleSetting is an idle-stop setting or policy: stop when every GPU
// stays below BelowPct % for Minutes minutes (zero: off, or no policy).
type IdleSetting struct {
	BelowPct, Minutes int
}

// On reports whether the setting stops anything.
func (s IdleSetting) On() bool { return s.Minutes > 0 }

// text says the setting ("below 10 % for 60 minutes", or "off").
func (s IdleSetting) text(vc views.Ctx) string {
	if !s.On() {
		return vc.T("idle.off")
	}
	return vc.T("idle.setting", s.BelowPct, s.Minutes)
}

// IdlePolicy is a lab's idle-stop policy on the rent form: the
// organisation that imposes it on the rentals it pays for.
type IdlePolicy struct {
	OrgName string
	Policy  IdleSetting
}

// IdleStopVM is the rental page's idle-stop section.
type IdleStopVM struct {
	RentalID int64
	// Own is the rental's own setting; Policy its lab's (zero: none);
	// Effective what the watch applies (the stricter of the two).
	Own, Policy, Effective IdleSetting
	// PolicyOrg names the lab whose policy it is.
	PolicyOrg string
	// Running: the watch looks at it now. IdleMinutes is how long every
	// GPU has been below the effective threshold, as measured (-1: not
	// idle, or the readings do not cover it yet); StopsAt when it stops
	// if they stay so.
	Running     bool
	IdleMinutes int
	StopsAt     *time.Time
	// Simulated: the node, and so the utilisation, is simulated.
	Simulated bool
	// CanChange: the viewer may change the setting (the renter or an
	// admin of the organisation, on a rental that may run again).
	CanChange bool
	// Form holds idle_stop (the checkbox), idle_stop_below_pct and
	// idle_stop_minutes; its "idle_stop" message is beside them.
	Form views.Form
	// MinMinutes and MaxMinutes bound the window.
	MinMinutes, MaxMinutes int
}

// idleFormOn reports whether a form's idle-stop checkbox is ticked.
func idleFormOn(f views.Form) bool { return f.Get("idle_stop") != "" }
