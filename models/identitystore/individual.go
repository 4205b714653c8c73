// Individuals' verifications with their sealed ID numbers, the SMS codes
// that confirm a phone number (and count the sending throttles), and the
// SMS outbox (migration 00033).

package identitystore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/apperr"
	"suanli/models"
)

// Statuses of a user's real-name verification. A user without a row is
// Unverified.
const (
	Unverified = "unverified"
	Pending    = "pending"
	Verified   = "verified"
	Rejected   = "rejected"
)

// Methods of a verification.
const (
	// MethodSMS: the user gave a name, an ID number and a phone number
	// that an SMS code confirmed.
	MethodSMS = "sms"
	// MethodOperator: an operator made the account verified (suanli admin
	// create-user --verified-identity); no ID number is stored.
	MethodOperator = "operator"
)

// Individual is a user's real-name verification. The ID number is only
// ever held sealed (IDSealed), masked (IDMask) and as a keyed digest
// (IDDigest, the blind index that keeps one ID number on one verified
// account).
type Individual struct {
	UserID         int64 `gorm:"primaryKey;autoIncrement:false"`
	Status         string
	Method         string
	LegalName      string
	IDSealed       string
	IDMask         string
	IDDigest       *string
	Phone          string
	ConsentVersion string
	ConsentAt      *time.Time
	SubmittedAt    time.Time
	VerifiedAt     *time.Time
	RejectedAt     *time.Time
	RejectReason   string
	ReviewedBy     *int64
	UpdatedAt      time.Time
}

// TableName is the verifications' table.
func (Individual) TableName() string { return "identity_individuals" }

// IndividualOf returns the user's verification, or ENOTFOUND when the
// user never started one.
func IndividualOf(ctx context.Context, db *models.DB, userID int64) (*Individual, error) {
	return individualIn(db.W.WithContext(ctx), userID)
}

// LockIndividual is IndividualOf in tx, the row locked on PostgreSQL.
func LockIndividual(tx *gorm.DB, userID int64) (*Individual, error) {
	return individualIn(models.LockRow(tx), userID)
}

func individualIn(tx *gorm.DB, userID int64) (*Individual, error) {
	var in Individual
	err := tx.Where("user_id = ?", userID).First(&in).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("real-name verification")
	}
	if err != nil {
		return nil, err
	}
	return &in, nil
}

// StatusOf is the user's verification status: Unverified without a row.
func StatusOf(ctx context.Context, db *models.DB, userID int64) (string, error) {
	var st []string
	if err := db.R.WithContext(ctx).Model(&Individual{}).Where("user_id = ?", userID).Limit(1).Pluck("status", &st).Error; err != nil {
		return "", err
	}
	if len(st) == 0 {
		return Unverified, nil
	}
	return st[0], nil
}

// StatusesOf is the verification status of each of the users, by id
// (Unverified for those without a row).
func StatusesOf(ctx context.Context, db *models.DB, userIDs []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(userIDs))
	for _, id := range userIDs {
		out[id] = Unverified
	}
	if len(userIDs) == 0 {
		return out, nil
	}
	var rows []Individual
	if err := db.R.WithContext(ctx).Select("user_id", "status").Where("user_id IN ?", userIDs).Find(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.UserID] = r.Status
	}
	return out, nil
}

// SaveIndividual writes the user's verification in tx, replacing the
// one there was (a new start after a rejection, another phone number).
func SaveIndividual(tx *gorm.DB, in *Individual) error {
	return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "user_id"}}, UpdateAll: true}).Create(in).Error
}

// VerifiedElsewhere reports whether another user than userID holds a
// verified identity with one of the ID number's digests (one per key of
// the PII ring: while a rotation is under way a row may still hold the
// old key's digest).
func VerifiedElsewhere(tx *gorm.DB, digests []string, userID int64) (bool, error) {
	ids, err := VerifiedWith(tx, digests, userID)
	return len(ids) > 0, err
}

// VerifiedWith returns the users other than userID whose verified
// identity holds one of the digests, by id.
func VerifiedWith(tx *gorm.DB, digests []string, userID int64) ([]int64, error) {
	var ids []int64
	if len(digests) == 0 {
		return nil, nil
	}
	err := tx.Model(&Individual{}).Where("id_digest IN ? AND status = ? AND user_id <> ?", digests, Verified, userID).
		Order("user_id").Pluck("user_id", &ids).Error
	return ids, err
}

