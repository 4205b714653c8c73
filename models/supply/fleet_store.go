package supply

import (
	"context"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/locales"
	"suanli/models"
)

// The queries of the fleet: node credentials, what heartbeats record
// about nodes and GPUs, the offers that wait for a node, and the agents'
// task queue.

// SetNodeRegTokenHash stores the hash of a node's new one-time
// registration token (replacing any unused one); found is false when no
// such node exists.
func SetNodeRegTokenHash(ctx context.Context, db *models.DB, nodeID int64, hash string) (found bool, err error) {
	return setNodeColumn(db.W.WithContext(ctx), nodeID, "reg_token_hash", hash)
}

// SetNodeCredHash stores the hash of a node's credential directly, without
// a registration step; found is false when no such node exists.
func SetNodeCredHash(ctx context.Context, db *models.DB, nodeID int64, hash string) (found bool, err error) {
	return setNodeColumn(db.W.WithContext(ctx), nodeID, "cred_hash", hash)
}

func setNodeColumn(tx *gorm.DB, nodeID int64, column string, value any) (bool, error) {
	res := tx.Model(&models.Node{}).Where("id = ?", nodeID).Update(column, value)
	return res.RowsAffected > 0, res.Error
}

// NodeByCredHash returns the node whose credential has the hash, in tx;
// gorm.ErrRecordNotFound when none has.
func NodeByCredHash(tx *gorm.DB, hash string) (models.Node, error) {
	var n models.Node
	err := tx.Where("cred_hash = ?", hash).First(&n).Error
	return n, err
}

// NodeByRegTokenHash returns the node whose unused registration token has
// the hash, in tx; gorm.ErrRecordNotFound when none has.
func NodeByRegTokenHash(tx *gorm.DB, hash string) (models.Node, error) {
	var n models.Node
	err := tx.Where("reg_token_hash = ?", hash).First(&n).Error
	return n, err
}

// ExchangeRegToken gives a node its credential's hash and uses up its
// registration token, in tx: a token registers a node once.
func ExchangeRegToken(tx *gorm.DB, nodeID int64, credHash string) error {
	return tx.Model(&models.Node{}).Where("id = ?", nodeID).Updates(map[string]any{"cred_hash": credHash, "reg_token_hash": nil}).Error
}

// NodeByIDTx returns a node in tx; gorm.ErrRecordNotFound when there is
// none.
func NodeByIDTx(tx *gorm.DB, id int64) (models.Node, error) {
	var n models.Node
	err := tx.First(&n, id).Error
	return n, err
}

// NodeHeartbeat is what a heartbeat records on its node.
type NodeHeartbeat struct {
	At time.Time
	// Health is NodeHealthy or NodeNoNVML.
	Health    models.NodeHealth
	Simulated bool
	// AgentInfo is the agent's self-description as JSON.
	AgentInfo string
	PingURL   string
	// VolumeRoot is the agent's --volume-root; CUDADriverVersion the
	// CUDA version its driver supports ("" without NVML).
	VolumeRoot        string
	CUDADriverVersion string
}

// RecordNodeHeartbeat stores a heartbeat on its node, in tx (one
// statement).
func RecordNodeHeartbeat(tx *gorm.DB, nodeID int64, hb NodeHeartbeat) error {
	return tx.Model(&models.Node{}).Where("id = ?", nodeID).Updates(map[string]any{
		"last_heartbeat_at": hb.At, "health": hb.Health, "simulated": hb.Simulated, "agent_info": hb.AgentInfo, "ping_url": hb.PingURL,
		"volume_root": hb.VolumeRoot, "cuda_driver_version": hb.CUDADriverVersion,
	}).Error
}

// SetNodeGPUModel records the catalogue model a node's inventory showed,
// in tx.
func SetNodeGPUModel(tx *gorm.DB, nodeID int64, slug string) error {
	return tx.Model(&models.Node{}).Where("id = ?", nodeID).Update("gpu_model", slug).Error
}

// GPUsOfNode returns a node's GPUs in index order, in tx.
func GPUsOfNode(tx *gorm.DB, nodeID int64) ([]models.GPU, error) {
	var gs []models.GPU
	err := tx.Where("node_id = ?", nodeID).Order("idx").Find(&gs).Error
	return gs, err
}

// InsertGPU stores a GPU a node reported for the first time, in tx. A
// UUID another GPU has, or an index the node already has, is a unique
// violation (see IsUniqueViolation).
func InsertGPU(tx *gorm.DB, g *models.GPU) error { return tx.Create(g).Error }

// GPUReading is what the agent read about a GPU in one heartbeat.
type GPUReading struct {
	UUID, Name, PCIBusID string
	MemoryMiB            int64
	// Health is GPUHealthy, GPUFailing or GPUMissing.
	Health     models.GPUHealth
	Reasons    string
	ReasonsMsg locales.Msg
	// Telemetry is JSON gpu.Telemetry.
	Telemetry string
	CheckedAt time.Time
}

// RecordGPUReading stores what the agent read about a known GPU, in tx;
// its state is left to ReleaseRecoveredGPU and HoldFailingGPU. A UUID that
// another GPU has is a unique violation.
func RecordGPUReading(tx *gorm.DB, gpuID int64, r GPUReading) error {
	return tx.Model(&models.GPU{}).Where("id = ?", gpuID).Updates(map[string]any{
		"uuid": r.UUID, "name": r.Name, "pci_bus_id": r.PCIBusID, "memory_mib": r.MemoryMiB,
		"health": r.Health, "reasons": r.Reasons, "reasons_msg": r.ReasonsMsg, "telemetry": r.Telemetry, "checked_at": r.CheckedAt,
	}).Error
}

