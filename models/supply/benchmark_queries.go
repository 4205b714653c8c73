package supply

import (
	"context"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/models"
)

// OpenBenchmarkTask returns a node's newest benchmark task created after
// since that has no result yet, in tx; gorm.ErrRecordNotFound when none is
// out.
func OpenBenchmarkTask(tx *gorm.DB, nodeID int64, since time.Time) (models.AgentTask, error) {
	var t models.AgentTask
	err := tx.Where("node_id = ? AND kind = ? AND status <> ? AND created_at > ?", nodeID, agent.TaskBenchmark, models.TaskDone, since).
		Order("id DESC").First(&t).Error
	return t, err
}

// IdleHealthyGPUUUIDs returns the UUIDs of a node's GPUs that are free and
// pass their checks, in index order, in tx: the ones a benchmark may load.
func IdleHealthyGPUUUIDs(tx *gorm.DB, nodeID int64) ([]string, error) {
	var uuids []string
	err := tx.Model(&models.GPU{}).Where("node_id = ? AND state = ? AND health = ?", nodeID, models.GPUFree, models.GPUHealthy).
		Order("idx").Pluck("uuid", &uuids).Error
	return uuids, err
}

// GPUModelRecordBySlug returns the catalogue model as the database has it,
// in tx; gorm.ErrRecordNotFound when the table lacks it.
func GPUModelRecordBySlug(tx *gorm.DB, slug string) (models.GPUModelRecord, error) {
	var m models.GPUModelRecord
	err := tx.Where("slug = ?", slug).First(&m).Error
	return m, err
}

// BenchmarkDue is a node the benchmark schedule asks for a run, and its
// latest report (nil: it has none, so the run is its first).
type BenchmarkDue struct {
	ID             int64
	LatestReportID *int64
}

// NodesDueForBenchmark returns, by id, the healthy nodes with an idle
// healthy GPU whose latest report is missing or measured before
// reportBefore, leaving out those sent a benchmark task after taskSince.
func NodesDueForBenchmark(ctx context.Context, db *models.DB, reportBefore, taskSince time.Time) ([]BenchmarkDue, error) {
	var nodes []BenchmarkDue
	err := db.R.WithContext(ctx).Raw(`SELECT n.id, n.latest_report_id FROM nodes n
		LEFT JOIN benchmark_reports r ON r.id = n.latest_report_id
		WHERE n.health = ? AND (n.latest_report_id IS NULL OR r.measured_at < ?)
		AND EXISTS (SELECT 1 FROM gpus g WHERE g.node_id = n.id AND g.state = ? AND g.health = ?)
		AND NOT EXISTS (SELECT 1 FROM agent_tasks t WHERE t.node_id = n.id AND t.kind = ? AND t.created_at > ?)
		ORDER BY n.id`, models.NodeHealthy, reportBefore, models.GPUFree, models.GPUHealthy,
		agent.TaskBenchmark, taskSince).Scan(&nodes).Error
	return nodes, err
}

// FailAgentTaskResult records, in tx, that a task's result is a failure
// after all (it said it succeeded, but what it brought cannot be read).
func FailAgentTaskResult(tx *gorm.DB, id int64) error {
	return tx.Model(&models.AgentTask{}).Where("id = ?", id).Update("ok", false).Error
}
