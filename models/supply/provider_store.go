package supply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
)

// ProviderSlugTaken reports whether a provider already has the slug, in tx.
func ProviderSlugTaken(tx *gorm.DB, slug string) (bool, error) {
	return slugTaken(tx, "providers", slug)
}

// DatacenterSlugTaken reports whether a datacentre already has the slug, in tx.
func DatacenterSlugTaken(tx *gorm.DB, slug string) (bool, error) {
	return slugTaken(tx, "datacenters", slug)
}

func slugTaken(tx *gorm.DB, table, slug string) (bool, error) {
	var n int64
	err := tx.Table(table).Where("slug = ?", slug).Count(&n).Error
	return n > 0, err
}

// InsertProvider creates a provider in tx; a slug taken meanwhile is a
// unique violation (IsUniqueViolation), for the caller to retry.
func InsertProvider(tx *gorm.DB, p *models.Provider) error { return tx.Create(p).Error }

// ProviderByIDIn returns a provider in tx (or on a pool, such as db.R),
// or ENOTFOUND.
func ProviderByIDIn(tx *gorm.DB, id int64) (*models.Provider, error) {
	var p models.Provider
	err := tx.First(&p, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("provider")
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// ProviderByID returns a provider as last written, or ENOTFOUND.
func ProviderByID(ctx context.Context, db *models.DB, id int64) (*models.Provider, error) {
	return ProviderByIDIn(db.W.WithContext(ctx), id)
}

// SetProviderProfile stores a provider's names, contact, licence and bank
// details (the fields of p) in tx; empty values clear them.
func SetProviderProfile(tx *gorm.DB, p *models.Provider) error {
	return tx.Model(&models.Provider{}).Where("id = ?", p.ID).Updates(map[string]any{
		"name_zh": p.NameZH, "name_en": p.NameEN,
		"contact_name": p.ContactName, "contact_phone": p.ContactPhone, "contact_email": p.ContactEmail,
		"licence_no": p.LicenceNo, "bank_name": p.BankName, "bank_account_name": p.BankAccountName, "bank_account_no": p.BankAccountNo,
	}).Error
}

// RenameOrg sets an organisation's name in tx.
func RenameOrg(tx *gorm.DB, orgID int64, name string) error {
	return tx.Model(&models.Org{}).Where("id = ?", orgID).Update("name", name).Error
}

// SetProviderStripeAccount stores a new Stripe Connect account, without
// capabilities yet, on a provider that has none, in tx; stored is false
// when one was stored meanwhile (two clicks at once), which stays.
func SetProviderStripeAccount(tx *gorm.DB, providerID int64, accountID string) (stored bool, err error) {
	res := tx.Model(&models.Provider{}).Where("id = ? AND stripe_account_id = ''", providerID).
		Updates(map[string]any{"stripe_account_id": accountID, "stripe_charges_enabled": false, "stripe_payouts_enabled": false})
	return res.RowsAffected > 0, res.Error
}

// InsertDatacenter creates a datacentre in tx; a slug taken meanwhile is
// a unique violation.
func InsertDatacenter(tx *gorm.DB, dc *models.Datacenter) error { return tx.Create(dc).Error }

// DatacenterOf returns a provider's own datacentre, or ENOTFOUND (also for
// another provider's or a shared one).
func DatacenterOf(tx *gorm.DB, providerID, dcID int64) (*models.Datacenter, error) {
	var dc models.Datacenter
	err := tx.Where("id = ? AND provider_id = ?", dcID, providerID).First(&dc).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("datacentre")
	}
	return &dc, err
}

// SetDatacenterDetails stores a datacentre's names, place, tier and
// uplink (the fields of dc) in tx; empty values clear them.
func SetDatacenterDetails(tx *gorm.DB, dc *models.Datacenter) error {
	return tx.Model(&models.Datacenter{}).Where("id = ?", dc.ID).Updates(map[string]any{
		"name_zh": dc.NameZH, "name_en": dc.NameEN, "city": dc.City, "district_zh": dc.DistrictZH, "district_en": dc.DistrictEN,
		"region": dc.Region, "tier": dc.Tier, "uplink_gbps": dc.UplinkGbps, "storage": dc.Storage,
	}).Error
}

// ReplaceLatencies swaps a datacentre's figures of one source for ls
// (whose DatacenterID and Source it sets) in tx. A city that has a figure
// of another source keeps it: a measured figure beats a declared one.
func ReplaceLatencies(tx *gorm.DB, dcID int64, source string, ls []models.DatacenterLatency) error {
	if err := tx.Where("datacenter_id = ? AND source = ?", dcID, source).Delete(&models.DatacenterLatency{}).Error; err != nil {
		return err
	}
	for _, l := range ls {
		var n int64
		if err := tx.Model(&models.DatacenterLatency{}).Where("datacenter_id = ? AND from_city = ?", dcID, l.FromCity).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		l.DatacenterID, l.Source = dcID, source
		if err := tx.Create(&l).Error; err != nil {
			return err
		}
	}
	return nil
}

// DatacentersOfProvider returns the datacentres a provider created or has
// nodes (not removed) in, oldest first.
func DatacentersOfProvider(ctx context.Context, db *models.DB, providerID int64) ([]models.Datacenter, error) {
	var dcs []models.Datacenter
	err := db.R.WithContext(ctx).Where("provider_id = ? OR id IN (SELECT datacenter_id FROM nodes WHERE provider_id = ? AND status <> ?)",
		providerID, providerID, models.NodeRemoved).Order("id").Find(&dcs).Error
	return dcs, err
}

// LatenciesOf returns the latency figures of the datacentres, by
// datacentre and city.
func LatenciesOf(ctx context.Context, db *models.DB, dcIDs []int64) ([]models.DatacenterLatency, error) {
	var ls []models.DatacenterLatency
	err := db.R.WithContext(ctx).Where("datacenter_id IN ?", dcIDs).Order("datacenter_id, from_city").Find(&ls).Error
	return ls, err
}

// ProviderNodeCounts counts a provider's nodes (not removed) in each of
// the datacentres; a datacentre without any is absent.
func ProviderNodeCounts(ctx context.Context, db *models.DB, providerID int64, dcIDs []int64) (map[int64]int, error) {
	var rows []struct {
		DatacenterID int64
		N            int
	}
	if err := db.R.WithContext(ctx).Model(&models.Node{}).Select("datacenter_id, COUNT(*) AS n").
		Where("datacenter_id IN ? AND provider_id = ? AND status <> ?", dcIDs, providerID, models.NodeRemoved).
		Group("datacenter_id").Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[int64]int, len(rows))
	for _, r := range rows {
		out[r.DatacenterID] = r.N
	}
	return out, nil
}

