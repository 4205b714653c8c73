package rentalstore

import (
	"context"
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/locales"
	"suanli/models"
	"suanli/models/supply"
	"suanli/pricing"
)

// FreeGPUsOnNode returns, in tx, the ids of up to n GPUs of the model on
// the node that a rental may take: free, healthy, on a healthy active
// node, lowest index first. On PostgreSQL the rows are locked and rows
// another open transaction has locked are skipped: concurrent rents of
// one offer would otherwise all pick the same lowest free GPUs and all
// but one fail when they come to take them.
func FreeGPUsOnNode(tx *gorm.DB, nodeID int64, model string, n int) ([]int64, error) {
	lock := ""
	if tx.Dialector.Name() == "postgres" {
		lock = " FOR UPDATE OF g SKIP LOCKED"
	}
	var ids []int64
	err := tx.Raw(`SELECT g.id FROM gpus g JOIN nodes n ON n.id = g.node_id
		WHERE g.node_id = ? AND g.gpu_model = ? AND g.state = ? AND g.health = ? AND n.health = ? AND n.status = ?
		ORDER BY g.idx LIMIT ?`+lock, nodeID, model, models.GPUFree, models.GPUHealthy, models.NodeHealthy, models.NodeActive, n).Scan(&ids).Error
	return ids, err
}

// TakeGPUs marks the GPUs busy in tx, only those still free, and returns
// how many it took: fewer than asked means a concurrent rent took some
// first.
func TakeGPUs(tx *gorm.DB, ids []int64) (int64, error) {
	res := tx.Model(&models.GPU{}).Where("id IN ? AND state = ?", ids, models.GPUFree).Update("state", models.GPUBusy)
	return res.RowsAffected, res.Error
}

// AttachRentalGPU records in tx that the rental holds the GPU from at. A
// GPU already held by a live rental breaks the unique index on live
// rental GPUs: see IsUniqueViolation.
func AttachRentalGPU(tx *gorm.DB, rentalID, gpuID, nodeID int64, at time.Time) error {
	return tx.Create(&models.RentalGPU{RentalID: rentalID, GPUID: gpuID, NodeID: nodeID, AttachedAt: at}).Error
}

// InsertRental creates a rental in tx.
func InsertRental(tx *gorm.DB, r *models.Rental) error { return tx.Create(r).Error }

// SetRentalNode records in tx the node whose GPUs the rental holds.
func SetRentalNode(tx *gorm.DB, rentalID, nodeID int64, now time.Time) error {
	return tx.Model(&models.Rental{}).Where("id = ?", rentalID).Updates(map[string]any{"node_id": nodeID, "updated_at": now}).Error
}

// HeldRentalGPUs returns, in tx, the rental GPU rows not yet released.
func HeldRentalGPUs(tx *gorm.DB, rentalID int64) ([]models.RentalGPU, error) {
	var held []models.RentalGPU
	err := tx.Where("rental_id = ? AND released_at IS NULL", rentalID).Find(&held).Error
	return held, err
}

// ReleasedGPUState is the state a GPU takes when a rental lets go of it:
// unhealthy if its last verdict failed (or it went missing), else free.
func ReleasedGPUState(health models.GPUHealth) models.GPUState {
	if health == models.GPUFailing || health == models.GPUMissing {
		return models.GPUUnhealthy
	}
	return models.GPUFree
}

// ReleaseRentalGPUs lets go, in tx, of every GPU the rental holds: the
// rows are marked released at now and each busy GPU takes its
// ReleasedGPUState. It returns the nodes the GPUs were on (none when the
// rental held none), whose offers' availability the caller refreshes.
func ReleaseRentalGPUs(tx *gorm.DB, rentalID int64, now time.Time) ([]int64, error) {
	held, err := HeldRentalGPUs(tx, rentalID)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	ids := make([]int64, 0, len(held))
	var nodes []int64
	seen := map[int64]bool{}
	for _, h := range held {
		ids = append(ids, h.GPUID)
		if !seen[h.NodeID] {
			seen[h.NodeID] = true
			nodes = append(nodes, h.NodeID)
		}
	}
	if err := tx.Model(&models.RentalGPU{}).Where("rental_id = ? AND released_at IS NULL", rentalID).Update("released_at", now).Error; err != nil {
		return nil, err
	}
	// ReleasedGPUState, in one statement for all of them.
	if err := tx.Exec(`UPDATE gpus SET state = CASE WHEN health IN (?, ?) THEN ? ELSE ? END WHERE id IN ? AND state = ?`,
		models.GPUFailing, models.GPUMissing, models.GPUUnhealthy, models.GPUFree, ids, models.GPUBusy).Error; err != nil {
		return nil, err
	}
	return nodes, nil
}

