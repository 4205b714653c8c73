package rentalstore

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/models"
	"suanli/models/ledger"
)

// InsertSLACredit records a rental's computation for a period in tx,
// unless one is recorded already (UNIQUE(rental_id, period)); it reports
// whether this call recorded it. On PostgreSQL a concurrent insert of the
// same period waits for the other transaction and then records nothing.
func InsertSLACredit(tx *gorm.DB, c *models.SLACredit) (bool, error) {
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "rental_id"}, {Name: "period"}}, DoNothing: true}).Create(c)
	return res.RowsAffected == 1, res.Error
}

// SetSLACreditTxn links a recorded computation to the ledger transaction
// that paid its credit, in tx.
func SetSLACreditTxn(tx *gorm.DB, id, txnID int64) error {
	return tx.Model(&models.SLACredit{}).Where("id = ?", id).Update("txn_id", txnID).Error
}

// SLAPeriodsOfRental returns the periods already computed for a rental, in tx.
func SLAPeriodsOfRental(tx *gorm.DB, rentalID int64) (map[string]bool, error) {
	var ps []string
	if err := tx.Model(&models.SLACredit{}).Where("rental_id = ?", rentalID).Pluck("period", &ps).Error; err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ps))
	for _, p := range ps {
		out[p] = true
	}
	return out, nil
}

// SLACreditsOfRental returns a rental's SLA computations, oldest period first.
func SLACreditsOfRental(ctx context.Context, db *models.DB, rentalID int64) ([]models.SLACredit, error) {
	var cs []models.SLACredit
	err := db.R.WithContext(ctx).Where("rental_id = ?", rentalID).Order("period").Find(&cs).Error
	return cs, err
}

// shanghaiMonth is the SQL for the "YYYY-MM" month (Asia/Shanghai, UTC+8
// all year) of a timestamp column, on either database.
func shanghaiMonth(db *models.DB, col string) string {
	if db.Dialect == "postgres" {
		return "to_char(" + col + " AT TIME ZONE 'Asia/Shanghai', 'YYYY-MM')"
	}
	return "strftime('%Y-%m', " + col + ", '+8 hours')"
}

// SLADue returns the rentals whose SLA computation is due, by id: rentals
// that ended (stopped or failed) after running, without a computation for
// the month they ended in; and live rentals that ran before monthStart
// (the current month's start) without one for prevMonth. Free rentals
// are never due.
func SLADue(ctx context.Context, db *models.DB, monthStart time.Time, prevMonth string) ([]int64, error) {
	var ids []int64
	err := db.W.WithContext(ctx).Raw(`SELECT r.id FROM rentals r
		WHERE r.running_since IS NOT NULL AND NOT r.free AND (
			(r.status IN ('stopped', 'failed') AND r.stopped_at IS NOT NULL AND NOT EXISTS (
				SELECT 1 FROM sla_credits c WHERE c.rental_id = r.id AND c.period = `+shanghaiMonth(db, "r.stopped_at")+`))
			OR (r.status NOT IN ('stopped', 'failed') AND r.running_since < ? AND NOT EXISTS (
				SELECT 1 FROM sla_credits c WHERE c.rental_id = r.id AND c.period = ?)))
		ORDER BY r.id`, monthStart, prevMonth).Scan(&ids).Error
	return ids, err
}

// RentalCharge is one charge of a rental as its wallet paid it.
type RentalCharge struct {
	// AmountFen is what the wallet paid (positive).
	AmountFen int64
	// IdemKey is the charge's once-only key ("term/r…" for term payments).
	IdemKey *string
	At      time.Time
}

// RentalCharges returns what a rental's wallet paid in charges, oldest
// first, in tx.
func RentalCharges(tx *gorm.DB, rentalID int64) ([]RentalCharge, error) {
	var cs []RentalCharge
	err := tx.Raw(`SELECT -e.amount_fen AS amount_fen, t.idem_key AS idem_key, t.created_at AS at
		FROM ledger_txns t JOIN ledger_entries e ON e.txn_id = t.id JOIN ledger_accounts a ON a.id = e.account_id
		WHERE t.rental_id = ? AND t.kind = 'charge' AND a.kind = ? ORDER BY t.id`, rentalID, ledger.AccWallet).Scan(&cs).Error
	return cs, err
}

