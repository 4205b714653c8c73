package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/supply"
	"suanli/pricing"
)

// demoNode seeds the demo market and returns one of its nodes with an
// offer on it.
func demoNode(t *testing.T, db *models.DB) (models.Node, models.Offer) {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	var o models.Offer
	if err := db.W.Order("id").First(&o).Error; err != nil {
		t.Fatal(err)
	}
	var n models.Node
	if err := db.W.First(&n, o.NodeID).Error; err != nil {
		t.Fatal(err)
	}
	return n, o
}

// A provider's own rows: slugs, profile, Stripe account, datacentres and
// their latencies, and who owns what.
func TestProviderAndDatacenterStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		_, org := storeOwner(t, db, "provider@example.com")
		now := time.Now().UTC()
		pr := &models.Provider{Slug: "acme", NameZH: "Acme", NameEN: "Acme", CreatedAt: now, OrgID: &org.ID}
		dc := &models.Datacenter{Slug: "acme-cd", NameZH: "成都", NameEN: "Chengdu", City: "chengdu", Region: "cn-southwest", Tier: "Tier III", UplinkGbps: 10, CreatedAt: now}
		storeTx(t, db, func(tx *gorm.DB) error {
			if taken, err := supply.ProviderSlugTaken(tx, "acme"); err != nil || taken {
				return fmt.Errorf("free slug taken: %v %v", taken, err)
			}
			if err := supply.InsertProvider(tx, pr); err != nil {
				return err
			}
			if taken, err := supply.ProviderSlugTaken(tx, "acme"); err != nil || !taken {
				return fmt.Errorf("used slug free: %v %v", taken, err)
			}
			dc.ProviderID = &pr.ID
			if err := supply.InsertDatacenter(tx, dc); err != nil {
				return err
			}
			if taken, err := supply.DatacenterSlugTaken(tx, "acme-cd"); err != nil || !taken {
				return fmt.Errorf("used datacentre slug free: %v %v", taken, err)
			}
			if _, err := supply.ProviderByIDIn(tx, 9999); apperr.Code(err) != apperr.ENOTFOUND {
				return fmt.Errorf("missing provider: %v", err)
			}
			next := *pr
			next.NameZH, next.NameEN, next.ContactName, next.BankAccountNo = "新名", "New", "Li", "6222 0000 1111"
			if err := supply.SetProviderProfile(tx, &next); err != nil {
				return err
			}
			if err := supply.RenameOrg(tx, org.ID, "New"); err != nil {
				return err
			}
			for i, want := range []bool{true, false} {
				if stored, err := supply.SetProviderStripeAccount(tx, pr.ID, fmt.Sprint("acct_", i)); err != nil || stored != want {
					return fmt.Errorf("stripe account #%d: %v %v", i, stored, err)
				}
			}
			return nil
		})
		got, err := supply.ProviderByID(ctx, db, pr.ID)
		if err != nil || got.NameZH != "新名" || got.NameEN != "New" || got.ContactName != "Li" || got.BankAccountNo != "6222 0000 1111" || got.StripeAccountID != "acct_0" {
			t.Errorf("provider %+v %v", got, err)
		}
		if o, _ := db.OrgByID(ctx, org.ID); o.Name != "New" {
			t.Errorf("org name %q", o.Name)
		}

		storeTx(t, db, func(tx *gorm.DB) error {
			if _, err := supply.DatacenterOf(tx, pr.ID+1, dc.ID); apperr.Code(err) != apperr.ENOTFOUND {
				return fmt.Errorf("another provider's datacentre: %v", err)
			}
			next := *dc
			next.NameEN, next.DistrictZH, next.UplinkGbps = "Chengdu 2", "", 100
			if err := supply.SetDatacenterDetails(tx, &next); err != nil {
				return err
			}
			// A measured figure stays; declared ones are replaced.
			if err := tx.Create(&models.DatacenterLatency{DatacenterID: dc.ID, FromCity: "beijing", RTTms: 30, Source: "agent"}).Error; err != nil {
				return err
			}
			if err := supply.ReplaceLatencies(tx, dc.ID, "declared", []models.DatacenterLatency{{FromCity: "shanghai", RTTms: 40}}); err != nil {
				return err
			}
			return supply.ReplaceLatencies(tx, dc.ID, "declared", []models.DatacenterLatency{{FromCity: "beijing", RTTms: 1}, {FromCity: "guangzhou", RTTms: 50}})
		})
		if got, err := supply.DatacenterByID(ctx, db, dc.ID); err != nil || got.NameEN != "Chengdu 2" || got.UplinkGbps != 100 {
			t.Errorf("datacentre %+v %v", got, err)
		}
		if _, err := supply.DatacenterByID(ctx, db, 9999); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("missing datacentre: %v", err)
		}
		ls, err := supply.LatenciesOf(ctx, db, []int64{dc.ID})
		if err != nil || len(ls) != 2 || ls[0].FromCity != "beijing" || ls[0].RTTms != 30 || ls[1].FromCity != "guangzhou" || ls[1].Source != "declared" {
			t.Errorf("latencies %+v %v", ls, err)
		}
		if id, err := supply.DatacenterProviderID(ctx, db, dc.ID); err != nil || id != pr.ID {
			t.Errorf("datacentre's provider %d %v", id, err)
		}
		if _, err := supply.DatacenterProviderID(ctx, db, 9999); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("missing datacentre's provider: %v", err)
		}
	})
}

