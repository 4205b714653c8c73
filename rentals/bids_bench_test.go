package rentals_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/bids"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/demodata"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// BenchmarkChooseVictims times what a rent does to decide whom to
// interrupt on a node with 100 interruptible rentals, one GPU each (the
// issue's target: ≤ 1 ms): the node's lock, its free GPUs, its bid
// holders (one query each) and bids.Victims, in a transaction rolled back.
func BenchmarkChooseVictims(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchChooseVictims(b, dbtest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) { benchChooseVictims(b, dbtest.Postgres(b)) })
}

var errRollback = errors.New("rollback")

func benchChooseVictims(b *testing.B, db *models.DB) {
	ctx := context.Background()
	nodeID, model := seedBidNode(b, db, 100)
	bid := int64(450)
	for b.Loop() {
		err := db.Tx(ctx, func(tx *gorm.DB) error {
			if err := rentalstore.LockNodeGPUs(tx, nodeID); err != nil {
				return err
			}
			free, err := rentalstore.FreeGPUsOnNode(tx, nodeID, model, 8)
			if err != nil {
				return err
			}
			holders, err := rentalstore.NodeBidHolders(tx, nodeID, model)
			if err != nil {
				return err
			}
			if len(holders) != 100 {
				return fmt.Errorf("%d holders, want 100", len(holders))
			}
			if _, ok := bids.Victims(holders, 8-len(free), &bid); !ok {
				return errors.New("no victims")
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			b.Fatal(err)
		}
	}
}

// seedBidNode adds to the demo market a node of n RTX 4090s, each held by
// its own running interruptible rental (bids from ¥3.00 up), and returns
// the node and its model.
func seedBidNode(b testing.TB, db *models.DB, n int) (int64, string) {
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		b.Fatal(err)
	}
	var base models.Offer
	if err := db.R.Where("gpu_model = ?", "rtx-4090").Order("id").First(&base).Error; err != nil {
		b.Fatal(err)
	}
	var slugs struct{ Provider, Datacenter string }
	if err := db.R.Raw(`SELECT p.slug AS provider, d.slug AS datacenter FROM providers p, datacenters d WHERE p.id = ? AND d.id = ?`,
		base.ProviderID, base.DatacenterID).Scan(&slugs).Error; err != nil {
		b.Fatal(err)
	}
	l := demodata.Listing{ProviderSlug: slugs.Provider, DatacenterSlug: slugs.Datacenter,
		Node: models.Node{Name: "bid-bench", GPUModel: base.GPUModel, Status: "active", Health: models.NodeHealthy, AgentInfo: "{}"}}
	for i := range n {
		l.GPUs = append(l.GPUs, models.GPU{Idx: i, UUID: fmt.Sprintf("GPU-b1d00000-0000-4000-8000-%012d", i), GPUModel: base.GPUModel,
			State: models.GPUBusy, Health: models.GPUHealthy, Telemetry: "{}"})
	}
	o := base
	o.ID, o.MaxGPUs, o.AvailableGPUs = 0, 8, 0
	l.Offer = o
	if err := demodata.CreateMarket(ctx, db, &demodata.MarketSeed{Listings: []demodata.Listing{l}}); err != nil {
		b.Fatal(err)
	}
	var node models.Node
	if err := db.R.Where("name = ?", "bid-bench").First(&node).Error; err != nil {
		b.Fatal(err)
	}
	var gs []models.GPU
	if err := db.R.Where("node_id = ?", node.ID).Order("idx").Find(&gs).Error; err != nil {
		b.Fatal(err)
	}
	var offer models.Offer
	if err := db.R.Where("node_id = ?", node.ID).First(&offer).Error; err != nil {
		b.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Hour)
	err := db.Tx(ctx, func(tx *gorm.DB) error {
		u := models.User{Email: "bids@example.com", Name: "Bids", Lang: "zh-CN", PasswordHash: "-", EmailVerifiedAt: &at, CreatedAt: at}
		if err := tx.Create(&u).Error; err != nil {
			return err
		}
		org := models.Org{Kind: models.OrgTeam, Name: "Bids", Personal: true, Status: models.OrgActive, CreatedAt: at}
		if err := tx.Create(&org).Error; err != nil {
			return err
		}
		for i, g := range gs {
			bid := int64(300 + i)
			r := models.Rental{OrgID: org.ID, UserID: u.ID, OfferID: offer.ID, ProviderID: offer.ProviderID, NodeID: &node.ID, GPUs: 1,
				SLA: "standard", Term: pricing.OnDemand, Status: models.RentalRunning, SSHPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBid bid",
				WorkspaceID: fmt.Sprintf("ws-bid-%03d", i), PricePerGPUHourFen: bid, BidPerGPUHourFen: &bid, RunningSince: &at, BilledUntil: &at,
				CreatedAt: at.Add(time.Duration(i) * time.Second), UpdatedAt: at}
			if err := tx.Create(&r).Error; err != nil {
				return err
			}
			if err := rentalstore.AttachRentalGPU(tx, r.ID, g.ID, node.ID, at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if db.Dialect == "postgres" {
		// As autovacuum would have by now: the planner sees the rows.
		if err := db.W.Exec(`ANALYZE`).Error; err != nil {
			b.Fatal(err)
		}
	}
	return node.ID, base.GPUModel
}
