// Package orderstore holds the records and queries of standing orders
// (「有卡就租」, migration 00026): orders that rent (or announce) GPUs
// matching their filters as soon as such GPUs are free. Package
// standingorders owns the rules; this package only reads and writes.
package orderstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/locales"
	"suanli/models"
)

// Status is where a standing order is: open until it is filled, fails or
// expires (each final). A cancelled order is deleted, so it has no status.
type Status string

// The statuses of a standing order.
const (
	// Open: waiting for matching free GPUs.
	Open Status = "open"
	// Filled: it rented its rental (action rent) or told its owner
	// (action notify).
	Filled Status = "filled"
	// Expired: its expiry came first.
	Expired Status = "expired"
	// Failed: matching GPUs were free but the rent was refused (the
	// balance, a spending limit…): the failure says why; nothing was rented.
	Failed Status = "failed"
)

// Statuses are every status, in the order of an order's life.
var Statuses = []Status{Open, Filled, Expired, Failed}

// Final reports whether the order is over.
func (s Status) Final() bool { return s != Open }

// Actions of a standing order.
const (
	// ActionRent rents the matching GPUs.
	ActionRent = "rent"
	// ActionNotify only tells the owner (mail and console) that they are free.
	ActionNotify = "notify"
)

// Order is a standing order as stored.
type Order struct {
	ID     int64
	OrgID  int64
	UserID int64
	// The filters: GPUModel a catalogue slug; City "" any; FromCity and
	// MaxLatencyMS (0: none) the published latency from a city.
	GPUModel     string `gorm:"column:gpu_model"`
	City         string
	FromCity     string
	MaxLatencyMS int `gorm:"column:max_latency_ms"`
	// MaxPriceFen is an on-demand order's most per GPU-hour (the student
	// price when Student); BidPerGPUHourFen an interruptible order's bid.
	// Exactly one is set.
	MaxPriceFen      *int64 `gorm:"column:max_price_fen"`
	BidPerGPUHourFen *int64 `gorm:"column:bid_per_gpu_hour_fen"`
	// Student is set when its organisation pays student prices (when it
	// was placed): MaxPriceFen is compared with offers' student prices.
	Student bool
	GPUs    int `gorm:"column:gpus"`
	Action  string
	// What its rent takes.
	SLA          string `gorm:"column:sla"`
	Image        string
	VolumeID     *int64
	VolumeGB     int    `gorm:"column:volume_gb"`
	SSHPublicKey string `gorm:"column:ssh_public_key"`
	// DatacenterID and NodeID are where its volume is: only offers there
	// can mount it (NodeID for a volume on a node's local disk).
	DatacenterID *int64
	NodeID       *int64
	Status       Status
	// RentalID is what it rented; OfferID the offer it matched (filled or
	// failed).
	RentalID *int64
	OfferID  *int64
	// FailureCode is the refusal's error code (apperr), Failure its
	// English text, FailureMsg the message pages show in their language.
	FailureCode string
	Failure     string
	FailureMsg  locales.Msg `gorm:"column:failure_msg"`
	ExpiresAt   time.Time
	CreatedAt   time.Time
	EndedAt     *time.Time
}

// TableName is the standing orders' table.
func (Order) TableName() string { return "standing_orders" }

// Interruptible reports whether the order rents on a bid.
func (o *Order) Interruptible() bool { return o.BidPerGPUHourFen != nil }

// versionName is the market_versions row of the open orders.
const versionName = "standing_orders"

// Version is the counter that moves with every change to the open orders:
// the pass keeps them in memory until it moves.
func Version(ctx context.Context, db *models.DB) (int64, error) {
	var v int64
	err := db.W.WithContext(ctx).Raw(`SELECT version FROM market_versions WHERE name = ?`, versionName).Scan(&v).Error
	return v, err
}

// bump moves the version in tx.
func bump(tx *gorm.DB) error {
	return tx.Exec(`UPDATE market_versions SET version = version + 1 WHERE name = ?`, versionName).Error
}

// Insert stores a new order in tx.
func Insert(tx *gorm.DB, o *Order) error {
	if err := tx.Create(o).Error; err != nil {
		return err
	}
	return bump(tx)
}

// ByID is an order (ENOTFOUND when there is none).
func ByID(ctx context.Context, db *models.DB, id int64) (Order, error) {
	var o Order
	err := db.W.WithContext(ctx).Where("id = ?", id).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, apperr.NotFound("standing order")
	}
	return o, err
}