// Nodes and offers: names are unique per provider, removal pauses offers,
// closes incidents and frees GPU UUIDs, and the lists and counts follow.
func TestNodeAndOfferStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		dn, do := demoNode(t, db)
		now := time.Now().UTC()
		n := &models.Node{ProviderID: dn.ProviderID, DatacenterID: dn.DatacenterID, Name: "new-node", Status: models.NodeActive, CreatedAt: now, Health: models.NodeUnknown, AgentInfo: "{}"}
		storeTx(t, db, func(tx *gorm.DB) error {
			for i, want := range []bool{true, false} {
				m := *n
				if created, err := supply.InsertNode(tx, &m); err != nil || created != want {
					return fmt.Errorf("insert #%d: %v %v", i, created, err)
				}
				if i == 0 {
					*n = m
				}
			}
			return nil
		})
		o := do
		o.ID, o.NodeID, o.Status, o.CreatedAt, o.UpdatedAt = 0, n.ID, models.OfferListed, now, now
		storeTx(t, db, func(tx *gorm.DB) error {
			if err := supply.InsertOffer(tx, &o); err != nil {
				return err
			}
			next := o
			next.MaxGPUs, next.PricePerGPUHourFen, next.SLATiers, next.Status, next.AwaitingNode, next.ListingNote = 1, 999, "standard", models.OfferPaused, true, "waiting"
			if err := supply.SetOfferTerms(tx, &next, false); err != nil {
				return err
			}
			if err := tx.Create(&models.GPU{NodeID: n.ID, Idx: 0, UUID: "GPU-new-0", GPUModel: do.GPUModel, State: models.GPUFree, Health: models.GPUHealthy}).Error; err != nil {
				return err
			}
			return tx.Create(&models.Incident{NodeID: n.ID, Kind: models.IncidentNodeSilent, OpenedAt: now}).Error
		})
		got, err := supply.OfferOf(db.W, n.ProviderID, o.ID)
		if err != nil || got.MaxGPUs != 1 || got.PricePerGPUHourFen != 999 || got.Status != models.OfferPaused || got.AwaitingNode || got.ListingNote != "" {
			t.Errorf("offer after terms (not relisted) %+v %v", got, err)
		}
		storeTx(t, db, func(tx *gorm.DB) error {
			next := *got
			next.Status, next.AwaitingNode, next.ListingNote = models.OfferListed, true, "waiting"
			return supply.SetOfferTerms(tx, &next, true)
		})
		if got, _ := supply.OfferOf(db.W, n.ProviderID, o.ID); got.Status != models.OfferListed || !got.AwaitingNode || got.ListingNote != "waiting" {
			t.Errorf("relisted offer %+v", got)
		}
		if id, err := supply.NodeProviderID(ctx, db, n.ID); err != nil || id != n.ProviderID {
			t.Errorf("node's provider %d %v", id, err)
		}
		if id, err := supply.OfferProviderID(ctx, db, o.ID); err != nil || id != n.ProviderID {
			t.Errorf("offer's provider %d %v", id, err)
		}
		if _, err := supply.NodeProviderID(ctx, db, 99999); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("missing node's provider: %v", err)
		}
		if os, err := supply.OffersOfNode(ctx, db, n.ID); err != nil || len(os) != 1 || os[0].ID != o.ID {
			t.Errorf("offers of node %+v %v", os, err)
		}
		if os, err := supply.OffersOfProvider(ctx, db, n.ProviderID); err != nil || len(os) < 2 || os[0].ID != o.ID {
			t.Errorf("offers of provider, newest first: %d %v", len(os), err)
		}
		if gs, err := supply.NodeGPUs(ctx, db, n.ID); err != nil || len(gs) != 1 {
			t.Errorf("gpus %+v %v", gs, err)
		}
		if is, err := supply.IncidentsOfNode(ctx, db, n.ID, 50); err != nil || len(is) != 1 {
			t.Errorf("incidents %+v %v", is, err)
		}
		counts := func() map[string]int {
			rows, err := supply.NodeGPUStateCounts(ctx, db, []int64{n.ID, dn.ID})
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]int{}
			for _, r := range rows {
				out[fmt.Sprintf("%v %s", r.NodeID == n.ID, r.State)] += r.N
			}
			return out
		}
		if c := counts(); c["true free"] != 1 || c["false free"] == 0 {
			t.Errorf("gpu states %v", c)
		}
		if c, err := supply.ProviderNodeCounts(ctx, db, n.ProviderID, []int64{n.DatacenterID}); err != nil || c[n.DatacenterID] < 2 {
			t.Errorf("node counts %v %v", c, err)
		}

		storeTx(t, db, func(tx *gorm.DB) error {
			if err := supply.SetNodeStatus(tx, n.ID, models.NodeDraining); err != nil {
				return err
			}
			return supply.RemoveNode(tx, n.ID, now)
		})
		var removed models.Node
		db.W.First(&removed, n.ID)
		if removed.Status != models.NodeRemoved || removed.RemovedAt == nil || removed.RegTokenHash != nil || removed.CredHash != nil {
			t.Errorf("removed node %+v", removed)
		}
		if got, _ := supply.OfferOf(db.W, n.ProviderID, o.ID); got.Status != models.OfferPaused || got.ListingNote != "node removed" {
			t.Errorf("offer on a removed node %+v", got)
		}
		if is, _ := supply.IncidentsOfNode(ctx, db, n.ID, 50); len(is) != 1 || is[0].ClosedAt == nil {
			t.Errorf("incident of a removed node %+v", is)
		}
		if gs, _ := supply.NodeGPUs(ctx, db, n.ID); len(gs) != 1 || gs[0].UUID != fmt.Sprintf("GPU-new-0 (removed node %d)", n.ID) {
			t.Errorf("gpu of a removed node %+v", gs)
		}
		nodes, err := supply.NodesOfProvider(ctx, db, n.ProviderID)
		if err != nil || len(nodes) < 2 || nodes[len(nodes)-1].ID != n.ID {
			t.Errorf("nodes, removed last: %+v %v", nodes, err)
		}
		working, err := supply.WorkingNodesOfProvider(ctx, db, n.ProviderID)
		if err != nil || len(working) != len(nodes)-1 {
			t.Errorf("working nodes %d of %d: %v", len(working), len(nodes), err)
		}
		for i := 1; i < len(working); i++ {
			if working[i-1].ID > working[i].ID {
				t.Errorf("working nodes out of order")
			}
		}
		dcs, err := supply.DatacentersByIDs(ctx, db, []int64{n.DatacenterID})
		if err != nil || len(dcs) != 1 {
			t.Errorf("datacentres by id %+v %v", dcs, err)
		}
		// The demo's shared datacentre is the provider's through its nodes.
		dcs, err = supply.DatacentersOfProvider(ctx, db, n.ProviderID)
		if err != nil || len(dcs) == 0 {
			t.Errorf("datacentres of provider %+v %v", dcs, err)
		}
	})
}

