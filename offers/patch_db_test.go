package offers

import (
	"context"
	"math/rand/v2"
	"testing"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
)

// TestRefreshPatchesWhatTheLogNames changes the demo market in the
// database at random, each change logged as writers log it (an offer, its
// node, its datacentre, its provider's organisation), and checks after
// each round that an index kept current by patches searches exactly as one
// loaded afresh, and that it patched rather than reloaded. Two indexes on
// one database are two replicas.
func TestRefreshPatchesWhatTheLogNames(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		replica := NewIndex(db)
		if _, err := replica.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		var offers []models.Offer
		if err := db.W.Order("id").Find(&offers).Error; err != nil {
			t.Fatal(err)
		}
		var dcs []int64
		db.W.Model(&models.Datacenter{}).Pluck("id", &dcs)
		rng := rand.New(rand.NewPCG(11, 12))
		change := func(fn func(tx *gorm.DB) error) {
			t.Helper()
			if err := db.Tx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		queries := probeQueries()
		for round := range 12 {
			for range 1 + rng.IntN(4) {
				o := offers[rng.IntN(len(offers))]
				switch rng.IntN(5) {
				case 0, 1: // price and free GPUs
					change(func(tx *gorm.DB) error {
						if err := tx.Model(&models.Offer{}).Where("id = ?", o.ID).Updates(map[string]any{
							"price_per_gpu_hour_fen": 1000 + rng.IntN(9000), "available_gpus": rng.IntN(o.MaxGPUs + 1)}).Error; err != nil {
							return err
						}
						return models.OffersChanged(tx, models.OfferScope{Offers: []int64{o.ID}})
					})
				case 2: // a node drains (its offers leave the list) or comes back
					status := []string{"active", "draining"}[rng.IntN(2)]
					change(func(tx *gorm.DB) error {
						if err := tx.Model(&models.Node{}).Where("id = ?", o.NodeID).Update("status", status).Error; err != nil {
							return err
						}
						return models.OffersChanged(tx, models.OfferScope{Nodes: []int64{o.NodeID}})
					})
				case 3: // a datacentre's published latency from Chengdu
					dc := dcs[rng.IntN(len(dcs))]
					change(func(tx *gorm.DB) error {
						if err := tx.Model(&models.DatacenterLatency{}).Where("datacenter_id = ? AND from_city = ?", dc, "chengdu").
							Update("rtt_ms", 1+rng.IntN(80)).Error; err != nil {
							return err
						}
						return models.OffersChanged(tx, models.OfferScope{Datacenters: []int64{dc}})
					})
				case 4: // an offer paused, or listed again
					status := []string{models.OfferListed, "paused"}[rng.IntN(2)]
					change(func(tx *gorm.DB) error {
						if err := tx.Model(&models.Offer{}).Where("id = ?", o.ID).Update("status", status).Error; err != nil {
							return err
						}
						return models.OffersChanged(tx, models.OfferScope{Offers: []int64{o.ID}})
					})
				}
			}
			if _, err := replica.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			fresh := NewIndex(db)
			if _, err := fresh.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if replica.Version() != fresh.Version() || replica.Len() != fresh.Len() {
				t.Fatalf("round %d: patched at %d with %d offers, loaded at %d with %d", round, replica.Version(), replica.Len(), fresh.Version(), fresh.Len())
			}
			for _, q := range queries {
				if a, b := describe(replica.Search(q)), describe(fresh.Search(q)); a != b {
					t.Fatalf("round %d query %s:\npatched %s\nloaded  %s", round, q.Values().Encode(), a, b)
				}
			}
		}
		if replica.Loads.Load() != 1 || replica.Patches.Load() != 12 {
			t.Errorf("%d whole loads and %d patches, want 1 and 12", replica.Loads.Load(), replica.Patches.Load())
		}
		// A change without a narrower scope, and a replica behind the
		// pruned log, load whole.
		change(models.BumpOffersVersion)
		if _, err := replica.Refresh(ctx); err != nil || replica.Loads.Load() != 2 {
			t.Fatalf("after an unscoped change: %d loads, %v", replica.Loads.Load(), err)
		}
		change(func(tx *gorm.DB) error {
			if err := models.OffersChanged(tx, models.OfferScope{Offers: []int64{offers[0].ID}}); err != nil {
				return err
			}
			return tx.Exec(`DELETE FROM offer_changes`).Error
		})
		if _, err := replica.Refresh(ctx); err != nil || replica.Loads.Load() != 3 {
			t.Fatalf("after a gap in the log: %d loads, %v", replica.Loads.Load(), err)
		}
	})
}
