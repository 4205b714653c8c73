package spendalerts

import (
	"cmp"
	"context"
	"time"

	"gorm.io/gorm"

	"suanli/billing"
	"suanli/models"
	"suanli/models/alertstore"
	"suanli/models/ledger"
	"suanli/pricing"
)

// Runway is what an organisation's wallet pays for now and how long its
// balance lasts at that rate.
type Runway struct {
	OrgID      int64
	BalanceFen int64
	// RentalsFenPerHour is what its Rentals billed by the second (running,
	// on demand or on a bid, not free) cost over the coming hour at their
	// prices (off-peak, student and SLA included); StorageFenPerHour what
	// an hour of its Volumes costs.
	RentalsFenPerHour int64
	Rentals           int
	StorageFenPerHour int64
	Volumes           int
	At                time.Time
}

// FenPerHour is the current rate: rentals and storage.
func (r Runway) FenPerHour() int64 { return r.RentalsFenPerHour + r.StorageFenPerHour }

// Draws reports whether anything draws on the balance now.
func (r Runway) Draws() bool { return r.FenPerHour() > 0 }

// Seconds is how long the balance lasts at the current rate (0 when
// nothing draws on it: see Draws).
func (r Runway) Seconds() int64 {
	if !r.Draws() || r.BalanceFen <= 0 {
		return 0
	}
	return r.BalanceFen * 3600 / r.FenPerHour()
}

// Below reports whether the balance lasts less than hours at the
// current rate (never when nothing draws on it).
func (r Runway) Below(hours int) bool {
	return r.Draws() && r.BalanceFen < r.FenPerHour()*int64(hours)
}

// runwayOf reads an organisation's runway in tx.
func runwayOf(tx *gorm.DB, orgID int64, now time.Time) (Runway, error) {
	rw := Runway{OrgID: orgID, At: now}
	var err error
	if rw.BalanceFen, err = ledger.OrgWalletBalance(tx, orgID); err != nil {
		return rw, err
	}
	rs, err := alertstore.BilledRentals(tx, orgID)
	if err != nil {
		return rw, err
	}
	for i := range rs {
		rw.RentalsFenPerHour += pricing.HourFen(rs[i].Rate(), now)
	}
	rw.Rentals = len(rs)
	vs, err := alertstore.ActiveVolumes(tx, orgID)
	if err != nil {
		return rw, err
	}
	for _, v := range vs {
		rw.StorageFenPerHour += pricing.StorageFen(v.SizeGB, v.PricePerGBMonthFen, 3600)
	}
	rw.Volumes = len(vs)
	return rw, nil
}

// Runway returns an organisation's runway now.
func (s *Service) Runway(ctx context.Context, orgID int64) (Runway, error) {
	return runwayOf(s.DB.R.WithContext(ctx), orgID, s.DB.Now().UTC())
}

// Alert is a threshold crossed now.
type Alert struct {
	OrgID int64
	// Kind is a limit (billing.LimitBudget, LimitMemberCap, LimitHourly)
	// or a wallet alert (KindLowBalance, KindRunway).
	Kind string
	// UserID is the member, for a cap per member, and UserName their
	// name (filled in by Alerts).
	UserID   int64
	UserName string
	// Threshold is the highest one crossed: a percentage of LimitFen for
	// a limit, fen for a low balance, hours for a runway.
	Threshold int64
	// LimitFen and UsedFen are the limit and its use; for a wallet alert
	// UsedFen is the balance.
	LimitFen, UsedFen int64
	// Runway is the wallet's, for a wallet alert.
	Runway Runway
}

// Pct is how much of its limit is used, in whole percent (rounded down).
func (a Alert) Pct() int64 {
	if a.LimitFen <= 0 {
		return 0
	}
	return a.UsedFen * 100 / a.LimitFen
}

// The wallet's alerts.
const (
	KindLowBalance = "low_balance"
	KindRunway     = "runway"
)

