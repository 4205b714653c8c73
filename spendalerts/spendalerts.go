// Package spendalerts warns before spending limits bite and before the
// money runs out: alert thresholds on an organisation's spending limits
// (a lab's monthly budget and cap per member, the cap per hour) and on
// its wallet (a low balance, a short runway at the current rate), mailed
// once each by a periodic pass and shown on the console, and the
// wallet's runway ("lasts about N hours at the current rate") that the
// wallet and rental pages show.
//
// A limit's alerts are percentages of it (default 50, 80 and 100 %): each
// is mailed to the organisation's owner and admins (a member's cap: to
// the member too) once per period, the calendar month for the budget and
// the cap per member, the day for the cap per hour (Asia/Shanghai); a
// changed limit arms its thresholds again. A wallet alert is mailed once
// and armed again when the balance recovers (see Pass).
package spendalerts

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/billing"
	"suanli/models"
	"suanli/models/alertstore"
	"suanli/models/platform"
	"suanli/pricing"
)

// Service runs the alerts on DB. Accounts authorises changes to the
// settings; BaseURL makes the links in the mails.
type Service struct {
	DB       *models.DB
	Accounts *accounts.Service
	BaseURL  string
}

// Bounds of the settings.
const (
	// MaxLimitPcts is how many thresholds a limit may have.
	MaxLimitPcts = 5
	// MaxRunwayHours is the longest runway alert: 30 days.
	MaxRunwayHours = 720
)

// DefaultLimitPcts are a limit's thresholds until the admins set others.
var DefaultLimitPcts = []int{50, 80, 100}

// Settings are an organisation's alert thresholds.
type Settings struct {
	// LimitPcts are the percentages (1–100, ascending) of each spending
	// limit at which an alert is mailed; none: no limit alerts.
	LimitPcts []int
	// LowBalanceFen mails when the balance is below it (nil: off).
	LowBalanceFen *int64
	// RunwayHours mails when the balance lasts fewer hours at the current
	// rate (nil: off).
	RunwayHours *int
}

// Fields of the settings, as the API names them (the wallet page's form
// names the balance in yuan: low_balance).
const (
	FieldLimitPcts  = "limit_pcts"
	FieldLowBalance = "low_balance_fen"
	FieldRunway     = "runway_hours"
)

// ParsePcts reads thresholds as typed: whole percentages separated by
// commas or spaces (a trailing % allowed), e.g. "50, 80, 100"; empty is
// none. Bad input is EINVALID naming limit_pcts.
func ParsePcts(s string) ([]int, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == '，' || r == '、' || r == ';' || r == ' ' || r == '\t'
	})
	out := []int{}
	for _, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(f, "%"), "％")))
		if err != nil {
			return nil, pctsErr()
		}
		out = append(out, n)
	}
	return out, nil
}

func pctsErr() *apperr.Error {
	return apperr.Field(FieldLimitPcts, "err.alert_pcts", MaxLimitPcts)
}

// Check validates settings and returns them in their stored form (the
// thresholds sorted, each once). Bad values are apperr.Fields naming each
// field: thresholds 1–100 and at most MaxLimitPcts of them, a low balance
// above zero and at most billing.MaxTopupFen, a runway of 1 to
// MaxRunwayHours hours.
func Check(in Settings) (Settings, error) {
	var errs apperr.Fields
	pcts := slices.Clone(in.LimitPcts)
	slices.Sort(pcts)
	pcts = slices.Compact(pcts)
	if len(pcts) > MaxLimitPcts || (len(pcts) > 0 && (pcts[0] < 1 || pcts[len(pcts)-1] > 100)) {
		errs = append(errs, pctsErr())
	}
	if in.LowBalanceFen != nil && (*in.LowBalanceFen <= 0 || *in.LowBalanceFen > billing.MaxTopupFen) {
		errs = append(errs, apperr.Field(FieldLowBalance, "err.alert_low_balance", pricing.FenToYuanString(billing.MaxTopupFen)))
	}
	if in.RunwayHours != nil && (*in.RunwayHours < 1 || *in.RunwayHours > MaxRunwayHours) {
		errs = append(errs, apperr.Field(FieldRunway, "err.alert_runway", MaxRunwayHours))
	}
	if err := errs.OrNil(); err != nil {
		return in, err
	}
	if pcts == nil {
		pcts = []int{}
	}
	return Settings{LimitPcts: pcts, LowBalanceFen: in.LowBalanceFen, RunwayHours: in.RunwayHours}, nil
}

// settingsOf reads an organisation's settings in tx (the defaults when
// it never set any).
func settingsOf(tx *gorm.DB, orgID int64) (Settings, error) {
	rec, err := alertstore.SettingsOf(tx, orgID)
	if err != nil || rec == nil {
		return Settings{LimitPcts: slices.Clone(DefaultLimitPcts)}, err
	}
	s := Settings{LimitPcts: []int{}, LowBalanceFen: rec.LowBalanceFen, RunwayHours: rec.RunwayHours}
	for _, p := range strings.Split(rec.LimitPcts, ",") {
		if n, err := strconv.Atoi(p); err == nil {
			s.LimitPcts = append(s.LimitPcts, n)
		}
	}
	return s, nil
}

// Settings returns an organisation's alert settings (the defaults when
// its admins never set any).
func (s *Service) Settings(ctx context.Context, orgID int64) (Settings, error) {
	return settingsOf(s.DB.R.WithContext(ctx), orgID)
}

// SetSettings stores an organisation's alert settings, for those who may
// manage its billing (its owner and admins). Bad values are apperr.Fields
// (see Check), reported only to those allowed to set them.
func (s *Service) SetSettings(ctx context.Context, actor *models.User, orgID int64, in Settings) (Settings, error) {
	return s.UpdateSettings(ctx, actor, orgID, func(set *Settings) error {
		*set = in
		return nil
	})
}

// UpdateSettings changes an organisation's alert settings with change,
// which gets the settings stored now, read and written in one
// transaction with the organisation locked (two partial updates at once
// both count). An error from change or from Check stores nothing.
func (s *Service) UpdateSettings(ctx context.Context, actor *models.User, orgID int64, change func(*Settings) error) (Settings, error) {
	if _, _, err := s.Accounts.Authorize(ctx, actor, orgID, accounts.ManageBilling); err != nil {
		return Settings{}, err
	}
	var out Settings
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if _, err := platform.OrgForUpdate(tx, orgID); err != nil {
			return err
		}
		set, err := settingsOf(tx, orgID)
		if err != nil {
			return err
		}
		if err := change(&set); err != nil {
			return err
		}
		if out, err = Check(set); err != nil {
			return err
		}
		pcts := make([]string, len(out.LimitPcts))
		for i, p := range out.LimitPcts {
			pcts[i] = strconv.Itoa(p)
		}
		return alertstore.SaveSettings(tx, &alertstore.Settings{OrgID: orgID, LimitPcts: strings.Join(pcts, ","), LowBalanceFen: out.LowBalanceFen,
			RunwayHours: out.RunwayHours, UpdatedBy: &actor.ID, UpdatedAt: s.DB.Now().UTC()})
	})
	return out, err
}

// periods are the keys of the periods a limit's alerts are mailed once
// in: the month (Asia/Shanghai) for the budget and the cap per member,
// the day for the cap per hour (a cap per rolling hour is reached again
// every hour a steady workload runs: once a day says so without a mail
// an hour).
func periodOf(kind string, now time.Time) string {
	l := now.In(pricing.Shanghai)
	if kind == billing.LimitHourly {
		return l.Format("2006-01-02")
	}
	return l.Format("2006-01")
}
