package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
)

// OfferRow is an offer joined with what the offer list shows about it.
type OfferRow struct {
	Offer
	// Datacenter and Provider are shared by every row of the same one, so
	// an index of many offers holds one copy of each.
	Datacenter *Datacenter
	Provider   *Provider
	// Latency maps a city slug to the round-trip time from it in ms.
	Latency map[string]float64
	// Report is the headline of the node's latest benchmark report, nil
	// when it has none. Offers on one node share it.
	Report *ReportHeadline
	// Uptime30dPct is the node's uptime over the last 30 days, nil until
	// the reliability job has computed it.
	Uptime30dPct *float64
}

// ReportHeadline is what offers show of a benchmark report: its per-GPU
// headline figures (nil when that load was absent) and whether it came
// from a simulated agent.
type ReportHeadline struct {
	ID           int64
	BF16TFLOPS   *float64
	FP16TFLOPS   *float64
	MemBWGBps    *float64
	PctOfNominal *float64
	Simulated    bool
	// Refused is set when the server refused the report (its reason is
	// on the report's page); its figures are then all nil.
	Refused    bool
	MeasuredAt time.Time
}

// NodeFacts is one node's latest report headline and uptime.
type NodeFacts struct {
	Report *ReportHeadline
	Uptime *float64
}

// nodeFactsSQL reads the latest report headline and the uptime of nodes
// that have either; callers add the condition choosing the nodes.
const nodeFactsSQL = `SELECT n.id AS node_id, n.uptime_30d_pct, r.id AS report_id, r.bf16_tflops, r.fp16_tflops,
	r.mem_bw_gbps, r.pct_of_nominal, r.simulated, r.refused_reason, r.measured_at
	FROM nodes n LEFT JOIN benchmark_reports r ON r.id = n.latest_report_id
	WHERE (n.latest_report_id IS NOT NULL OR n.uptime_30d_pct IS NOT NULL) AND `

// NodeFactsOf runs nodeFactsSQL with cond (a condition on nodes n) and
// maps the rows by node id.
func NodeFactsOf(tx *gorm.DB, cond string, args ...any) (map[int64]NodeFacts, error) {
	var rows []struct {
		NodeID        int64
		Uptime30dPct  *float64 `gorm:"column:uptime_30d_pct"`
		ReportID      *int64
		BF16TFLOPS    *float64 `gorm:"column:bf16_tflops"`
		FP16TFLOPS    *float64 `gorm:"column:fp16_tflops"`
		MemBWGBps     *float64 `gorm:"column:mem_bw_gbps"`
		PctOfNominal  *float64 `gorm:"column:pct_of_nominal"`
		Simulated     *bool
		RefusedReason *string
		MeasuredAt    *time.Time
	}
	if err := tx.Raw(nodeFactsSQL+cond, args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("node reports and uptime: %w", err)
	}
	out := make(map[int64]NodeFacts, len(rows))
	for _, r := range rows {
		f := NodeFacts{Uptime: r.Uptime30dPct}
		if r.ReportID != nil {
			f.Report = &ReportHeadline{ID: *r.ReportID, BF16TFLOPS: r.BF16TFLOPS, FP16TFLOPS: r.FP16TFLOPS,
				MemBWGBps: r.MemBWGBps, PctOfNominal: r.PctOfNominal, Simulated: r.Simulated != nil && *r.Simulated,
				Refused: r.RefusedReason != nil && *r.RefusedReason != ""}
			if r.MeasuredAt != nil {
				f.Report.MeasuredAt = *r.MeasuredAt
			}
		}
		out[r.NodeID] = f
	}
	return out, nil
}

// PublicOfferSQL selects the offers the public list shows (arguments:
// OfferListed, false): listed by the provider, not waiting for their
// node's agent, on a node that is not draining or removed, of a provider
// that is a demo one or approved and not suspended.
const PublicOfferSQL = `status = ? AND awaiting_node = ?
	AND node_id IN (SELECT id FROM nodes WHERE status = 'active')
	AND provider_id IN (SELECT p.id FROM providers p LEFT JOIN orgs o ON o.id = p.org_id
		WHERE p.org_id IS NULL OR (o.status = 'approved' AND o.suspended_at IS NULL))`

// PublicOfferByID returns an offer the public list shows (see
// PublicOfferSQL), as OfferByID does; a paused offer, one waiting for its
// node, and one of an unverified or suspended provider are ENOTFOUND, so
// that their page, quote and rent form are not reachable by id either.
func (db *DB) PublicOfferByID(ctx context.Context, id int64) (OfferRow, error) {
	var n int64
	if err := db.R.WithContext(ctx).Model(&Offer{}).Where("id = ? AND "+PublicOfferSQL, id, OfferListed, false).Count(&n).Error; err != nil {
		return OfferRow{}, err
	}
	if n == 0 {
		return OfferRow{}, apperr.NotFound(fmt.Sprintf("offer %d", id))
	}
	return db.OfferByID(ctx, id)
}