// NodeProviderID returns the provider of a node, or ENOTFOUND.
func NodeProviderID(ctx context.Context, db *models.DB, nodeID int64) (int64, error) {
	return providerIDOf(ctx, db, "nodes", "node", nodeID)
}

// OfferProviderID returns the provider of an offer, or ENOTFOUND.
func OfferProviderID(ctx context.Context, db *models.DB, offerID int64) (int64, error) {
	return providerIDOf(ctx, db, "offers", "offer", offerID)
}

// DatacenterProviderID returns the provider that created a datacentre, or
// ENOTFOUND (also for a shared one, which no provider owns).
func DatacenterProviderID(ctx context.Context, db *models.DB, dcID int64) (int64, error) {
	return providerIDOf(ctx, db, "datacenters", "datacentre", dcID)
}

func providerIDOf(ctx context.Context, db *models.DB, table, what string, id int64) (int64, error) {
	var pid *int64
	if err := db.R.WithContext(ctx).Table(table).Select("provider_id").Where("id = ?", id).Scan(&pid).Error; err != nil {
		return 0, err
	}
	if pid == nil {
		return 0, apperr.NotFound(what)
	}
	return *pid, nil
}

// InsertNode creates a node in tx; created is false when the provider
// already has a node of that name, seen by a count or, for one added at
// the same time (a double click), by UNIQUE (provider_id, name). On
// PostgreSQL the latter aborts tx, so on false the caller must end it.
func InsertNode(tx *gorm.DB, n *models.Node) (created bool, err error) {
	var dup int64
	if err := tx.Model(&models.Node{}).Where("provider_id = ? AND name = ?", n.ProviderID, n.Name).Count(&dup).Error; err != nil {
		return false, err
	}
	if dup > 0 {
		return false, nil
	}
	if err := tx.Create(n).Error; err != nil {
		if ledger.IsUniqueViolation(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// SetNodeStatus sets a node's status in tx (RemoveNode removes one).
func SetNodeStatus(tx *gorm.DB, nodeID int64, status models.NodeStatus) error {
	return tx.Model(&models.Node{}).Where("id = ?", nodeID).Update("status", status).Error
}

// RemoveNode removes a node in tx: its agent is turned away (no tokens),
// its offers are paused, its open incidents close (nothing would close
// them later), and its GPUs keep their history but free their UUIDs, so
// that the same host can be added again as a new node.
func RemoveNode(tx *gorm.DB, nodeID int64, now time.Time) error {
	if err := tx.Exec(`UPDATE gpus SET uuid = uuid || ? WHERE node_id = ?`, fmt.Sprintf(" (removed node %d)", nodeID), nodeID).Error; err != nil {
		return err
	}
	if err := tx.Model(&models.Offer{}).Where("node_id = ?", nodeID).
		Updates(map[string]any{"status": models.OfferPaused, "listing_note": "node removed", "updated_at": now}).Error; err != nil {
		return err
	}
	if err := tx.Model(&models.Incident{}).Where("node_id = ? AND closed_at IS NULL", nodeID).Update("closed_at", now).Error; err != nil {
		return err
	}
	return tx.Model(&models.Node{}).Where("id = ?", nodeID).Updates(map[string]any{
		"status": models.NodeRemoved, "removed_at": now, "reg_token_hash": nil, "cred_hash": nil,
	}).Error
}

// NodesOfProvider returns a provider's nodes, removed ones last.
func NodesOfProvider(ctx context.Context, db *models.DB, providerID int64) ([]models.Node, error) {
	var nodes []models.Node
	err := db.R.WithContext(ctx).Where("provider_id = ?", providerID).
		Order(clause.OrderBy{Expression: clause.Expr{SQL: "CASE WHEN status = ? THEN 1 ELSE 0 END, id", Vars: []any{models.NodeRemoved}, WithoutParentheses: true}}).
		Find(&nodes).Error
	return nodes, err
}

// WorkingNodesOfProvider returns a provider's nodes that are not removed,
// oldest first.
func WorkingNodesOfProvider(ctx context.Context, db *models.DB, providerID int64) ([]models.Node, error) {
	var nodes []models.Node
	err := db.R.WithContext(ctx).Where("provider_id = ? AND status <> ?", providerID, models.NodeRemoved).Order("id").Find(&nodes).Error
	return nodes, err
}

// DatacentersByIDs returns the datacentres with the ids, in no order.
func DatacentersByIDs(ctx context.Context, db *models.DB, ids []int64) ([]models.Datacenter, error) {
	var dcs []models.Datacenter
	err := db.R.WithContext(ctx).Where("id IN ?", ids).Find(&dcs).Error
	return dcs, err
}

// DatacenterByID returns a datacentre, or ENOTFOUND.
func DatacenterByID(ctx context.Context, db *models.DB, id int64) (*models.Datacenter, error) {
	var dc models.Datacenter
	err := db.R.WithContext(ctx).First(&dc, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("datacentre")
	}
	if err != nil {
		return nil, err
	}
	return &dc, nil
}

// NodeGPUStates is how many GPUs of a node are in a state.
type NodeGPUStates struct {
	NodeID int64
	State  models.GPUState
	N      int
}

// NodeGPUStateCounts counts the GPUs of the nodes by node and state.
func NodeGPUStateCounts(ctx context.Context, db *models.DB, nodeIDs []int64) ([]NodeGPUStates, error) {
	var out []NodeGPUStates
	err := db.R.WithContext(ctx).Model(&models.GPU{}).Select("node_id, state, COUNT(*) AS n").Where("node_id IN ?", nodeIDs).
		Group("node_id, state").Scan(&out).Error
	return out, err
}

// LiveRentalCounts counts the live rentals on each of the nodes; a node
// without any is absent.
func LiveRentalCounts(ctx context.Context, db *models.DB, nodeIDs []int64) (map[int64]int, error) {
	var rows []struct {
		NodeID int64
		N      int
	}
	if err := db.R.WithContext(ctx).Model(&models.Rental{}).Select("node_id, COUNT(*) AS n").Where("node_id IN ? AND status IN ?", nodeIDs, models.LiveRentalStatuses).
		Group("node_id").Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[int64]int, len(rows))
	for _, r := range rows {
		out[r.NodeID] = r.N
	}
	return out, nil
}

// NodeGPUs returns a node's GPUs by index, on the read handle.
func NodeGPUs(ctx context.Context, db *models.DB, nodeID int64) ([]models.GPU, error) {
	return GPUsOfNode(db.R.WithContext(ctx), nodeID)
}

// IncidentsOfNode returns a node's latest incidents, newest first.
func IncidentsOfNode(ctx context.Context, db *models.DB, nodeID int64, limit int) ([]models.Incident, error) {
	var is []models.Incident
	err := db.R.WithContext(ctx).Where("node_id = ?", nodeID).Order("opened_at DESC, id DESC").Limit(limit).Find(&is).Error
	return is, err
}

// BenchmarkReportsOfNode returns a node's latest benchmark reports, newest first.
func BenchmarkReportsOfNode(ctx context.Context, db *models.DB, nodeID int64, limit int) ([]models.BenchmarkReport, error) {
	var rs []models.BenchmarkReport
	err := db.R.WithContext(ctx).Where("node_id = ?", nodeID).Order("measured_at DESC, id DESC").Limit(limit).Find(&rs).Error
	return rs, err
}

// RentalsOfNode returns a node's latest rentals, newest first.
func RentalsOfNode(ctx context.Context, db *models.DB, nodeID int64, limit int) ([]models.Rental, error) {
	var rs []models.Rental
	err := db.R.WithContext(ctx).Where("node_id = ?", nodeID).Order("created_at DESC, id DESC").Limit(limit).Find(&rs).Error
	return rs, err
}

// OffersOfNode returns the offers on a node, oldest first.
func OffersOfNode(ctx context.Context, db *models.DB, nodeID int64) ([]models.Offer, error) {
	var os []models.Offer
	err := db.R.WithContext(ctx).Where("node_id = ?", nodeID).Order("id").Find(&os).Error
	return os, err
}

// OffersOfProvider returns a provider's offers, newest first.
func OffersOfProvider(ctx context.Context, db *models.DB, providerID int64) ([]models.Offer, error) {
	var os []models.Offer
	err := db.R.WithContext(ctx).Where("provider_id = ?", providerID).Order("id DESC").Find(&os).Error
	return os, err
}

// InsertOffer creates an offer in tx.
func InsertOffer(tx *gorm.DB, o *models.Offer) error { return tx.Create(o).Error }

// SetOfferTerms stores an offer's sizes, prices (storage and no-GPU
// prices and the interruptible floor too), discounts, minimum duration, SLA tiers, whether it allows
// custom images, status and update time (the fields of o) in tx, and,
// when relisted, whether it waits for its node and why.
func SetOfferTerms(tx *gorm.DB, o *models.Offer, relisted bool) error {
	up := map[string]any{"max_gpus": o.MaxGPUs, "vcpu_per_gpu": o.VCPUPerGPU, "ram_gb_per_gpu": o.RAMGBPerGPU, "disk_gb": o.DiskGB,
		"interconnect": o.Interconnect, "price_per_gpu_hour_fen": o.PricePerGPUHourFen,
		"weekly_price_per_gpu_fen": o.WeeklyPricePerGPUFen, "monthly_price_per_gpu_fen": o.MonthlyPricePerGPUFen,
		"offpeak_discount_pct": o.OffpeakDiscountPct, "student_discount_pct": o.StudentDiscountPct, "min_duration_s": o.MinDurationS,
		"sla_tiers": o.SLATiers, "status": o.Status, "updated_at": o.UpdatedAt, "custom_images": o.CustomImages,
		"storage_price_per_gb_month_fen": o.StoragePricePerGBMonthFen, "no_gpu_price_per_hour_fen": o.NoGPUPricePerHourFen,
		"interruptible_floor_per_gpu_hour_fen": o.InterruptibleFloorPerGPUHourFen}
	if relisted {
		up["awaiting_node"], up["listing_note"] = o.AwaitingNode, o.ListingNote
	}
	return tx.Model(&models.Offer{}).Where("id = ?", o.ID).Updates(up).Error
}

// HeldGPUTerms returns, for each GPU of the node a rental holds now, the
// term of that rental.
func HeldGPUTerms(ctx context.Context, db *models.DB, nodeID int64) (map[int64]pricing.Term, error) {
	var held []struct {
		GPUID int64 `gorm:"column:gpu_id"`
		Term  pricing.Term
	}
	if err := db.R.WithContext(ctx).Raw(`SELECT rg.gpu_id, r.term FROM rental_gpus rg JOIN rentals r ON r.id = rg.rental_id
		WHERE rg.node_id = ? AND rg.released_at IS NULL`, nodeID).Scan(&held).Error; err != nil {
		return nil, err
	}
	out := make(map[int64]pricing.Term, len(held))
	for _, h := range held {
		out[h.GPUID] = h.Term
	}
	return out, nil
}

// LiveRentalsOfTerms returns the live rentals on a node with one of the terms.
func LiveRentalsOfTerms(ctx context.Context, db *models.DB, nodeID int64, terms []pricing.Term) ([]models.Rental, error) {
	var rs []models.Rental
	err := db.R.WithContext(ctx).Where("node_id = ? AND status IN ? AND term IN ?", nodeID, models.LiveRentalStatuses, terms).Find(&rs).Error
	return rs, err
}

// GPUHoldsBetween returns a node's GPU attachments that overlap the time
// from to to (attached before to, not released by from).
func GPUHoldsBetween(ctx context.Context, db *models.DB, nodeID int64, from, to time.Time) ([]models.RentalGPU, error) {
	var rows []models.RentalGPU
	err := db.R.WithContext(ctx).Where("node_id = ? AND (released_at IS NULL OR released_at > ?) AND attached_at < ?", nodeID, from, to).Find(&rows).Error
	return rows, err
}

// EarningLeg is one ledger entry of a provider's rental: the transaction
// and account kinds and the amount.
type EarningLeg struct {
	RentalID  int64
	TxnKind   string
	AccKind   string
	AmountFen int64
}

// EarningLegs returns the entries of the provider's rentals posted from
// from (inclusive) to to on its payable and receivable accounts and on
// platform revenue, by rental and transaction.
func EarningLegs(ctx context.Context, db *models.DB, providerID int64, from, to time.Time) ([]EarningLeg, error) {
	var legs []EarningLeg
	err := db.R.WithContext(ctx).Raw(`SELECT t.rental_id AS rental_id, t.kind AS txn_kind, a.kind AS acc_kind, e.amount_fen AS amount_fen
		FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id JOIN ledger_accounts a ON a.id = e.account_id
		JOIN rentals r ON r.id = t.rental_id
		WHERE r.provider_id = ? AND t.created_at >= ? AND t.created_at < ?
		AND ((a.kind IN ? AND a.org_id = ?) OR a.kind = ?)
		ORDER BY t.rental_id, t.id`,
		providerID, from.UTC(), to.UTC(), []string{ledger.AccProviderPayable, ledger.AccProviderReceivable}, providerID, ledger.AccPlatformRevenue).Scan(&legs).Error
	return legs, err
}

// RentalWithModel is a rental with its offer's GPU model.
type RentalWithModel struct {
	models.Rental
	GPUModel string `gorm:"column:gpu_model"`
}

// RentalsWithModel returns the rentals with the ids, in no order.
func RentalsWithModel(ctx context.Context, db *models.DB, ids []int64) ([]RentalWithModel, error) {
	var out []RentalWithModel
	err := db.R.WithContext(ctx).Raw(`SELECT r.*, o.gpu_model FROM rentals r JOIN offers o ON o.id = r.offer_id WHERE r.id IN ?`, ids).Scan(&out).Error
	return out, err
}
