package platform

import (
	"context"
	"fmt"
	"strings"
	"time"

	"suanli/models"
)

// The aggregate queries behind the Prometheus gauges (metrics.Collector). Each
// is one GROUP BY over an indexed column, or a bounded range, so a scrape
// costs a few milliseconds even on a large rentals.

// StatusCount is a count of rows by one label.
type StatusCount struct {
	Status string
	N      int64
}

// RentalsByStatus counts rentals by status (rentals_status index).
func RentalsByStatus(ctx context.Context, db *models.DB) ([]StatusCount, error) {
	var out []StatusCount
	err := db.R.WithContext(ctx).Raw(`SELECT status, COUNT(*) AS n FROM rentals GROUP BY status ORDER BY status`).Scan(&out).Error
	return out, err
}

// GPUStateCount is the number of GPUs of one model in one city in one state.
type GPUStateCount struct {
	Model, City, State string
	N                  int64
}

// GPUsByModelCityState counts the GPUs of nodes that are not removed by
// catalogue model, datacentre city and state (free, busy, unhealthy).
func GPUsByModelCityState(ctx context.Context, db *models.DB) ([]GPUStateCount, error) {
	var out []GPUStateCount
	err := db.R.WithContext(ctx).Raw(`SELECT g.gpu_model AS model, d.city AS city, g.state AS state, COUNT(*) AS n
		FROM gpus g JOIN nodes n ON n.id = g.node_id JOIN datacenters d ON d.id = n.datacenter_id
		WHERE n.status <> ? GROUP BY g.gpu_model, d.city, g.state ORDER BY 1, 2, 3`, models.NodeRemoved).Scan(&out).Error
	return out, err
}

// TopupTotal is the number and sum of top-ups of one method in one status.
type TopupTotal struct {
	Method, Status string
	N, Fen         int64
}

// TopupTotals counts top-ups and sums their amounts by method and status
// (topups_status index).
func TopupTotals(ctx context.Context, db *models.DB) ([]TopupTotal, error) {
	var out []TopupTotal
	err := db.R.WithContext(ctx).Raw(`SELECT method, status, COUNT(*) AS n, COALESCE(SUM(amount_fen), 0) AS fen
		FROM topups GROUP BY method, status ORDER BY method, status`).Scan(&out).Error
	return out, err
}

// LedgerKindFen is the fen moved by ledger transactions of one kind.
type LedgerKindFen struct {
	Kind string
	Fen  int64
}

// LedgerSettledID is the id of the newest ledger transaction created
// before t (0 when none): every transaction up to it has committed or
// never will, given that no transaction stays open longer than now − t.
// Transaction ids are handed out before commit, so on PostgreSQL a newer
// id can be visible while an older one is still open; counting only up to
// a settled id never skips one.
func LedgerSettledID(ctx context.Context, db *models.DB, t time.Time) (int64, error) {
	var ids []int64
	err := db.R.WithContext(ctx).Raw(`SELECT id FROM ledger_txns WHERE created_at < ? ORDER BY id DESC LIMIT 1`, t.UTC()).Scan(&ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// LedgerMaxID is the newest ledger transaction's id (0 when none).
func LedgerMaxID(ctx context.Context, db *models.DB) (int64, error) {
	var ids []int64
	err := db.R.WithContext(ctx).Raw(`SELECT COALESCE(MAX(id), 0) FROM ledger_txns`).Scan(&ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// LedgerVolume sums, by transaction kind, the positive side of every
// transaction with after < id ≤ upTo (a balanced transaction's positive
// entries are what it moved). It reads only that range of the
// ledger_entries_txn index, so a caller that remembers upTo adds up the
// whole ledger once and then only what is new.
func LedgerVolume(ctx context.Context, db *models.DB, after, upTo int64) ([]LedgerKindFen, error) {
	var out []LedgerKindFen
	if upTo <= after {
		return nil, nil
	}
	err := db.R.WithContext(ctx).Raw(`SELECT t.kind AS kind, COALESCE(SUM(e.amount_fen), 0) AS fen
		FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
		WHERE e.txn_id > ? AND e.txn_id <= ? AND e.amount_fen > 0 GROUP BY t.kind ORDER BY t.kind`, after, upTo).Scan(&out).Error
	return out, err
}

// NodesByHealth counts the nodes that are not removed by health.
func NodesByHealth(ctx context.Context, db *models.DB) ([]StatusCount, error) {
	var out []StatusCount
	err := db.R.WithContext(ctx).Raw(`SELECT health AS status, COUNT(*) AS n FROM nodes WHERE status <> ? GROUP BY health ORDER BY health`, models.NodeRemoved).Scan(&out).Error
	return out, err
}

// HeartbeatAges summarises how long ago the agents of nodes that are not
// removed last sent a heartbeat, as of now: how many have ever sent one,
// the sum of their ages, how many are at most each of bounds seconds old,
// and the oldest age among nodes not (yet) silent.
type HeartbeatAges struct {
	Count        int64
	SumSeconds   float64
	AtMost       []int64 // per bound
	OldestActive float64
}

// NodeHeartbeatAges computes HeartbeatAges in the database: one pass over
// the nodes, however many there are (a synthetic market has one per offer).
func NodeHeartbeatAges(ctx context.Context, db *models.DB, now time.Time, bounds []float64) (HeartbeatAges, error) {
	age := `(julianday(?) - julianday(last_heartbeat_at)) * 86400.0`
	if db.Dialect == "postgres" {
		age = `EXTRACT(EPOCH FROM (CAST(? AS TIMESTAMPTZ) - last_heartbeat_at))`
	}
	var b strings.Builder
	b.WriteString(`SELECT COUNT(*), COALESCE(SUM(age), 0), COALESCE(MAX(CASE WHEN health <> ? THEN age END), 0)`)
	for _, x := range bounds {
		fmt.Fprintf(&b, `, COALESCE(SUM(CASE WHEN age <= %g THEN 1 ELSE 0 END), 0)`, x)
	}
	b.WriteString(` FROM (SELECT health, ` + age + ` AS age FROM nodes WHERE last_heartbeat_at IS NOT NULL AND status <> ?) ages`)
	row := db.R.WithContext(ctx).Raw(b.String(), models.NodeSilent, now.UTC(), models.NodeRemoved).Row()
	h := HeartbeatAges{AtMost: make([]int64, len(bounds))}
	dest := []any{&h.Count, &h.SumSeconds, &h.OldestActive}
	for i := range h.AtMost {
		dest = append(dest, &h.AtMost[i])
	}
	if err := row.Scan(dest...); err != nil {
		return h, fmt.Errorf("heartbeat ages: %w", err)
	}
	return h, nil
}

// JobStateCount is the number of River jobs of one kind in one state.
type JobStateCount struct {
	Kind, State string
	N           int64
}

// JobsByKindState counts the River jobs waiting, running, retrying or
// discarded by kind (completed jobs are left out: River keeps them a day
// and they are counted as they finish by the worker metrics). River's
// state index covers the filter.
func JobsByKindState(ctx context.Context, db *models.DB) ([]JobStateCount, error) {
	var out []JobStateCount
	err := db.R.WithContext(ctx).Raw(`SELECT kind, state, COUNT(*) AS n FROM river_job
		WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'discarded')
		GROUP BY kind, state ORDER BY kind, state`).Scan(&out).Error
	return out, err
}
