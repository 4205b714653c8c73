package demodata

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/models"
)

// Listing is a node with its GPUs and the offer that lists them, as the
// seeders build it. Node, GPU and offer ids are filled in by CreateMarket.
type Listing struct {
	ProviderSlug   string
	DatacenterSlug string
	Node           models.Node
	GPUs           []models.GPU
	Offer          models.Offer
}

// MarketSeed is a batch of market records to create in one transaction.
type MarketSeed struct {
	Providers []models.Provider
	// Datacenters are created unless one with the same slug exists.
	Datacenters []models.Datacenter
	// Latencies by datacentre slug; each row's DatacenterID is filled in.
	Latencies map[string][]models.DatacenterLatency
	Listings  []Listing
}

// ProviderExists reports whether a provider with the slug exists.
func ProviderExists(ctx context.Context, db *models.DB, slug string) (bool, error) {
	var n int64
	err := db.R.WithContext(ctx).Model(&models.Provider{}).Where("slug = ?", slug).Count(&n).Error
	return n > 0, err
}

// CountSyntheticProviders returns how many synthetic providers exist, so a
// second --scale run names its providers after the first run's.
func CountSyntheticProviders(ctx context.Context, db *models.DB) (int64, error) {
	var n int64
	err := db.R.WithContext(ctx).Model(&models.Provider{}).Where("synthetic").Count(&n).Error
	return n, err
}

// CreateMarket creates the seed's records in one transaction (all or
// nothing) and bumps the offers version.
func CreateMarket(ctx context.Context, db *models.DB, s *MarketSeed) error {
	const batch = 500
	now := db.Now().UTC()
	return db.Tx(ctx, func(tx *gorm.DB) error {
		for i := range s.Datacenters {
			s.Datacenters[i].CreatedAt = now
		}
		if len(s.Datacenters) > 0 {
			if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "slug"}}, DoNothing: true}).
				Create(&s.Datacenters).Error; err != nil {
				return fmt.Errorf("datacentres: %w", err)
			}
		}
		dcIDs := map[string]int64{}
		var dcs []models.Datacenter
		if err := tx.Select("id", "slug").Find(&dcs).Error; err != nil {
			return err
		}
		for _, d := range dcs {
			dcIDs[d.Slug] = d.ID
		}
		var lats []models.DatacenterLatency
		for slug, ls := range s.Latencies {
			id, ok := dcIDs[slug]
			if !ok {
				return fmt.Errorf("latency for unknown datacentre %q", slug)
			}
			for _, l := range ls {
				l.DatacenterID = id
				lats = append(lats, l)
			}
		}
		if len(lats) > 0 {
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&lats, batch).Error; err != nil {
				return fmt.Errorf("latencies: %w", err)
			}
		}
		for i := range s.Providers {
			s.Providers[i].CreatedAt = now
		}
		if len(s.Providers) > 0 {
			if err := tx.CreateInBatches(&s.Providers, batch).Error; err != nil {
				return fmt.Errorf("providers: %w", err)
			}
		}
		provIDs := map[string]int64{}
		var provs []models.Provider
		if err := tx.Select("id", "slug").Find(&provs).Error; err != nil {
			return err
		}
		for _, p := range provs {
			provIDs[p.Slug] = p.ID
		}
		nodes := make([]models.Node, len(s.Listings))
		for i, l := range s.Listings {
			pid, ok := provIDs[l.ProviderSlug]
			if !ok {
				return fmt.Errorf("listing for unknown provider %q", l.ProviderSlug)
			}
			did, ok := dcIDs[l.DatacenterSlug]
			if !ok {
				return fmt.Errorf("listing in unknown datacentre %q", l.DatacenterSlug)
			}
			n := l.Node
			n.ProviderID, n.DatacenterID, n.CreatedAt = pid, did, now
			if n.Health == "" {
				// The column's default: gorm writes the empty string.
				n.Health = models.NodeUnknown
			}
			nodes[i] = n
		}
		if len(nodes) > 0 {
			if err := tx.CreateInBatches(&nodes, batch).Error; err != nil {
				return fmt.Errorf("nodes: %w", err)
			}
		}
		var gpus []models.GPU
		offers := make([]models.Offer, len(s.Listings))
		for i := range s.Listings {
			l := &s.Listings[i]
			l.Node = nodes[i]
			for _, g := range l.GPUs {
				g.NodeID = nodes[i].ID
				gpus = append(gpus, g)
			}
			o := l.Offer
			o.ProviderID, o.NodeID, o.DatacenterID = nodes[i].ProviderID, nodes[i].ID, nodes[i].DatacenterID
			o.CreatedAt, o.UpdatedAt = now, now
			offers[i] = o
		}
		if len(gpus) > 0 {
			if err := tx.CreateInBatches(&gpus, batch).Error; err != nil {
				return fmt.Errorf("gpus: %w", err)
			}
		}
		if len(offers) > 0 {
			if err := tx.CreateInBatches(&offers, batch).Error; err != nil {
				return fmt.Errorf("offers: %w", err)
			}
		}
		for i := range s.Listings {
			s.Listings[i].Offer = offers[i]
		}
		return models.BumpOffersVersion(tx)
	})
}
