package supply

import (
	"errors"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// ProviderByOrg returns the provider of an organisation, or ENOTFOUND.
func ProviderByOrg(tx *gorm.DB, orgID int64) (*models.Provider, error) {
	var p models.Provider
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
	return row.Status != nil && *row.Status == models.OrgApproved && row.SuspendedAt == nil, nil
}

// NodeOf returns a provider's node, or ENOTFOUND (also for another
// provider's node, so ids reveal nothing).
func NodeOf(tx *gorm.DB, providerID, nodeID int64) (*models.Node, error) {
	var n models.Node
	err := tx.Where("id = ? AND provider_id = ?", nodeID, providerID).First(&n).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("node")
	}
	return &n, err
}

// OfferOf returns a provider's offer, or ENOTFOUND.
func OfferOf(tx *gorm.DB, providerID, offerID int64) (*models.Offer, error) {
	var o models.Offer
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
	err := tx.Model(&models.Rental{}).Where("node_id = ? AND status IN ?", nodeID, models.LiveRentalStatuses).Count(&n).Error
	return int(n), err
}
