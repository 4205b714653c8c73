package supply

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// ReportByID returns one benchmark report with the agent's whole run;
// ENOTFOUND if there is none.
func ReportByID(ctx context.Context, db *models.DB, id int64) (*models.BenchmarkReport, error) {
	var r models.BenchmarkReport
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
func ReportsOfNode(ctx context.Context, db *models.DB, nodeID int64, limit int) ([]models.BenchmarkReport, error) {
	var rs []models.BenchmarkReport
	err := db.R.WithContext(ctx).Select(models.ReportSummaryColumns).Where("node_id = ?", nodeID).
		Order("measured_at DESC, id DESC").Limit(limit).Find(&rs).Error
	return rs, err
}

// LatestReports returns the newest report of each of the nodes that has
// one (nodes.latest_report_id), keyed by node id, without the run itself:
// the headline figures (BF16TFLOPS, PctOfNominal, …), Simulated, and the
// nominal snapshot (NominalFigures). Nodes without a report are absent
// from the map. For the offer list and offer pages; a link to the report
// is the route "benchmarks.show" with the report's ID.
func LatestReports(ctx context.Context, db *models.DB, nodeIDs []int64) (map[int64]models.BenchmarkReport, error) {
	out := make(map[int64]models.BenchmarkReport)
	const chunk = 1000
	for len(nodeIDs) > 0 {
		ids := nodeIDs[:min(chunk, len(nodeIDs))]
		nodeIDs = nodeIDs[len(ids):]
		var rs []models.BenchmarkReport
		err := db.R.WithContext(ctx).Select(models.ReportSummaryColumns).
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
	Node       models.Node
	Datacenter models.Datacenter
	Provider   models.Provider
}

// BenchmarkSubjectOf returns the node with its datacentre and provider;
// ENOTFOUND if there is no such node.
func BenchmarkSubjectOf(ctx context.Context, db *models.DB, nodeID int64) (*BenchmarkSubject, error) {
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
func InsertReport(tx *gorm.DB, r *models.BenchmarkReport) error {
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
	return models.OffersChanged(tx, models.OfferScope{Nodes: []int64{r.NodeID}})
}
