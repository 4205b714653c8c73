package models

import (
	"errors"
	"strings"

	"gorm.io/gorm"

	"suanli/apperr"
)

// ProviderByOrg returns the provider of an organisation, or ENOTFOUND.
func ProviderByOrg(tx *gorm.DB, orgID int64) (*Provider, error) {
	var p Provider
	err := tx.Where("org_id = ?", orgID).First(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("provider")
	}
	return &p, err
}

// ProviderApproved reports whether a provider may have offers listed:
// demo and synthetic providers (no organisation) always, others once a
// platform admin approved their organisation and while it is not suspended.
func ProviderApproved(tx *gorm.DB, providerID int64) (bool, error) {
	var row struct {
		OrgID       *int64
		Status      *string
		SuspendedAt *string
	}
	err := tx.Raw(`SELECT p.org_id, o.status, CAST(o.suspended_at AS TEXT) AS suspended_at
		FROM providers p LEFT JOIN orgs o ON o.id = p.org_id WHERE p.id = ?`, providerID).Scan(&row).Error
	if err != nil {
		return false, err
	}
	if row.OrgID == nil {
		return true, nil
	}
	return row.Status != nil && *row.Status == OrgApproved && row.SuspendedAt == nil, nil
}

// NodeOf returns a provider's node, or ENOTFOUND (also for another
// provider's node, so ids reveal nothing).
func NodeOf(tx *gorm.DB, providerID, nodeID int64) (*Node, error) {
	var n Node
	err := tx.Where("id = ? AND provider_id = ?", nodeID, providerID).First(&n).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("node")
	}
	return &n, err
}

// OfferOf returns a provider's offer, or ENOTFOUND.
func OfferOf(tx *gorm.DB, providerID, offerID int64) (*Offer, error) {
	var o Offer
	err := tx.Where("id = ? AND provider_id = ?", offerID, providerID).First(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("offer")
	}
	return &o, err
}

// LiveRentalsOnNode counts the rentals that hold, or are about to hold,
// GPUs of the node.
func LiveRentalsOnNode(tx *gorm.DB, nodeID int64) (int, error) {
	var n int64
	err := tx.Model(&Rental{}).Where("node_id = ? AND status IN ?", nodeID, LiveRentalStatuses).Count(&n).Error
	return int(n), err
}

// SellsTier reports whether the offer sells the SLA tier ("" is standard).
func (o *Offer) SellsTier(tier string) bool {
	if tier == "" {
		tier = "standard"
	}
	if o.SLATiers == "" {
		return tier == "standard"
	}
	for _, t := range strings.Split(o.SLATiers, ",") {
		if strings.TrimSpace(t) == tier {
			return true
		}
	}
	return false
}

// Visible reports whether the offer shows in the public list: listed,
// and not waiting for its node.
func (o *Offer) Visible() bool { return o.Status == OfferListed && !o.AwaitingNode }
