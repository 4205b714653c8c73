// Package listing reads what the in-memory offer index holds: every listed
// offer at start-up, and afterwards only the offers that the offer change
// log (models.OffersChanged) says changed since the loaded version.
package listing

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"suanli/models"
)

// All returns every listed offer with its datacentre, provider, latency
// table, and its node's latest benchmark report and 30-day uptime, and the
// offers version they are current to.
func All(ctx context.Context, db *models.DB) ([]models.OfferRow, int64, error) {
	var rows []models.OfferRow
	version, err := Each(ctx, db, 10000, func(part []models.OfferRow) error {
		rows = append(rows, part...)
		return nil
	})
	return rows, version, err
}

// Each passes every listed offer (as All returns them) to fn, chunk at
// a time in id order, and returns the offers version they are current
// to: a caller that keeps something smaller than the rows (the offer
// index) never holds the whole catalogue's rows at once. One read
// transaction gives a consistent snapshot of the version and rows.
func Each(ctx context.Context, db *models.DB, chunk int, fn func([]models.OfferRow) error) (int64, error) {
	var version int64
	err := db.R.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Raw(`SELECT version FROM market_versions WHERE name = 'offers'`).Scan(&version).Error; err != nil {
			return err
		}
		in := interner{}
		for after := int64(0); ; {
			offers, err := listedRows(tx, in, "o.id > ? ORDER BY o.id LIMIT ?", after, chunk)
			if err != nil {
				return err
			}
			if len(offers) == 0 {
				return nil
			}
			after = offers[len(offers)-1].ID
			nodes := make([]int64, len(offers))
			for i := range offers {
				nodes[i] = offers[i].NodeID
			}
			rows, err := complete(tx, offers, `n.id IN ?`, distinct(nodes))
			if err != nil {
				return err
			}
			if err := fn(rows); err != nil {
				return err
			}
		}
	})
	return version, err
}

// OnNodes returns the listed offers on the given nodes, as All does.
func OnNodes(ctx context.Context, db *models.DB, nodes []int64) ([]models.OfferRow, error) {
	var rows []models.OfferRow
	err := db.R.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		offers, err := listedWhere(tx, "o.node_id IN ?", distinct(slices.Clone(nodes)))
		if err != nil {
			return err
		}
		rows, err = complete(tx, offers, `n.id IN ?`, distinct(slices.Clone(nodes)))
		return err
	})
	return rows, err
}

// Delta is what changed in the offer list between two offers versions.
type Delta struct {
	// Version is the offers version the delta brings the index to.
	Version int64
	// Full is set when the change log cannot say what changed (a change
	// logged as "all", versions pruned from the log, or more offers than
	// the caller wanted to patch): the caller reloads with All.
	Full bool
	// Touched is every offer the changes touched, listed or not; Rows are
	// the listed ones among them. An offer touched but not in Rows has
	// left the list.
	Touched []int64
	Rows    []models.OfferRow
}

// inChunk bounds the ids bound to one IN list (PostgreSQL takes at most
// 65,535 parameters per statement, SQLite 32,766).
const inChunk = 5000

// Since reads what changed after version from: the offers the change log
// names between from and the current version, and the listed rows among
// them. More than maxOffers touched is a Full delta.
func Since(ctx context.Context, db *models.DB, from int64, maxOffers int) (Delta, error) {
	var d Delta
	err := db.R.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Raw(`SELECT version FROM market_versions WHERE name = 'offers'`).Scan(&d.Version).Error; err != nil {
			return err
		}
		if d.Version == from {
			return nil
		}
		var log []struct {
			Version int64
			Kind    string
			RefID   int64
		}
		if err := tx.Raw(`SELECT version, kind, ref_id FROM offer_changes WHERE version > ? AND version <= ? ORDER BY version`,
			from, d.Version).Scan(&log).Error; err != nil {
			return err
		}
		// Every version writes at least one row: a version missing from
		// the log was pruned (or the index is ahead after a restore).
		seen := map[int64]bool{}
		by := map[string][]int64{}
		for _, l := range log {
			seen[l.Version] = true
			if l.Kind == models.ChangeAll {
				d.Full = true
				return nil
			}
			by[l.Kind] = append(by[l.Kind], l.RefID)
		}
		if from > d.Version || int64(len(seen)) != d.Version-from {
			d.Full = true
			return nil
		}
		touched, err := touchedOffers(tx, by)
		if err != nil {
			return err
		}
		if len(touched) > maxOffers {
			d.Full = true
			return nil
		}
		d.Touched = touched
		offers, err := listedWhere(tx, "o.id IN ?", touched)
		if err != nil {
			return err
		}
		nodes := make([]int64, 0, len(offers))
		for _, o := range offers {
			nodes = append(nodes, o.NodeID)
		}
		d.Rows, err = complete(tx, offers, `n.id IN ?`, distinct(nodes))
		return err
	})
	return d, err
}

