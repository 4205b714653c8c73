package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
)

// reportSummaryColumns are every column but the report itself (the agent's
// whole run, telemetry included, can be megabytes): lists and the offer
// list need the headline figures only.
var reportSummaryColumns = []string{"id", "node_id", "gpu_model", "gpus", "trigger", "simulated", "task_id", "nominal",
	"bf16_tflops", "fp16_tflops", "mem_bw_gbps", "pct_of_nominal", "peak_temp_c", "measured_at", "created_at"}

// NominalFigures decodes the snapshot of the catalogue's nominal figures
// taken when the report was stored. Pages and the API read these, never
// the catalogue as it is now, so a report does not change with it.
func (r BenchmarkReport) NominalFigures() (agent.Nominal, error) {
	var n agent.Nominal
	if err := json.Unmarshal([]byte(r.Nominal), &n); err != nil {
		return n, fmt.Errorf("benchmark report %d: nominal: %w", r.ID, err)
	}
	return n, nil
}

// Run decodes the agent's report of the run (loads, host snapshot and
// telemetry). It is empty for a report read by a list method, which
// leaves that column out.
func (r BenchmarkReport) Run() (agent.BenchmarkReport, error) {
	var b agent.BenchmarkReport
	if r.Report == "" {
		return b, nil
	}
	if err := json.Unmarshal([]byte(r.Report), &b); err != nil {
		return b, fmt.Errorf("benchmark report %d: report: %w", r.ID, err)
	}
	return b, nil
}

// ReportByID returns one benchmark report with the agent's whole run;
// ENOTFOUND if there is none.
func (db *DB) ReportByID(ctx context.Context, id int64) (*BenchmarkReport, error) {
	var r BenchmarkReport
	err := db.R.WithContext(ctx).First(&r, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound(fmt.Sprintf("benchmark report %d", id))
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// ReportsOfNode returns a node's newest reports first, at most limit,
// without the run itself (Report is empty): the headline figures and the
// nominal snapshot.
func (db *DB) ReportsOfNode(ctx context.Context, nodeID int64, limit int) ([]BenchmarkReport, error) {
	var rs []BenchmarkReport
	err := db.R.WithContext(ctx).Select(reportSummaryColumns).Where("node_id = ?", nodeID).
		Order("measured_at DESC, id DESC").Limit(limit).Find(&rs).Error
	return rs, err
}

// LatestReports returns the newest report of each of the nodes that has
// one (nodes.latest_report_id), keyed by node id, without the run itself:
// the headline figures (BF16TFLOPS, PctOfNominal, …), Simulated, and the
// nominal snapshot (NominalFigures). Nodes without a report are absent
// from the map. For the offer list and offer pages; a link to the report
// is the route "benchmarks.show" with the report's ID.
func (db *DB) LatestReports(ctx context.Context, nodeIDs []int64) (map[int64]BenchmarkReport, error) {
	out := make(map[int64]BenchmarkReport)
	const chunk = 1000
	for len(nodeIDs) > 0 {
		ids := nodeIDs[:min(chunk, len(nodeIDs))]
		nodeIDs = nodeIDs[len(ids):]
		var rs []BenchmarkReport
		err := db.R.WithContext(ctx).Select(reportSummaryColumns).
			Where("id IN (SELECT latest_report_id FROM nodes WHERE id IN ? AND latest_report_id IS NOT NULL)", ids).
			Find(&rs).Error
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			out[r.NodeID] = r
		}
	}
	return out, nil
}

// BenchmarkSubject is the node a report is about, with where it is and who
// lists it: what the report and history pages say about it.
type BenchmarkSubject struct {
	Node       Node
	Datacenter Datacenter
	Provider   Provider
}

// BenchmarkSubjectOf returns the node with its datacentre and provider;
// ENOTFOUND if there is no such node.
func (db *DB) BenchmarkSubjectOf(ctx context.Context, nodeID int64) (*BenchmarkSubject, error) {
	var s BenchmarkSubject
	err := db.R.WithContext(ctx).First(&s.Node, nodeID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound(fmt.Sprintf("node %d", nodeID))
	}
	if err != nil {
		return nil, err
	}
	if err := db.R.WithContext(ctx).First(&s.Datacenter, s.Node.DatacenterID).Error; err != nil {
		return nil, err
	}
	if err := db.R.WithContext(ctx).First(&s.Provider, s.Node.ProviderID).Error; err != nil {
		return nil, err
	}
	return &s, nil
}

// InsertReport stores a report in tx and makes it the node's latest unless
// the node already has a newer one; the offers version moves, so the
// offer index reloads with the new figures. A report for a task that
// already has one is a conflict (task_id is unique).
func InsertReport(tx *gorm.DB, r *BenchmarkReport) error {
	if err := tx.Create(r).Error; err != nil {
		return err
	}
	res := tx.Exec(`UPDATE nodes SET latest_report_id = ? WHERE id = ? AND (latest_report_id IS NULL OR
		(SELECT measured_at FROM benchmark_reports WHERE id = nodes.latest_report_id) <= ?)`, r.ID, r.NodeID, r.MeasuredAt)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return nil
	}
	return BumpOffersVersion(tx)
}

// BumpOffersVersion moves the offers version in tx, so that the in-memory
// offer index reloads: for changes to what offers show that do not touch
// the offers table (a node's latest benchmark report, say).
func BumpOffersVersion(tx *gorm.DB) error { return bumpOffersVersion(tx) }