// OfOrgs are the orders of the organisations, open ones first, then the
// rest, newest first within each; status "" is every status. total
// counts them all.
func OfOrgs(ctx context.Context, db *models.DB, orgIDs []int64, status Status, offset, limit int) (out []Order, total int64, err error) {
	q := db.R.WithContext(ctx).Model(&Order{}).Where("org_id IN ?", orgIDs)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	err = q.Order("CASE WHEN status = 'open' THEN 0 ELSE 1 END, created_at DESC, id DESC").Offset(offset).Limit(limit).Find(&out).Error
	return out, total, err
}

// EndedSince are the orders of the organisations that ended (filled,
// failed or expired) at or after since, newest first, at most limit.
func EndedSince(ctx context.Context, db *models.DB, orgIDs []int64, since time.Time, limit int) ([]Order, error) {
	var out []Order
	err := db.R.WithContext(ctx).Where("org_id IN ? AND status <> ? AND ended_at >= ?", orgIDs, Open, since).
		Order("ended_at DESC, id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// CountOpen is how many open orders the organisations have.
func CountOpen(ctx context.Context, db *models.DB, orgIDs []int64) (int64, error) {
	var n int64
	err := db.R.WithContext(ctx).Model(&Order{}).Where("org_id IN ? AND status = ?", orgIDs, Open).Count(&n).Error
	return n, err
}

// OpenIDs are the ids of the open orders not yet expired at now, with
// the version they were read at (one read transaction). An order's
// filters never change once placed, so a pass that keeps the orders it
// read needs only these ids to know which are still open.
func OpenIDs(ctx context.Context, db *models.DB, now time.Time) (ids []int64, version int64, err error) {
	err = db.R.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Raw(`SELECT version FROM market_versions WHERE name = ?`, versionName).Scan(&version).Error; err != nil {
			return err
		}
		return tx.Model(&Order{}).Where("status = ? AND expires_at > ?", Open, now).Order("id").Pluck("id", &ids).Error
	})
	return ids, version, err
}

// ByIDs are the orders of these ids (those that exist), read in batches.
func ByIDs(ctx context.Context, db *models.DB, ids []int64) ([]Order, error) {
	var out []Order
	for len(ids) > 0 {
		n := min(len(ids), 500)
		var batch []Order
		if err := db.R.WithContext(ctx).Where("id IN ?", ids[:n]).Find(&batch).Error; err != nil {
			return nil, err
		}
		out = append(out, batch...)
		ids = ids[n:]
	}
	return out, nil
}

// DueToExpire are the open orders whose expiry is at or before now.
func DueToExpire(ctx context.Context, db *models.DB, now time.Time, limit int) ([]Order, error) {
	var out []Order
	err := db.W.WithContext(ctx).Where("status = ? AND expires_at <= ?", Open, now).Order("expires_at, id").Limit(limit).Find(&out).Error
	return out, err
}

// end moves an open order to a final status in tx with the columns given
// and reports whether it was still open (false: another pass or a cancel
// got there first, and nothing changed).
func end(tx *gorm.DB, id int64, to Status, now time.Time, cols map[string]any) (bool, error) {
	cols["status"], cols["ended_at"] = to, now
	res := tx.Model(&Order{}).Where("id = ? AND status = ?", id, Open).Updates(cols)
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	return true, bump(tx)
}

// Fill marks an open order filled in tx: with the rental it rented (nil
// for a notify order) and the offer it matched. Only an order still open
// is filled, so a rent whose Fill reports false must be undone: that is
// what makes an order rent exactly once when passes race.
func Fill(tx *gorm.DB, id int64, rentalID *int64, offerID int64, now time.Time) (bool, error) {
	return end(tx, id, Filled, now, map[string]any{"rental_id": rentalID, "offer_id": offerID})
}

// Fail marks an open order failed in tx, with the offer it matched and why
// its rent was refused.
func Fail(tx *gorm.DB, id, offerID int64, code, text string, msg locales.Msg, now time.Time) (bool, error) {
	return end(tx, id, Failed, now, map[string]any{"offer_id": offerID, "failure_code": code, "failure": text, "failure_msg": msg})
}

// Expire marks an open order expired in tx.
func Expire(tx *gorm.DB, id int64, now time.Time) (bool, error) {
	return end(tx, id, Expired, now, map[string]any{})
}

// Delete removes an order in tx (any status) and reports whether it was
// there; the version moves when it was open.
func Delete(tx *gorm.DB, o *Order) (bool, error) {
	res := tx.Where("id = ?", o.ID).Delete(&Order{})
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	return true, bump(tx)
}

// ForUpdate reads an order in tx, locked on PostgreSQL until tx ends (a
// pass filling it meanwhile waits, or has filled it first).
func ForUpdate(tx *gorm.DB, id int64) (Order, error) {
	var o Order
	err := models.LockRow(tx).Where("id = ?", id).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, apperr.NotFound("standing order")
	}
	return o, err
}
