package accounts

import (
	"context"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/models/platform"
)

// Throttles on actions that mail someone or create an account, counted in
// the database so that every replica counts the same attempts. Only
// attempts that pass validation count: a typo costs nothing.
const (
	// SignupsPerAddress sign-ups (accepted, or answered as accepted for an
	// address that has an account) per client address per hour.
	SignupsPerAddress = 20
	// SignupsPerEmail sign-up answers mailed to one email per hour.
	SignupsPerEmail = 3
	// ResetsPerEmail password-reset requests for one email per hour, and
	// ResetsPerAddress from one client address.
	ResetsPerEmail   = 3
	ResetsPerAddress = 20
	// ResendsPerUser verification mails a user may ask for again per hour.
	ResendsPerUser = 3
	// InvitesPerUser invitations one user may send per hour, and
	// InvitesPerEmail invitations mailed to one address per hour (from any
	// organisation): an invitation mails a stranger.
	InvitesPerUser  = 30
	InvitesPerEmail = 3
	throttleWindow  = time.Hour
)

// Throttle kinds (platform.ThrottleEvent.Kind).
const (
	throttleSignupIP    = "signup_ip"
	throttleSignupEmail = "signup_email"
	throttleResetEmail  = "reset_email"
	throttleResetIP     = "reset_ip"
	throttleResendUser  = "resend_user"
	throttleInviteUser  = "invite_user"
	throttleInviteEmail = "invite_email"
)

// rate is one throttle: at most max attempts of kind for subject within
// the window.
type rate struct {
	kind, subject string
	max           int64
}

// checkRates refuses, with *Throttled, when any of the throttles has had
// its number of attempts within the hour; it says how long until the
// oldest attempt that blocks leaves the window. An empty subject (no
// client address known) is not counted. It reads outside a transaction,
// to refuse early; takeRates counts again where it counts.
func (s *Service) checkRates(ctx context.Context, now time.Time, rates ...rate) error {
	return checkRatesIn(s.DB.W.WithContext(ctx), now, rates...)
}

func checkRatesIn(tx *gorm.DB, now time.Time, rates ...rate) error {
	var wait time.Duration
	for _, r := range rates {
		if r.subject == "" {
			continue
		}
		n, oldest, err := platform.CountThrottleIn(tx, r.kind, r.subject, now.Add(-throttleWindow))
		if err != nil {
			return err
		}
		if n >= r.max {
			wait = max(wait, oldest.Add(throttleWindow).Sub(now), time.Second)
		}
	}
	if wait > 0 {
		return &Throttled{RetryAfter: wait, Key: "err.throttled_requests"}
	}
	return nil
}

// takeRates counts one attempt against each throttle in tx, or refuses it
// (*Throttled): the subjects are locked first (in one order, so that two
// attempts cannot wait on each other), so attempts sent at once are
// counted one after another and no more than the limit get through.
func takeRates(tx *gorm.DB, now time.Time, rates ...rate) error {
	keys := make([]rate, 0, len(rates))
	for _, r := range rates {
		if r.subject != "" {
			keys = append(keys, r)
		}
	}
	slices.SortFunc(keys, func(a, b rate) int { return strings.Compare(a.kind+":"+a.subject, b.kind+":"+b.subject) })
	for _, r := range keys {
		if err := platform.LockThrottle(tx, r.kind, r.subject); err != nil {
			return err
		}
	}
	if err := checkRatesIn(tx, now, keys...); err != nil {
		return err
	}
	for _, r := range keys {
		if err := platform.RecordThrottle(tx, r.kind, now, r.subject); err != nil {
			return err
		}
	}
	return nil
}
