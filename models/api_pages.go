package models

import (
	"context"
)

// The paginated reads of the API's list endpoints: one page of rows and
// the number of rows on every page together.

// ReportsOfNodePage returns one page of a node's benchmark reports,
// newest first, without their runs (as ReportsOfNode), and how many it has.
func (db *DB) ReportsOfNodePage(ctx context.Context, nodeID int64, offset, limit int) ([]BenchmarkReport, int64, error) {
	var n int64
	if err := db.R.WithContext(ctx).Model(&BenchmarkReport{}).Where("node_id = ?", nodeID).Count(&n).Error; err != nil {
		return nil, 0, err
	}
	var rs []BenchmarkReport
	err := db.R.WithContext(ctx).Select(ReportSummaryColumns).Where("node_id = ?", nodeID).
		Order("measured_at DESC, id DESC").Offset(offset).Limit(limit).Find(&rs).Error
	return rs, n, err
}