// HeldGPUs returns the GPUs the rental holds now, by index. It reads on
// the write handle: provisioning reads what it has just written.
func HeldGPUs(ctx context.Context, db *models.DB, rentalID int64) ([]models.GPU, error) {
	var gs []models.GPU
	err := db.W.WithContext(ctx).Raw(`SELECT g.* FROM gpus g JOIN rental_gpus rg ON rg.gpu_id = g.id
		WHERE rg.rental_id = ? AND rg.released_at IS NULL ORDER BY g.idx`, rentalID).Scan(&gs).Error
	return gs, err
}

// RentalMove is what a status move writes besides the status and
// updated_at; nil fields are left as they are.
type RentalMove struct {
	Attempts     *int
	StoppedAt    *time.Time
	StopReason   *string
	Failure      *string
	FailureMsg   *locales.Msg
	DownSince    *time.Time
	Free         *bool
	Access       *string
	Checks       *string
	NodeID       *int64
	BilledUntil  *time.Time
	RunningSince *time.Time
	EndsAt       *time.Time
}

// fields is the move as the columns it sets.
func (m RentalMove) fields() map[string]any {
	up := map[string]any{}
	if m.Attempts != nil {
		up["attempts"] = *m.Attempts
	}
	if m.StoppedAt != nil {
		up["stopped_at"] = *m.StoppedAt
	}
	if m.StopReason != nil {
		up["stop_reason"] = *m.StopReason
	}
	if m.Failure != nil {
		up["failure"] = *m.Failure
	}
	if m.FailureMsg != nil {
		up["failure_msg"] = *m.FailureMsg
	}
	if m.DownSince != nil {
		up["down_since"] = *m.DownSince
	}
	if m.Free != nil {
		up["free"] = *m.Free
	}
	if m.Access != nil {
		up["access"] = *m.Access
	}
	if m.Checks != nil {
		up["checks"] = *m.Checks
	}
	if m.NodeID != nil {
		up["node_id"] = *m.NodeID
	}
	if m.BilledUntil != nil {
		up["billed_until"] = *m.BilledUntil
	}
	if m.RunningSince != nil {
		up["running_since"] = *m.RunningSince
	}
	if m.EndsAt != nil {
		up["ends_at"] = *m.EndsAt
	}
	return up
}

// MoveRental sets a rental's status to to in tx, with what m sets, only
// if it still has one of the from statuses, and reports whether it did
// (a stop that committed meanwhile wins). Whether the move is allowed at
// all (RentalStatus.CanMoveTo) is the caller's rule.
func MoveRental(tx *gorm.DB, id int64, to models.RentalStatus, from []models.RentalStatus, m RentalMove, now time.Time) (bool, error) {
	up := m.fields()
	up["status"], up["updated_at"] = to, now
	res := tx.Model(&models.Rental{}).Where("id = ? AND status IN ?", id, from).Updates(up)
	if res.Error != nil || res.RowsAffected != 1 {
		return false, res.Error
	}
	// A bid counts towards its offer's clearing price only in the
	// bid-holding statuses (supply.BidHoldingStatuses): entering or
	// leaving them changes what the offer list shows.
	if slices.ContainsFunc(from, func(f models.RentalStatus) bool { return holdsBid(f) != holdsBid(to) }) {
		return true, bidOfferChanged(tx, id)
	}
	return true, nil
}

func holdsBid(s models.RentalStatus) bool { return slices.Contains(supply.BidHoldingStatuses, s) }

// bidOfferChanged logs, in tx, the offer of an interruptible rental whose
// bid started or stopped counting; nothing for other rentals.
func bidOfferChanged(tx *gorm.DB, id int64) error {
	var offers []int64
	if err := tx.Model(&models.Rental{}).Where("id = ? AND bid_per_gpu_hour_fen IS NOT NULL", id).Pluck("offer_id", &offers).Error; err != nil {
		return err
	}
	if len(offers) == 0 {
		return nil
	}
	return models.OffersChanged(tx, models.OfferScope{Offers: offers})
}