// RentalEventsTx returns a rental's timeline, oldest first, in tx.
func RentalEventsTx(tx *gorm.DB, rentalID int64) ([]models.RentalEvent, error) {
	var es []models.RentalEvent
	err := tx.Where("rental_id = ?", rentalID).Order("id").Find(&es).Error
	return es, err
}

// NodeForUptime is what the reliability pass needs of a node.
type NodeForUptime struct {
	ID           int64
	DatacenterID int64
	CreatedAt    time.Time
	GPUs         int      `gorm:"column:gpus"`
	Uptime30dPct *float64 `gorm:"column:uptime_30d_pct"`
}

// NodesForUptime returns the nodes that have sent a heartbeat and are not
// removed, with their GPU counts.
func NodesForUptime(ctx context.Context, db *models.DB) ([]NodeForUptime, error) {
	var ns []NodeForUptime
	err := db.W.WithContext(ctx).Raw(`SELECT n.id, n.datacenter_id, n.created_at, n.uptime_30d_pct,
			(SELECT COUNT(*) FROM gpus g WHERE g.node_id = n.id) AS gpus
		FROM nodes n WHERE n.last_heartbeat_at IS NOT NULL AND n.status <> ? ORDER BY n.id`, models.NodeRemoved).Scan(&ns).Error
	return ns, err
}

// IncidentsOverlapping returns the incidents open at some time in
// [from, to) (closed ones that closed after from, open ones opened before to).
func IncidentsOverlapping(ctx context.Context, db *models.DB, from, to time.Time) ([]models.Incident, error) {
	var is []models.Incident
	err := db.W.WithContext(ctx).Where("opened_at < ? AND (closed_at IS NULL OR closed_at > ?)", to, from).Order("id").Find(&is).Error
	return is, err
}

// NodeUptime is a node's new 30-day uptime.
type NodeUptime struct {
	NodeID int64
	Pct    float64
}

// SetNodeUptimes stores nodes' 30-day uptimes at now in one transaction,
// and logs the nodes whose figure changed (changed) for the offer index.
func SetNodeUptimes(ctx context.Context, db *models.DB, ups []NodeUptime, now time.Time, changed []int64) error {
	return db.Tx(ctx, func(tx *gorm.DB) error {
		for _, u := range ups {
			if err := tx.Model(&models.Node{}).Where("id = ?", u.NodeID).
				Updates(map[string]any{"uptime_30d_pct": u.Pct, "uptime_updated_at": now}).Error; err != nil {
				return err
			}
		}
		if len(changed) > 0 {
			return models.OffersChanged(tx, models.OfferScope{Nodes: changed})
		}
		return nil
	})
}

// DatacenterNodeUptime is one node's stored uptime in a datacentre.
type DatacenterNodeUptime struct {
	NodeID          int64
	GPUs            int     `gorm:"column:gpus"`
	Uptime30dPct    float64 `gorm:"column:uptime_30d_pct"`
	UptimeUpdatedAt time.Time
}

// DatacenterNodeUptimes returns the stored 30-day uptimes of a
// datacentre's nodes that have one, with their GPU counts; a removed node
// no longer counts.
func DatacenterNodeUptimes(ctx context.Context, db *models.DB, datacenterID int64) ([]DatacenterNodeUptime, error) {
	var out []DatacenterNodeUptime
	err := db.R.WithContext(ctx).Raw(`SELECT n.id AS node_id, n.uptime_30d_pct, n.uptime_updated_at,
			(SELECT COUNT(*) FROM gpus g WHERE g.node_id = n.id) AS gpus
		FROM nodes n WHERE n.datacenter_id = ? AND n.uptime_30d_pct IS NOT NULL AND n.status <> ? ORDER BY n.id`, datacenterID, models.NodeRemoved).Scan(&out).Error
	return out, err
}