// state is an organisation's spending as the alerts judge it now.
type state struct {
	org      *models.Org
	settings Settings
	limits   []billing.LimitUse
	members  []alertstore.MemberSpend
	runway   Runway
	now      time.Time
}

// stateOf reads an organisation's state in tx.
func stateOf(tx *gorm.DB, org *models.Org, now time.Time) (state, error) {
	st := state{org: org, now: now}
	var err error
	if st.settings, err = settingsOf(tx, org.ID); err != nil {
		return st, err
	}
	if st.limits, err = billing.OrgLimitUses(tx, org, now); err != nil {
		return st, err
	}
	if org.MemberCapFen != nil {
		if st.members, err = alertstore.MemberDebitsSince(tx, org.ID, billing.ChargeKind, billing.MonthStart(now)); err != nil {
			return st, err
		}
	}
	st.runway, err = runwayOf(tx, org.ID, now)
	return st, err
}

// crossed returns the thresholds a use of a limit has reached, ascending.
func crossed(pcts []int, limit, used int64) []int64 {
	var out []int64
	for _, p := range pcts {
		if limit > 0 && used*100 >= int64(p)*limit {
			out = append(out, int64(p))
		}
	}
	return out
}

// uses are the limits' uses: the organisation's, then each member's.
func (st state) uses() []Alert {
	var out []Alert
	for _, l := range st.limits {
		out = append(out, Alert{OrgID: st.org.ID, Kind: l.Kind, LimitFen: l.LimitFen, UsedFen: l.UsedFen})
	}
	if st.org.MemberCapFen != nil {
		for _, m := range st.members {
			out = append(out, Alert{OrgID: st.org.ID, Kind: billing.LimitMemberCap, UserID: m.UserID, LimitFen: *st.org.MemberCapFen, UsedFen: m.Fen})
		}
	}
	return out
}

// alerts are the thresholds crossed now: the highest of each limit (and
// member), then the wallet's.
func (st state) alerts() []Alert {
	var out []Alert
	for _, u := range st.uses() {
		if c := crossed(st.settings.LimitPcts, u.LimitFen, u.UsedFen); len(c) > 0 {
			u.Threshold = c[len(c)-1]
			out = append(out, u)
		}
	}
	rw := st.runway
	if lb := st.settings.LowBalanceFen; lb != nil && rw.BalanceFen < *lb {
		out = append(out, Alert{OrgID: st.org.ID, Kind: KindLowBalance, Threshold: *lb, UsedFen: rw.BalanceFen, Runway: rw})
	}
	if h := st.settings.RunwayHours; h != nil && rw.Below(*h) {
		out = append(out, Alert{OrgID: st.org.ID, Kind: KindRunway, Threshold: int64(*h), UsedFen: rw.BalanceFen, Runway: rw})
	}
	return out
}

// Alerts returns the thresholds an organisation has crossed now, as a
// member sees them: the organisation's alerts, and the caps per member —
// every member's for its owner and admins (and for a platform admin
// looking in, m nil), else only the member's own.
func (s *Service) Alerts(ctx context.Context, org *models.Org, m *models.Membership) ([]Alert, error) {
	st, err := stateOf(s.DB.R.WithContext(ctx), org, s.DB.Now().UTC())
	if err != nil {
		return nil, err
	}
	all := st.alerts()
	out := all[:0]
	var ids []int64
	for _, a := range all {
		if a.Kind == billing.LimitMemberCap {
			if m != nil && models.RoleRank(m.Role) < models.RoleRank(models.RoleAdmin) && a.UserID != m.UserID {
				continue
			}
			ids = append(ids, a.UserID)
		}
		out = append(out, a)
	}
	names, err := alertstore.Users(s.DB.R.WithContext(ctx), ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if u, ok := names[out[i].UserID]; ok {
			out[i].UserName = cmp.Or(u.Name, u.Email)
		}
	}
	return out, nil
}
