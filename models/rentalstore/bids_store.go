package rentalstore

import (
	"context"
	"time"

	"gorm.io/gorm"

	"suanli/bids"
	"suanli/locales"
	"suanli/models"
)

// nodeLockSpace sets the PostgreSQL advisory locks of nodes apart from
// any other advisory lock (the top bits of the key).
const nodeLockSpace = int64(0x53_4c_4e) << 40

// LockNodeGPUs serialises, in tx, the rents that take GPUs of one node,
// until tx ends: who gives way to whom is decided on what the last of
// them committed. On PostgreSQL an advisory lock (a row lock on the node
// would also hold up its heartbeats); SQLite serialises writers anyway.
func LockNodeGPUs(tx *gorm.DB, nodeID int64) error {
	if tx.Dialector.Name() != "postgres" {
		return nil
	}
	return tx.Exec(`SELECT pg_advisory_xact_lock(?)`, nodeLockSpace|nodeID).Error
}

// bidHolder is a row of NodeBidHolders.
type bidHolder struct {
	RentalID  int64
	Bid       int64
	GPUs      int `gorm:"column:gpus"`
	CreatedAt time.Time
}

// NodeBidHolders returns, in tx, the interruptible rentals that hold GPUs
// of the model on the node and may give way (pending, provisioning or
// running), with how many GPUs each holds there, as bids.Victims takes
// them.
func NodeBidHolders(tx *gorm.DB, nodeID int64, model string) ([]bids.Holder, error) {
	var rows []bidHolder
	err := tx.Raw(`SELECT r.id AS rental_id, r.bid_per_gpu_hour_fen AS bid, COUNT(*) AS gpus, r.created_at AS created_at
		FROM rentals r JOIN rental_gpus rg ON rg.rental_id = r.id AND rg.released_at IS NULL JOIN gpus g ON g.id = rg.gpu_id
		WHERE r.node_id = ? AND r.bid_per_gpu_hour_fen IS NOT NULL AND r.status IN ? AND rg.node_id = ? AND g.gpu_model = ?
		GROUP BY r.id, r.bid_per_gpu_hour_fen, r.created_at`,
		nodeID, []models.RentalStatus{models.RentalPending, models.RentalProvisioning, models.RentalRunning}, nodeID, model).Scan(&rows).Error
	hs := make([]bids.Holder, len(rows))
	for i, h := range rows {
		hs[i] = bids.Holder{RentalID: h.RentalID, Bid: &h.Bid, GPUs: h.GPUs, CreatedAt: h.CreatedAt}
	}
	return hs, err
}

// MarkInterrupted records in tx why and when an interruptible rental was
// interrupted and when its grace ends (its status moves with MoveRental).
func MarkInterrupted(tx *gorm.DB, id int64, at time.Time, reason string, msg locales.Msg, graceUntil time.Time) error {
	return tx.Model(&models.Rental{}).Where("id = ?", id).Updates(map[string]any{"interrupted_at": at, "interrupt_reason": reason,
		"interrupt_msg": msg, "grace_until": graceUntil, "updated_at": at}).Error
}

// SetBid writes in tx an interruptible rental's new bid, which is also
// the price it is billed at from now.
func SetBid(tx *gorm.DB, id, bid int64, now time.Time) error {
	return tx.Model(&models.Rental{}).Where("id = ? AND bid_per_gpu_hour_fen IS NOT NULL", id).Updates(map[string]any{"bid_per_gpu_hour_fen": bid,
		"price_per_gpu_hour_fen": bid, "updated_at": now}).Error
}

// GPUsInGrace reports whether the rental must wait for an interrupted
// container to end before its checks and launch: its own (a resume on
// the node, under the same container name) or one that held any of its
// GPUs, while that rental's stop task is not done and its grace (plus
// slack for the stop itself) has not passed by now.
func GPUsInGrace(ctx context.Context, db *models.DB, rentalID int64, slack time.Duration, now time.Time) (bool, error) {
	var n int64
	err := db.W.WithContext(ctx).Raw(`SELECT COUNT(*) FROM rentals r
		WHERE r.grace_until > ? AND (r.id = ? OR r.id IN (SELECT old.rental_id FROM rental_gpus mine
			JOIN rental_gpus old ON old.gpu_id = mine.gpu_id AND old.rental_id <> mine.rental_id AND old.released_at IS NOT NULL
			WHERE mine.rental_id = ? AND mine.released_at IS NULL))
		AND EXISTS (SELECT 1 FROM agent_tasks t WHERE t.rental_id = r.id AND t.kind = 'stop' AND t.status <> 'done')`,
		now.Add(-slack), rentalID, rentalID).Scan(&n).Error
	return n > 0, err
}

// LockRentals locks, in tx, the rentals' rows in id order (on
// PostgreSQL; SQLite serialises writers anyway).
func LockRentals(tx *gorm.DB, ids []int64) error {
	if tx.Dialector.Name() != "postgres" || len(ids) == 0 {
		return nil
	}
	var got []int64
	return tx.Raw(`SELECT id FROM rentals WHERE id IN ? ORDER BY id FOR UPDATE`, ids).Scan(&got).Error
}

// Interrupted is an interrupted rental waiting to resume.
type Interrupted struct {
	RentalID  int64
	OfferID   int64
	Bid       int64
	CreatedAt time.Time
}

// InterruptedRentals returns the interrupted rentals that have not been
// released, for the resume pass.
func InterruptedRentals(ctx context.Context, db *models.DB) ([]Interrupted, error) {
	var out []Interrupted
	err := db.W.WithContext(ctx).Raw(`SELECT id AS rental_id, offer_id, bid_per_gpu_hour_fen AS bid, created_at FROM rentals
		WHERE status = ? AND released_at IS NULL AND bid_per_gpu_hour_fen IS NOT NULL`, models.RentalInterrupted).Scan(&out).Error
	return out, err
}
