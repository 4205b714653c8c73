package models

import (
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
)

// UserByIDIn returns the user in tx, or ENOTFOUND: what a transaction
// that changes the user reads, rather than the copy the request carries.
func UserByIDIn(tx *gorm.DB, id int64) (*User, error) {
	return userWhere(tx, "id = ?", id)
}

// OrgByIDIn returns an organisation in tx, or ENOTFOUND.
func OrgByIDIn(tx *gorm.DB, id int64) (*Org, error) {
	var o Org
	err := tx.First(&o, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("organisation")
	}
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// ConfirmLabAddress records in tx that a lab member proved the
// institutional address their membership names; confirmed is false when
// the membership names another address or there is none.
func ConfirmLabAddress(tx *gorm.DB, orgID, userID int64, eduEmail string, at time.Time) (confirmed bool, err error) {
	res := tx.Model(&Membership{}).Where("org_id = ? AND user_id = ? AND edu_email = ?", orgID, userID, eduEmail).Update("confirmed_at", at)
	return res.RowsAffected > 0, res.Error
}

// SetOrgBilling stores what receipts print (invoice title, tax id) and
// the hourly spending cap (nil: none) of an organisation in tx.
func SetOrgBilling(tx *gorm.DB, orgID int64, invoiceTitle, taxID string, hourlyCapFen *int64) error {
	return tx.Model(&Org{}).Where("id = ?", orgID).Updates(map[string]any{
		"invoice_title": invoiceTitle, "tax_id": taxID, "hourly_cap_fen": hourlyCapFen,
	}).Error
}
