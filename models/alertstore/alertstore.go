// Package alertstore holds the queries of spending alerts: an
// organisation's alert thresholds, the alerts already mailed (so that a
// pass mails each once), and the figures an alert is judged on that no
// other store reads (the rentals and volumes billed now, each member's
// charges). Use cases open the transaction and pass it in.
package alertstore

import (
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
)

// Settings is an organisation's alert thresholds (spend_alert_settings).
// An organisation without a row has the defaults.
type Settings struct {
	OrgID int64 `gorm:"primaryKey;autoIncrement:false"`
	// LimitPcts are the percentages of each spending limit at which an
	// alert is mailed, ascending and comma-separated ("": none).
	LimitPcts string
	// LowBalanceFen and RunwayHours are the wallet's alerts (nil: off).
	LowBalanceFen *int64
	RunwayHours   *int
	UpdatedBy     *int64
	UpdatedAt     time.Time
}

// TableName implements gorm's tabler.
func (Settings) TableName() string { return "spend_alert_settings" }

// Sent is one alert mailed (spend_alerts): see migration 00027.
type Sent struct {
	ID        int64
	OrgID     int64
	Kind      string
	UserID    int64
	Period    string
	Threshold int64
	LimitFen  int64
	UsedFen   int64
	CreatedAt time.Time
}

// TableName implements gorm's tabler.
func (Sent) TableName() string { return "spend_alerts" }

// SettingsOf returns an organisation's thresholds in tx, or nil when it
// never set any.
func SettingsOf(tx *gorm.DB, orgID int64) (*Settings, error) {
	var ss []Settings
	if err := tx.Where("org_id = ?", orgID).Limit(1).Find(&ss).Error; err != nil || len(ss) == 0 {
		return nil, err
	}
	return &ss[0], nil
}

// SaveSettings stores an organisation's thresholds in tx, replacing any.
func SaveSettings(tx *gorm.DB, s *Settings) error {
	return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "org_id"}}, UpdateAll: true}).Create(s).Error
}

// Record stores an alert in tx unless the same one (organisation, kind,
// member, period, threshold and limit) is stored already; it reports
// whether this call stored it. On PostgreSQL a concurrent insert of the
// same alert waits for the other transaction and then stores nothing.
func Record(tx *gorm.DB, a *Sent) (bool, error) {
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(a)
	return res.RowsAffected == 1, res.Error
}

// WalletAlerts returns an organisation's wallet alerts still standing
// (those with no period: low_balance and runway), in tx.
func WalletAlerts(tx *gorm.DB, orgID int64) ([]Sent, error) {
	var out []Sent
	err := tx.Where("org_id = ? AND period = ''", orgID).Order("id").Find(&out).Error
	return out, err
}

// Rearm deletes a wallet alert in tx, so that it is mailed again the
// next time its threshold is crossed.
func Rearm(tx *gorm.DB, id int64) error {
	return tx.Where("id = ? AND period = ''", id).Delete(&Sent{}).Error
}

// SentIn returns the alerts of an organisation stored for a period, in tx.
func SentIn(tx *gorm.DB, orgID int64, period string) ([]Sent, error) {
	var out []Sent
	err := tx.Where("org_id = ? AND period = ?", orgID, period).Order("id").Find(&out).Error
	return out, err
}

