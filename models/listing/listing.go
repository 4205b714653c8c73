// Package listing reads what the in-memory offer index holds: every listed
// offer at start-up, and afterwards only the offers that the offer change
// log (models.OffersChanged) says changed since the loaded version.
package listing

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"suanli/models"
)

// All returns every listed offer with its datacentre, provider, latency
// table, and its node's latest benchmark report and 30-day uptime, and the
// offers version they are current to. It reads in a few large queries
// rather than one per offer.
func All(ctx context.Context, db *models.DB) ([]models.OfferRow, int64, error) {
	var (
		rows    []models.OfferRow
		version int64
	)
	// One read transaction gives a consistent snapshot of the version and rows.
	err := db.R.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Raw(`SELECT version FROM market_versions WHERE name = 'offers'`).Scan(&version).Error; err != nil {
			return err
		}
		var offers []models.Offer
		if err := tx.Where(models.PublicOfferSQL, models.OfferListed, false).Order("id").Find(&offers).Error; err != nil {
			return err
		}
		var err error
		rows, err = complete(tx, offers, `n.id IN (SELECT node_id FROM offers WHERE `+models.PublicOfferSQL+`)`, models.OfferListed, false)
		return err
	})
	return rows, version, err
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
		var offers []models.Offer
		for c := range slices.Chunk(touched, inChunk) {
			var part []models.Offer
			if err := tx.Where("id IN ? AND "+models.PublicOfferSQL, c, models.OfferListed, false).Order("id").Find(&part).Error; err != nil {
				return err
			}
			offers = append(offers, part...)
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