// FailUnpaidTerm fails, in tx, a term rental just set running whose term
// the balance did not pay (running → failed, see rentalTransitions): its
// term end is cleared and why recorded, and, as a failed rental never
// launches again, its launch secrets forgotten.
func FailUnpaidTerm(tx *gorm.DB, id int64, why string, msg locales.Msg, now time.Time) error {
	res := tx.Model(&models.Rental{}).Where("id = ? AND status = ?", id, models.RentalRunning).Updates(map[string]any{"status": models.RentalFailed, "ends_at": nil,
		"failure": why, "failure_msg": msg, "stopped_at": now, "updated_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	return ForgetLaunchSecrets(tx, id)
}

// SetRentalAttempts records in tx how many nodes a rental's provisioning
// has tried.
func SetRentalAttempts(tx *gorm.DB, id int64, attempts int, now time.Time) error {
	return tx.Model(&models.Rental{}).Where("id = ?", id).Updates(map[string]any{"attempts": attempts, "updated_at": now}).Error
}

// EndRentalDowntime records in tx a rental's total downtime and that it
// is no longer down.
func EndRentalDowntime(tx *gorm.DB, id, downtimeSecs int64) error {
	return tx.Model(&models.Rental{}).Where("id = ?", id).Updates(map[string]any{"downtime_secs": downtimeSecs, "down_since": nil}).Error
}

// SwitchRental writes in tx a switched or resized rental's new terms
// (offer, provider, GPUs, price, no-GPU mode, attempts, from next) and its new status,
// and clears what its last stop left (stopped_at, stop_reason, the low
// balance mail).
func SwitchRental(tx *gorm.DB, next *models.Rental, status models.RentalStatus, now time.Time) error {
	if next.BidPerGPUHourFen != nil {
		// The bid leaves one offer's clearing price and joins another's.
		var prev []int64
		if err := tx.Model(&models.Rental{}).Where("id = ?", next.ID).Pluck("offer_id", &prev).Error; err != nil {
			return err
		}
		if err := models.OffersChanged(tx, models.OfferScope{Offers: append(prev, next.OfferID)}); err != nil {
			return err
		}
	}
	return tx.Model(&models.Rental{}).Where("id = ?", next.ID).Updates(map[string]any{
		"offer_id": next.OfferID, "provider_id": next.ProviderID, "gpus": next.GPUs,
		"price_per_gpu_hour_fen": next.PricePerGPUHourFen, "offpeak_pct": next.OffpeakPct, "student_pct": next.StudentPct,
		"attempts": next.Attempts, "status": status, "stopped_at": nil, "stop_reason": "", "low_balance_mailed": false, "updated_at": now,
		"no_gpu": next.NoGPU, "no_gpu_price_per_hour_fen": next.NoGPUPricePerHourFen,
	}).Error
}

// ReadRental reads a rental in tx (without locking it); a missing rental
// is ENOTFOUND.
func ReadRental(tx *gorm.DB, id int64) (models.Rental, error) {
	var r models.Rental
	err := tx.First(&r, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return r, apperr.NotFound("rental")
	}
	return r, err
}

// ReadOffer reads an offer in tx; a missing offer is ENOTFOUND.
func ReadOffer(tx *gorm.DB, id int64) (models.Offer, error) {
	var o models.Offer
	err := tx.First(&o, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, apperr.NotFound("offer")
	}
	return o, err
}

// NodeByID returns a node; a missing node is ENOTFOUND.
func NodeByID(ctx context.Context, db *models.DB, id int64) (*models.Node, error) {
	var n models.Node
	err := db.R.WithContext(ctx).First(&n, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("node")
	}
	return &n, err
}

// CandidateNodes returns, in tx, the nodes a rental may move to (the
// next node after failed checks, a move off a failing one): healthy and
// active, of the offer's provider, datacentre and GPU model, never one
// the rental has held GPUs on nor one its launch excluded
// (rental_excluded_nodes); the offer's own node first, then by id.
func CandidateNodes(tx *gorm.DB, o *models.Offer, rentalID int64) ([]int64, error) {
	var cands []int64
	err := tx.Raw(`SELECT n.id FROM nodes n WHERE n.provider_id = ? AND n.datacenter_id = ? AND n.gpu_model = ?
		AND n.health = ? AND n.status = ?
		AND n.id NOT IN (SELECT node_id FROM rental_gpus WHERE rental_id = ?)
		AND n.id NOT IN (SELECT node_id FROM rental_excluded_nodes WHERE rental_id = ?)
		ORDER BY CASE WHEN n.id = ? THEN 0 ELSE 1 END, n.id`, o.ProviderID, o.DatacenterID, o.GPUModel, models.NodeHealthy, models.NodeActive, rentalID, rentalID, o.NodeID).
		Scan(&cands).Error
	return cands, err
}

// GPUByUUID reads a GPU in tx by its UUID; an unknown one is ENOTFOUND.
func GPUByUUID(tx *gorm.DB, uuid string) (*models.GPU, error) {
	var g models.GPU
	err := tx.Where("uuid = ?", uuid).First(&g).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("gpu")
	}
	return &g, err
}

// MarkGPUFailing records in tx that a GPU failed its checks at now, with
// the reasons (one per line) and the same as a message.
func MarkGPUFailing(tx *gorm.DB, gpuID int64, reasons string, msg locales.Msg, now time.Time) error {
	return tx.Model(&models.GPU{}).Where("id = ?", gpuID).Updates(map[string]any{
		"health": models.GPUFailing, "reasons": reasons, "reasons_msg": msg, "checked_at": now}).Error
}

// SilentNodes returns the nodes still counted as heard (healthy or
// without NVML) whose last heartbeat is before before. It reads on the
// write handle, as the health pass that changes them does.
func SilentNodes(ctx context.Context, db *models.DB, before time.Time) ([]models.Node, error) {
	var ns []models.Node
	err := db.W.WithContext(ctx).Where("health IN ? AND last_heartbeat_at < ?", []models.NodeHealth{models.NodeHealthy, models.NodeNoNVML}, before).Find(&ns).Error
	return ns, err
}

// MarkNodeSilent sets a node's health to silent in tx, only if it still
// has the health from, and reports whether it did (a heartbeat that came
// in meanwhile wins).
func MarkNodeSilent(tx *gorm.DB, nodeID int64, from models.NodeHealth) (bool, error) {
	res := tx.Model(&models.Node{}).Where("id = ? AND health = ?", nodeID, from).Update("health", models.NodeSilent)
	return res.RowsAffected > 0, res.Error
}

// RentalOnFailure is a running rental on a silent node (GPUID 0) or
// holding a GPU whose verdict failed or which went missing.
type RentalOnFailure struct {
	RentalID int64
	NodeID   int64
	// The tag: gorm would read GPUID from a column "gpuid", leave it 0
	// and so record every failing GPU as a silent node.
	GPUID   int64 `gorm:"column:gpu_id"`
	Reasons string
	// ReasonsMsg is Reasons as a message (zero for a silent node).
	ReasonsMsg locales.Msg
}

// RentalsOnFailures returns the running rentals on a silent node or
// holding a failing or missing GPU, a row per failure (a rental may come
// more than once; silent nodes first). It reads on the write handle, as
// the health pass that moves them does.
func RentalsOnFailures(ctx context.Context, db *models.DB) ([]RentalOnFailure, error) {
	var hits []RentalOnFailure
	err := db.W.WithContext(ctx).Raw(`SELECT r.id AS rental_id, n.id AS node_id, 0 AS gpu_id, 'node silent' AS reasons, '' AS reasons_msg
		FROM rentals r JOIN nodes n ON n.id = r.node_id WHERE r.status = ? AND n.health = ?
		UNION ALL
		SELECT r.id, g.node_id, g.id, g.reasons, g.reasons_msg FROM rentals r JOIN rental_gpus rg ON rg.rental_id = r.id AND rg.released_at IS NULL
		JOIN gpus g ON g.id = rg.gpu_id WHERE r.status = ? AND g.health IN (?, ?)`,
		models.RentalRunning, models.NodeSilent, models.RentalRunning, models.GPUFailing, models.GPUMissing).Scan(&hits).Error
	return hits, err
}

// UnconfirmedStops returns the ids of rentals stopping since before
// stoppedBefore (their agent never confirmed). It reads on the write
// handle, as the health pass that finishes them does.
func UnconfirmedStops(ctx context.Context, db *models.DB, stoppedBefore time.Time) ([]int64, error) {
	var ids []int64
	err := db.W.WithContext(ctx).Model(&models.Rental{}).Where("status = ? AND stopped_at < ?", models.RentalStopping, stoppedBefore).Pluck("id", &ids).Error
	return ids, err
}

// EndedTerms returns the week or month rentals whose term ended by now
// that still need the health pass: running ones (to renew or stop) and
// stopped ones still holding GPUs (to release them). It reads on the
// write handle.
func EndedTerms(ctx context.Context, db *models.DB, now time.Time) ([]models.Rental, error) {
	var rs []models.Rental
	err := db.W.WithContext(ctx).Where("term <> ? AND ends_at <= ? AND (status = ? OR (status = ? AND EXISTS (SELECT 1 FROM rental_gpus rg WHERE rg.rental_id = rentals.id AND rg.released_at IS NULL)))",
		pricing.OnDemand, now, models.RentalRunning, models.RentalStopped).Find(&rs).Error
	return rs, err
}

// NodeStatus returns a node's status (NodeActive, draining, removed); a
// missing node has the empty status. It reads on the write handle.
func NodeStatus(ctx context.Context, db *models.DB, nodeID int64) (models.NodeStatus, error) {
	var status string // gorm plucks one value into a plain string only
	err := db.W.WithContext(ctx).Model(&models.Node{}).Where("id = ?", nodeID).Pluck("status", &status).Error
	return models.NodeStatus(status), err
}
