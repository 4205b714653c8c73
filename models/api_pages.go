package models

import (
	"context"
	"strings"
)

// The paginated reads of the API's list endpoints: one page of rows and
// the number of rows on every page together.

// RentalsPage returns one page of an organisation's rentals, live ones
// first and then the rest, newest first within each, and how many it has.
func (db *DB) RentalsPage(ctx context.Context, orgID int64, offset, limit int) ([]Rental, int64, error) {
	var n int64
	if err := db.R.WithContext(ctx).Model(&Rental{}).Where("org_id = ?", orgID).Count(&n).Error; err != nil {
		return nil, 0, err
	}
	var rs []Rental
	// The statuses are constants, so spelling them into the ORDER BY is safe.
	live := "'" + strings.Join(statusStrings(LiveRentalStatuses), "','") + "'"
	err := db.R.WithContext(ctx).Where("org_id = ?", orgID).
		Order("CASE WHEN status IN (" + live + ") THEN 0 ELSE 1 END, id DESC").
		Offset(offset).Limit(limit).Find(&rs).Error
	return rs, n, err
}

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
