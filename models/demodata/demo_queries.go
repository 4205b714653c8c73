package demodata

import (
	"context"
	"time"

	"gorm.io/gorm"

	"suanli/models"
)

// DemoProviderOwner is the account that takes over a seeded demo
// provider, and the profile details the provider portal shows for it.
type DemoProviderOwner struct {
	UserID, OrgID int64
	// Slug names the seeded provider.
	Slug                                     string
	ContactName, ContactEmail, LicenceNo     string
	BankName, BankAccountName, BankAccountNo string
}

// LinkDemoProvider hands a seeded demo provider to its demo owner, in tx:
// the user's email counts as verified, the organisation as approved (a
// demo has no reviewer) and the provider, unless another organisation
// owns it already, becomes the organisation's with the details given.
func LinkDemoProvider(tx *gorm.DB, o DemoProviderOwner, now time.Time) error {
	if err := tx.Model(&models.User{}).Where("id = ?", o.UserID).Update("email_verified_at", now).Error; err != nil {
		return err
	}
	if err := tx.Model(&models.Org{}).Where("id = ?", o.OrgID).Updates(map[string]any{
		"status": models.OrgApproved, "status_reason": "demo", "reviewed_at": now,
	}).Error; err != nil {
		return err
	}
	return tx.Model(&models.Provider{}).Where("slug = ? AND org_id IS NULL", o.Slug).Updates(map[string]any{
		"org_id": o.OrgID, "contact_name": o.ContactName, "contact_email": o.ContactEmail,
		"licence_no": o.LicenceNo, "bank_name": o.BankName,
		"bank_account_name": o.BankAccountName, "bank_account_no": o.BankAccountNo,
	}).Error
}

// DemoNodesToRun returns the demo nodes that are not removed, by id: the
// ones a --demo run gives a simulated agent.
func DemoNodesToRun(ctx context.Context, db *models.DB) ([]models.Node, error) {
	var ns []models.Node
	err := db.R.WithContext(ctx).Where("demo AND status <> ?", models.NodeRemoved).Order("id").Find(&ns).Error
	return ns, err
}

// GPUUUIDsOfNode returns the UUIDs of a node's GPUs in index order.
func GPUUUIDsOfNode(ctx context.Context, db *models.DB, nodeID int64) ([]string, error) {
	var uuids []string
	err := db.R.WithContext(ctx).Model(&models.GPU{}).Where("node_id = ?", nodeID).Order("idx").Pluck("uuid", &uuids).Error
	return uuids, err
}