// MarkVerified records in tx that the user's pending verification is
// done. A unique violation means the same ID number was verified on
// another account meanwhile (ledger.IsUniqueViolation tells).
func MarkVerified(tx *gorm.DB, userID int64, now time.Time) error {
	return tx.Model(&Individual{}).Where("user_id = ?", userID).
		Updates(map[string]any{"status": Verified, "verified_at": now, "updated_at": now}).Error
}

// MarkRejected records in tx an admin's rejection of the user's
// verification, with the reason shown to the user.
func MarkRejected(tx *gorm.DB, userID, adminID int64, reason string, now time.Time) error {
	return tx.Model(&Individual{}).Where("user_id = ?", userID).
		Updates(map[string]any{"status": Rejected, "rejected_at": now, "reject_reason": reason, "reviewed_by": adminID, "updated_at": now}).Error
}

// DeleteIndividual removes in tx the user's verification row, and with
// it everything it held: the legal name, the sealed ID number, its mask
// and its blind-index digest, the phone number and the consent record (a
// withdrawal of consent). It reports whether there was a row.
func DeleteIndividual(tx *gorm.DB, userID int64) (bool, error) {
	res := tx.Where("user_id = ?", userID).Delete(&Individual{})
	return res.RowsAffected > 0, res.Error
}

// VoidOpenCodes marks in tx every unused code of the user's of a purpose
// used, so that none can confirm anything any more; the rows stay, as
// the sending throttles count them. It returns how many it voided.
func VoidOpenCodes(tx *gorm.DB, userID int64, purpose string, now time.Time) (int64, error) {
	res := tx.Model(&SMSCode{}).Where("user_id = ? AND purpose = ? AND used_at IS NULL", userID, purpose).Update("used_at", now)
	return res.RowsAffected, res.Error
}

// SealedPage returns up to limit verifications holding a sealed ID
// number, by user id after afterUserID: Reseal's walk, page by page.
func SealedPage(ctx context.Context, db *models.DB, afterUserID int64, limit int) ([]Individual, error) {
	var rows []Individual
	err := db.W.WithContext(ctx).Where("user_id > ? AND id_sealed <> ''", afterUserID).Order("user_id").Limit(limit).Find(&rows).Error
	return rows, err
}

// UpdateSealed stores in tx the user's ID number sealed again and its
// digest computed again (after a key rotation), if the row still holds
// the value that was read (sealedWas): a verification started meanwhile
// is left as it is.
func UpdateSealed(tx *gorm.DB, userID int64, sealedWas, sealed, digest string) (bool, error) {
	res := tx.Model(&Individual{}).Where("user_id = ? AND id_sealed = ?", userID, sealedWas).
		Updates(map[string]any{"id_sealed": sealed, "id_digest": digest})
	return res.RowsAffected == 1, res.Error
}

// UpdateSealedOnly is UpdateSealed keeping the row's digest: the reseal
// of an ID number whose new digest another verified row holds already
// (one ID number verified on two accounts, under two keys), so that the
// value no longer needs the old key while the duplicate waits for an
// admin.
func UpdateSealedOnly(tx *gorm.DB, userID int64, sealedWas, sealed string) (bool, error) {
	res := tx.Model(&Individual{}).Where("user_id = ? AND id_sealed = ?", userID, sealedWas).Update("id_sealed", sealed)
	return res.RowsAffected == 1, res.Error
}

// PaidInCash reports whether an organisation's wallet has ever had cash
// paid in: a top-up received, whatever was refused or refunded of it
// since. A wallet without one holds only credit nobody paid for (the
// trial credit, promotions, SLA credits).
func PaidInCash(ctx context.Context, db *models.DB, orgID int64) (bool, error) {
	var n int64
	err := db.R.WithContext(ctx).Model(&models.Topup{}).Where("org_id = ? AND status = ? AND received_fen > 0", orgID, models.TopupPaid).Count(&n).Error
	return n > 0, err
}