// Rentals on a node: live counts, held GPUs and their terms, term rentals,
// attachments over a time, the node's rentals and reports, and a
// provider's earning legs.
func TestNodeRentalReads(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		n, o := demoNode(t, db)
		u, org := storeOwner(t, db, "renter@example.com")
		now := time.Now().UTC().Truncate(time.Second)
		var gpus []models.GPU
		db.W.Where("node_id = ?", n.ID).Order("idx").Find(&gpus)
		if len(gpus) < 2 {
			t.Fatalf("demo node has %d GPUs", len(gpus))
		}
		mk := func(term pricing.Term, status models.RentalStatus, gpu models.GPU, attached time.Time, released *time.Time) models.Rental {
			r := models.Rental{OrgID: org.ID, UserID: u.ID, OfferID: o.ID, ProviderID: n.ProviderID, NodeID: &n.ID, GPUs: 1, SLA: "standard",
				Term: term, Status: status, WorkspaceID: fmt.Sprint("ws-", attached.Unix()), PricePerGPUHourFen: 100, CreatedAt: attached, UpdatedAt: attached}
			storeTx(t, db, func(tx *gorm.DB) error {
				if err := tx.Create(&r).Error; err != nil {
					return err
				}
				return tx.Create(&models.RentalGPU{RentalID: r.ID, GPUID: gpu.ID, NodeID: n.ID, AttachedAt: attached, ReleasedAt: released}).Error
			})
			return r
		}
		old := now.Add(-48 * time.Hour)
		ended := now.Add(-24 * time.Hour)
		live := mk(pricing.OnDemand, models.RentalRunning, gpus[0], now.Add(-time.Hour), nil)
		week := mk(pricing.Week, models.RentalRunning, gpus[1], now.Add(-2*time.Hour), nil)
		done := mk(pricing.OnDemand, models.RentalStopped, gpus[0], old, &ended)

		if c, err := supply.LiveRentalCounts(ctx, db, []int64{n.ID}); err != nil || c[n.ID] != 2 {
			t.Errorf("live rentals %v %v", c, err)
		}
		if held, err := supply.HeldGPUTerms(ctx, db, n.ID); err != nil || len(held) != 2 || held[gpus[0].ID] != pricing.OnDemand || held[gpus[1].ID] != pricing.Week {
			t.Errorf("held %v %v", held, err)
		}
		if rs, err := supply.LiveRentalsOfTerms(ctx, db, n.ID, []pricing.Term{pricing.Week, pricing.Month}); err != nil || len(rs) != 1 || rs[0].ID != week.ID {
			t.Errorf("term rentals %+v %v", rs, err)
		}
		// From 12 hours ago: the ended rental's attachment is out.
		if rows, err := supply.GPUHoldsBetween(ctx, db, n.ID, now.Add(-12*time.Hour), now); err != nil || len(rows) != 2 {
			t.Errorf("holds %+v %v", rows, err)
		}
		if rows, _ := supply.GPUHoldsBetween(ctx, db, n.ID, now.Add(-72*time.Hour), now); len(rows) != 3 {
			t.Errorf("holds over three days: %d", len(rows))
		}
		if rs, err := supply.RentalsOfNode(ctx, db, n.ID, 2); err != nil || len(rs) != 2 || rs[0].ID != live.ID || rs[1].ID != week.ID {
			t.Errorf("rentals of node, newest first: %+v %v", rs, err)
		}
		rm, err := supply.RentalsWithModel(ctx, db, []int64{live.ID, done.ID})
		if err != nil || len(rm) != 2 || rm[0].GPUModel != o.GPUModel || rm[0].GPUs != 1 {
			t.Errorf("rentals with model %+v %v", rm, err)
		}

		// A charge of the live rental: provider payable and platform
		// revenue legs are the provider's, the wallet's is not.
		storeTx(t, db, func(tx *gorm.DB) error {
			if err := ledger.Post(tx, &ledger.LedgerTxn{Kind: "test", CreatedAt: now},
				ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -1000},
				ledger.Leg{Kind: ledger.AccWallet, OrgID: org.ID, AmountFen: 1000}); err != nil {
				return err
			}
			return ledger.Post(tx, &ledger.LedgerTxn{Kind: "charge", RentalID: &live.ID, CreatedAt: now},
				ledger.Leg{Kind: ledger.AccWallet, OrgID: org.ID, AmountFen: -100},
				ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: n.ProviderID, AmountFen: 80},
				ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: 20})
		})
		legs, err := supply.EarningLegs(ctx, db, n.ProviderID, now.Add(-time.Hour), now.Add(time.Hour))
		if err != nil || len(legs) != 2 {
			t.Fatalf("legs %+v %v", legs, err)
		}
		for _, l := range legs {
			if l.RentalID != live.ID || l.TxnKind != "charge" || (l.AccKind == ledger.AccProviderPayable) != (l.AmountFen == 80) {
				t.Errorf("leg %+v", l)
			}
		}
		if legs, _ := supply.EarningLegs(ctx, db, n.ProviderID, now.Add(time.Hour), now.Add(2*time.Hour)); len(legs) != 0 {
			t.Errorf("legs out of the period: %+v", legs)
		}

		if err := db.W.Create(&models.BenchmarkReport{NodeID: n.ID, GPUModel: o.GPUModel, GPUs: 1, Trigger: "manual", Nominal: "{}", Report: "{}", MeasuredAt: now, CreatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		if rs, err := supply.BenchmarkReportsOfNode(ctx, db, n.ID, 20); err != nil || len(rs) == 0 || !rs[0].MeasuredAt.Equal(now) {
			t.Errorf("reports %+v %v", rs, err)
		}
	})
}