// MarkGPUMissing records that a GPU was absent from its node's report, in
// tx: its health becomes GPUMissing with the reasons given.
func MarkGPUMissing(tx *gorm.DB, gpuID int64, reasons string, msg locales.Msg, now time.Time) error {
	return tx.Model(&models.GPU{}).Where("id = ?", gpuID).Updates(map[string]any{
		"health": models.GPUMissing, "reasons": reasons, "reasons_msg": msg, "checked_at": now,
	}).Error
}

// ReleaseRecoveredGPU makes an unhealthy GPU free again, in tx, unless a
// rental still holds it (the health watch moves rentals off failing GPUs;
// until it has, the GPU stays out of the free pool).
func ReleaseRecoveredGPU(tx *gorm.DB, gpuID int64) error {
	return tx.Model(&models.GPU{}).Where("id = ? AND state = ? AND NOT EXISTS (SELECT 1 FROM rental_gpus rg WHERE rg.gpu_id = gpus.id AND rg.released_at IS NULL)",
		gpuID, models.GPUUnhealthy).Update("state", models.GPUFree).Error
}

// HoldFailingGPU takes a failing GPU out of the free pool, in tx; a busy
// one stays busy (its rental is moved by the health watch).
func HoldFailingGPU(tx *gorm.DB, gpuID int64) error {
	return tx.Model(&models.GPU{}).Where("id = ? AND state = ?", gpuID, models.GPUFree).Update("state", models.GPUUnhealthy).Error
}

// OffersAwaitingNode returns the offers on a node that wait for its agent
// to report matching healthy GPUs, in tx.
func OffersAwaitingNode(tx *gorm.DB, nodeID int64) ([]models.Offer, error) {
	var os []models.Offer
	err := tx.Where("node_id = ? AND awaiting_node = ?", nodeID, true).Find(&os).Error
	return os, err
}

// SetOfferListing records whether an offer still waits for its node, and
// the note that says why, in tx.
func SetOfferListing(tx *gorm.DB, offerID int64, awaiting bool, note string, now time.Time) error {
	return tx.Model(&models.Offer{}).Where("id = ?", offerID).
		Updates(map[string]any{"awaiting_node": awaiting, "listing_note": note, "updated_at": now}).Error
}

// AgentTaskIDByKey returns the id of the task with the once-only key, in
// tx; found is false when there is none.
func AgentTaskIDByKey(tx *gorm.DB, key string) (id int64, found bool, err error) {
	t, err := agentTaskWhere(tx, "idem_key = ?", key)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return t.ID, true, nil
}

// InsertAgentTask queues a task for a node's agent, in tx, setting t.ID.
func InsertAgentTask(tx *gorm.DB, t *models.AgentTask) error { return tx.Create(t).Error }

// SetAgentTaskPayload stores a task's payload, in tx: the payload names
// the task's id, known only once it is inserted.
func SetAgentTaskPayload(tx *gorm.DB, id int64, payload string) error {
	return tx.Model(&models.AgentTask{}).Where("id = ?", id).Update("payload", payload).Error
}

// ExpireAgentTasks closes a rental's tasks of the kinds on a node that are
// not done, in tx, as failed with the result given, so that an agent that
// comes back later never runs them.
func ExpireAgentTasks(tx *gorm.DB, rentalID, nodeID int64, kinds []string, result string, now time.Time) error {
	return tx.Model(&models.AgentTask{}).Where("rental_id = ? AND node_id = ? AND kind IN ? AND status <> ?",
		rentalID, nodeID, kinds, models.TaskDone).
		Updates(map[string]any{"status": models.TaskDone, "ok": false, "result": result, "done_at": now}).Error
}

// dueAgentTasks narrows q to a node's tasks that are due for its agent:
// queued ones, and sent ones without a result that were sent before
// resendBefore (the answer may have been lost).
func dueAgentTasks(q *gorm.DB, nodeID int64, resendBefore time.Time) *gorm.DB {
	return q.Where("node_id = ? AND (status = ? OR (status = ? AND sent_at < ?))", nodeID, models.TaskQueued, models.TaskSent, resendBefore)
}

// DueAgentTasks returns up to limit of a node's tasks that are due for its
// agent (see MarkAgentTaskSent), oldest first.
func DueAgentTasks(ctx context.Context, db *models.DB, nodeID int64, resendBefore time.Time, limit int) ([]models.AgentTask, error) {
	var ts []models.AgentTask
	err := dueAgentTasks(db.R.WithContext(ctx), nodeID, resendBefore).Order("id").Limit(limit).Find(&ts).Error
	return ts, err
}

// MarkAgentTaskSent marks a due task as sent at now, in tx; taken is false
// when it was no longer due (another long-poll took it).
func MarkAgentTaskSent(tx *gorm.DB, id, nodeID int64, resendBefore, now time.Time) (taken bool, err error) {
	res := dueAgentTasks(tx.Model(&models.AgentTask{}).Where("id = ?", id), nodeID, resendBefore).
		Updates(map[string]any{"status": models.TaskSent, "sent_at": now})
	return res.RowsAffected > 0, res.Error
}