// listedJoinSQL is models.PublicOfferSQL's rule as joins, for a few
// offers: SQLite evaluates PublicOfferSQL's IN subqueries whole (every
// active node) per statement, 25 ms at 100k offers, where these joins
// look up just the offers named.
const listedJoinSQL = `SELECT o.id, o.provider_id, o.node_id, o.datacenter_id, o.gpu_model, o.max_gpus, o.vcpu_per_gpu,
	o.ram_gb_per_gpu, o.disk_gb, o.interconnect, o.price_per_gpu_hour_fen, o.weekly_price_per_gpu_fen,
	o.monthly_price_per_gpu_fen, o.offpeak_discount_pct, o.student_discount_pct, o.available_gpus, o.status, o.demo,
	o.synthetic, o.created_at, o.updated_at, o.min_duration_s, o.sla_tiers, o.awaiting_node, o.listing_note,
	o.custom_images, o.storage_price_per_gb_month_fen, o.no_gpu_price_per_hour_fen, o.interruptible_floor_per_gpu_hour_fen
	FROM offers o
	JOIN nodes n ON n.id = o.node_id AND n.status = 'active'
	JOIN providers p ON p.id = o.provider_id
	LEFT JOIN orgs g ON g.id = p.org_id
	WHERE o.status = ? AND o.awaiting_node = ? AND (p.org_id IS NULL OR (g.status = 'approved' AND g.suspended_at IS NULL))
	AND `

// listedWhere returns the listed offers matching cond, whose one
// parameter is ids (bound in chunks), in id order.
func listedWhere(tx *gorm.DB, cond string, ids []int64) ([]models.Offer, error) {
	var offers []models.Offer
	in := interner{}
	for c := range slices.Chunk(ids, inChunk) {
		part, err := listedRows(tx, in, cond+" ORDER BY o.id", c)
		if err != nil {
			return nil, err
		}
		offers = append(offers, part...)
	}
	slices.SortFunc(offers, func(a, b models.Offer) int { return cmp.Compare(a.ID, b.ID) })
	return offers, nil
}

// listedRows runs listedJoinSQL with cond and scans the offers by hand:
// gorm's reflection took most of a whole load's time.
func listedRows(tx *gorm.DB, in interner, cond string, args ...any) ([]models.Offer, error) {
	rows, err := tx.Raw(listedJoinSQL+cond, append([]any{models.OfferListed, false}, args...)...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		out                          []models.Offer
		gpu, ic, status, tiers, note sql.RawBytes
	)
	for rows.Next() {
		var o models.Offer
		if err := rows.Scan(&o.ID, &o.ProviderID, &o.NodeID, &o.DatacenterID, &gpu, &o.MaxGPUs, &o.VCPUPerGPU,
			&o.RAMGBPerGPU, &o.DiskGB, &ic, &o.PricePerGPUHourFen, &o.WeeklyPricePerGPUFen,
			&o.MonthlyPricePerGPUFen, &o.OffpeakDiscountPct, &o.StudentDiscountPct, &o.AvailableGPUs, &status, &o.Demo,
			&o.Synthetic, &o.CreatedAt, &o.UpdatedAt, &o.MinDurationS, &tiers, &o.AwaitingNode, &note,
			&o.CustomImages, &o.StoragePricePerGBMonthFen, &o.NoGPUPricePerHourFen, &o.InterruptibleFloorPerGPUHourFen); err != nil {
			return nil, err
		}
		o.GPUModel, o.Interconnect, o.Status, o.SLATiers, o.ListingNote = in.of(gpu), in.of(ic), in.of(status), in.of(tiers), in.of(note)
		out = append(out, o)
	}
	return out, rows.Err()
}