// OrgsToCheck returns, in id order, the organisations an alert pass
// looks at: those with a spending limit, wallet alerts set, or a wallet
// alert standing (to arm it again), whose spending or balance can have
// moved: something running, a volume kept, or a wallet entry since the
// time given.
func OrgsToCheck(tx *gorm.DB, since time.Time) ([]int64, error) {
	var ids []int64
	err := tx.Table("orgs o").
		Where(`o.monthly_budget_fen IS NOT NULL OR o.member_cap_fen IS NOT NULL OR o.hourly_cap_fen IS NOT NULL
			OR EXISTS (SELECT 1 FROM spend_alert_settings s WHERE s.org_id = o.id AND (s.low_balance_fen IS NOT NULL OR s.runway_hours IS NOT NULL))
			OR EXISTS (SELECT 1 FROM spend_alerts a WHERE a.org_id = o.id AND a.period = '')`).
		Where(`EXISTS (SELECT 1 FROM rentals r WHERE r.org_id = o.id AND r.status = ?)
			OR EXISTS (SELECT 1 FROM volumes v WHERE v.org_id = o.id AND v.status = ?)
			OR EXISTS (SELECT 1 FROM ledger_accounts la JOIN ledger_entries e ON e.account_id = la.id
				WHERE la.kind = ? AND la.org_id = o.id AND e.created_at >= ?
				AND e.id = (SELECT MAX(e2.id) FROM ledger_entries e2 WHERE e2.account_id = la.id))`,
			models.RentalRunning, models.VolumeActive, ledger.AccWallet, since).
		Order("o.id").Pluck("o.id", &ids).Error
	return ids, err
}

// BilledRentals returns an organisation's rentals billed by the second
// now (running, on demand or on a bid, not free), in tx.
func BilledRentals(tx *gorm.DB, orgID int64) ([]models.Rental, error) {
	var rs []models.Rental
	err := tx.Where("org_id = ? AND status = ? AND term = ? AND NOT free", orgID, models.RentalRunning, pricing.OnDemand).
		Order("id").Find(&rs).Error
	return rs, err
}

// ActiveVolumes returns an organisation's volumes that exist (billed as
// storage), in tx.
func ActiveVolumes(tx *gorm.DB, orgID int64) ([]models.Volume, error) {
	var vs []models.Volume
	err := tx.Where("org_id = ? AND status = ?", orgID, models.VolumeActive).Order("id").Find(&vs).Error
	return vs, err
}

// MemberSpend is what one member's transactions of a kind took from
// their organisation's wallet.
type MemberSpend struct {
	UserID int64
	Fen    int64
}

// MemberDebitsSince sums, by member (the transactions' CreatedBy), what
// ledger transactions of the kind took from an organisation's wallet
// since the time, in tx: ledger.WalletDebitsSince for every member at
// once. Members who spent nothing are absent.
func MemberDebitsSince(tx *gorm.DB, orgID int64, txnKind string, since time.Time) ([]MemberSpend, error) {
	var out []MemberSpend
	err := tx.Table("ledger_entries e").
		Joins("JOIN ledger_txns t ON t.id = e.txn_id").
		Joins("JOIN ledger_accounts a ON a.id = e.account_id").
		Where("a.kind = ? AND a.org_id = ? AND t.kind = ? AND t.created_at >= ? AND t.created_by IS NOT NULL", ledger.AccWallet, orgID, txnKind, since).
		Group("t.created_by").Order("t.created_by").
		Select("t.created_by AS user_id, COALESCE(SUM(-e.amount_fen), 0) AS fen").Scan(&out).Error
	return out, err
}

// Admins returns the users who administer an organisation (its owner and
// admins), in tx.
func Admins(tx *gorm.DB, orgID int64) ([]models.User, error) {
	var us []models.User
	err := tx.Table("users u").Select("u.*").Joins("JOIN memberships m ON m.user_id = u.id").
		Where("m.org_id = ? AND m.role IN ?", orgID, []string{models.RoleOwner, models.RoleAdmin}).Order("u.id").Find(&us).Error
	return us, err
}

// Users returns the users with the ids, by id, in tx.
func Users(tx *gorm.DB, ids []int64) (map[int64]models.User, error) {
	out := map[int64]models.User{}
	if len(ids) == 0 {
		return out, nil
	}
	var us []models.User
	if err := tx.Where("id IN ?", ids).Find(&us).Error; err != nil {
		return nil, err
	}
	for _, u := range us {
		out[u.ID] = u
	}
	return out, nil
}