// OfferByID returns one offer, listed or not, with its datacentre, provider,
// latency table, and its node's latest benchmark report and 30-day uptime.
// It returns an ENOTFOUND error when there is none.
func (db *DB) OfferByID(ctx context.Context, id int64) (OfferRow, error) {
	var o Offer
	err := db.R.WithContext(ctx).First(&o, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return OfferRow{}, apperr.NotFound(fmt.Sprintf("offer %d", id))
	}
	if err != nil {
		return OfferRow{}, err
	}
	row := OfferRow{Offer: o, Datacenter: &Datacenter{}, Provider: &Provider{}}
	if err := db.R.WithContext(ctx).First(row.Datacenter, o.DatacenterID).Error; err != nil {
		return OfferRow{}, err
	}
	if err := db.R.WithContext(ctx).First(row.Provider, o.ProviderID).Error; err != nil {
		return OfferRow{}, err
	}
	facts, err := NodeFactsOf(db.R.WithContext(ctx), `n.id = ?`, o.NodeID)
	if err != nil {
		return OfferRow{}, err
	}
	row.Report, row.Uptime30dPct = facts[o.NodeID].Report, facts[o.NodeID].Uptime
	row.Latency, err = db.latencies(ctx, o.DatacenterID)
	return row, err
}

func (db *DB) latencies(ctx context.Context, dcID int64) (map[string]float64, error) {
	var lats []DatacenterLatency
	if err := db.R.WithContext(ctx).Where("datacenter_id = ?", dcID).Find(&lats).Error; err != nil {
		return nil, err
	}
	m := make(map[string]float64, len(lats))
	for _, l := range lats {
		m[l.FromCity] = l.RTTms
	}
	return m, nil
}

// DatacenterBySlug returns a datacentre and its latency table, or an
// ENOTFOUND error.
func (db *DB) DatacenterBySlug(ctx context.Context, slug string) (Datacenter, map[string]float64, error) {
	var d Datacenter
	err := db.R.WithContext(ctx).Where("slug = ?", slug).First(&d).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return d, nil, apperr.NotFound("datacentre " + slug)
	}
	if err != nil {
		return d, nil, err
	}
	lat, err := db.latencies(ctx, d.ID)
	return d, lat, err
}

// Datacenters returns every datacentre, by city then slug.
func (db *DB) Datacenters(ctx context.Context) ([]Datacenter, error) {
	var dcs []Datacenter
	err := db.R.WithContext(ctx).Order("city, slug").Find(&dcs).Error
	return dcs, err
}

// RefreshAvailability recomputes every offer's available GPUs from the
// state of its node's GPUs and bumps the offers version when any changed.
// It returns the number of offers whose figure changed.
func (db *DB) RefreshAvailability(ctx context.Context) (int64, error) {
	var changed int64
	err := db.Tx(ctx, func(tx *gorm.DB) error {
		// One pass over the GPUs, grouped per node and model, joined to the
		// offers (a correlated count per offer took seconds at 100k offers).
		now := db.Now().UTC()
		// RETURNING names the offers changed, for the offer index's log.
		var ids, gone []int64
		if err := tx.Raw(`UPDATE offers SET available_gpus = f.n, updated_at = ?
			FROM (SELECT g.node_id, g.gpu_model, COUNT(*) FILTER (WHERE g.state = 'free' AND n.health <> 'silent') AS n
				FROM gpus g JOIN nodes n ON n.id = g.node_id GROUP BY g.node_id, g.gpu_model) AS f
			WHERE f.node_id = offers.node_id AND f.gpu_model = offers.gpu_model AND offers.available_gpus <> f.n
			RETURNING id`, now).Scan(&ids).Error; err != nil {
			return err
		}
		// Offers whose node has no GPUs of their model left have none free.
		if err := tx.Raw(`UPDATE offers SET available_gpus = 0, updated_at = ? WHERE available_gpus <> 0
			AND NOT EXISTS (SELECT 1 FROM gpus g WHERE g.node_id = offers.node_id AND g.gpu_model = offers.gpu_model)
			RETURNING id`, now).Scan(&gone).Error; err != nil {
			return err
		}
		ids = append(ids, gone...)
		changed = int64(len(ids))
		if changed > 0 {
			return OffersChanged(tx, OfferScope{Offers: ids})
		}
		return nil
	})
	return changed, err
}

// SetGPUState changes one GPU's state (used by operators and tests until
// rentals and health checks drive it), along the transition table only
// (ECONFLICT otherwise: an unhealthy GPU is not marked busy).
func (db *DB) SetGPUState(ctx context.Context, uuid string, state GPUState) error {
	if _, ok := gpuTransitions[state]; !ok {
		return apperr.Invalid("state", "unknown GPU state "+string(state))
	}
	return db.Tx(ctx, func(tx *gorm.DB) error {
		var g GPU
		if err := tx.Where("uuid = ?", uuid).First(&g).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return apperr.NotFound("GPU " + uuid)
			}
			return err
		}
		if !g.State.CanMoveTo(state) {
			return apperr.Errorf(apperr.ECONFLICT, "GPU %s is %s and cannot become %s", uuid, g.State, state)
		}
		res := tx.Model(&GPU{}).Where("id = ? AND state = ?", g.ID, g.State).Update("state", state)
		if res.Error == nil && res.RowsAffected == 0 {
			return apperr.Errorf(apperr.ECONFLICT, "GPU %s changed meanwhile; try again", uuid)
		}
		return res.Error
	})
}