// interner shares one copy of the strings that repeat across offers (the
// model, interconnect, status, SLA tiers): the index holds them for
// every offer.
type interner map[string]string

func (in interner) of(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in) < 4096 {
		in[s] = s
	}
	return s
}

// touchedOffers resolves logged changes to offer ids, listed or not (an
// offer that left the list must leave the index too), sorted.
func touchedOffers(tx *gorm.DB, by map[string][]int64) ([]int64, error) {
	conds := []struct{ kind, sql string }{
		{models.ChangeOffer, `id IN ?`},
		{models.ChangeNode, `node_id IN ?`},
		{models.ChangeDatacenter, `datacenter_id IN ?`},
		{models.ChangeProvider, `provider_id IN ?`},
		{models.ChangeOrg, `provider_id IN (SELECT id FROM providers WHERE org_id IN ?)`},
	}
	var ids []int64
	for _, c := range conds {
		for part := range slices.Chunk(distinct(by[c.kind]), inChunk) {
			var got []int64
			if err := tx.Raw(`SELECT id FROM offers WHERE `+c.sql, part).Scan(&got).Error; err != nil {
				return nil, err
			}
			ids = append(ids, got...)
		}
	}
	return distinct(ids), nil
}

func distinct(ids []int64) []int64 {
	slices.Sort(ids)
	return slices.Compact(ids)
}

// complete joins offers to their datacentres (with latencies), providers
// and node facts (read for the nodes nodeCond with args selects). Offers
// of one datacentre or provider share one copy of it.
func complete(tx *gorm.DB, offers []models.Offer, nodeCond string, args ...any) ([]models.OfferRow, error) {
	if len(offers) == 0 {
		return nil, nil
	}
	var dcIDs, provIDs []int64
	for _, o := range offers {
		dcIDs, provIDs = append(dcIDs, o.DatacenterID), append(provIDs, o.ProviderID)
	}
	dcIDs, provIDs = distinct(dcIDs), distinct(provIDs)
	var dcs []models.Datacenter
	var lats []models.DatacenterLatency
	var provs []models.Provider
	for c := range slices.Chunk(dcIDs, inChunk) {
		var part []models.Datacenter
		var partLats []models.DatacenterLatency
		if err := tx.Where("id IN ?", c).Find(&part).Error; err != nil {
			return nil, err
		}
		if err := tx.Where("datacenter_id IN ?", c).Find(&partLats).Error; err != nil {
			return nil, err
		}
		dcs, lats = append(dcs, part...), append(lats, partLats...)
	}
	for c := range slices.Chunk(provIDs, inChunk) {
		var part []models.Provider
		if err := tx.Where("id IN ?", c).Find(&part).Error; err != nil {
			return nil, err
		}
		provs = append(provs, part...)
	}
	type dcLat struct {
		dc  *models.Datacenter
		lat map[string]float64
	}
	dm := make(map[int64]*dcLat, len(dcs))
	for i := range dcs {
		dm[dcs[i].ID] = &dcLat{dc: &dcs[i], lat: map[string]float64{}}
	}
	for _, l := range lats {
		if d, ok := dm[l.DatacenterID]; ok {
			d.lat[l.FromCity] = l.RTTms
		}
	}
	pm := make(map[int64]*models.Provider, len(provs))
	for i := range provs {
		pm[provs[i].ID] = &provs[i]
	}
	facts, err := models.NodeFactsOf(tx, nodeCond, args...)
	if err != nil {
		return nil, err
	}
	rows := make([]models.OfferRow, len(offers))
	for i, o := range offers {
		d, ok := dm[o.DatacenterID]
		if !ok {
			return nil, fmt.Errorf("offer %d: datacentre %d missing", o.ID, o.DatacenterID)
		}
		f := facts[o.NodeID]
		rows[i] = models.OfferRow{Offer: o, Datacenter: d.dc, Provider: pm[o.ProviderID], Latency: d.lat,
			Report: f.Report, Uptime30dPct: f.Uptime}
	}
	return rows, nil
}
