package identitystore

import (
	"context"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"suanli/apperr"
	"suanli/models"
)

// OrgStatus is where an organisation's verification submission is.
type OrgStatus string

// The statuses of an organisation's verification submission (migration
// 00035). Only OrgVerified counts: an organisation is verified exactly
// when one of its submissions is.
const (
	// OrgPending: waiting for a platform admin's review.
	OrgPending OrgStatus = "pending"
	// OrgVerified: a platform admin approved it (or an operator vouched
	// for the organisation).
	OrgVerified OrgStatus = "verified"
	// OrgRejected: refused, with a reason the organisation sees; it may
	// submit again.
	OrgRejected OrgStatus = "rejected"
	// OrgReset: was verified until a platform admin reopened it; the
	// organisation submits again.
	OrgReset OrgStatus = "reset"
)

// Sources of an organisation's verification.
const (
	// SourceForm: submitted on the organisation's page, with a licence.
	SourceForm = "form"
	// SourceOperator: an operator vouched for the organisation (the
	// command line, the demo); no licence is stored.
	SourceOperator = "operator"
)

// OrgVerification is one verification submission of an organisation. Its
// licence file is stored apart (OrgLicence), sealed.
type OrgVerification struct {
	ID     int64
	OrgID  int64
	Status OrgStatus
	Source string
	// CreditCode is the normalised unified social credit code; OrgName
	// the registered name; LegalRep the legal representative's name.
	CreditCode string
	OrgName    string
	LegalRep   string
	// LicenceType is png, jpeg or pdf; LicenceBytes the file's size.
	LicenceType  string
	LicenceBytes int64
	// ConsentVersion is the privacy notice the submitter agreed to, and
	// ConsentAt when.
	ConsentVersion string
	ConsentAt      *time.Time
	SubmittedBy    *int64
	SubmittedAt    time.Time
	ReviewedBy     *int64
	ReviewedAt     *time.Time
	// Reason is why it was rejected or reset, shown to the organisation.
	Reason string
}

// TableName is the submissions' table.
func (OrgVerification) TableName() string { return "identity_org_verifications" }

// OrgLicence is a submission's licence file, sealed under the PII key
// ring (the caller seals; this package never holds a key).
type OrgLicence struct {
	VerificationID int64 `gorm:"primaryKey;autoIncrement:false"`
	Sealed         string
}

// TableName is the sealed licences' table.
func (OrgLicence) TableName() string { return "identity_org_licences" }

// orgUnique reports whether err is a unique-constraint violation on either
// database.
func orgUnique(err error) bool {
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint") || strings.Contains(s, "duplicate key") || strings.Contains(s, "23505")
}

// ErrOrgOpen is InsertOrgVerification's refusal when the organisation
// already has a submission pending (or a verification in force): the
// database's unique indexes decide, so two submissions at once store one.
func ErrOrgOpen() *apperr.Error {
	return &apperr.Error{Code: apperr.ECONFLICT, Message: "the organisation's verification is already pending or done", Key: "orgverify.err.open"}
}

// InsertOrgVerification stores a submission in tx; one while another is
// pending (or, for a verified one, while another is verified) is
// ErrOrgOpen. On PostgreSQL a refused insert leaves tx unusable: the
// caller returns the error and its transaction rolls back.
func InsertOrgVerification(tx *gorm.DB, v *OrgVerification) error {
	err := tx.Create(v).Error
	if err != nil && orgUnique(err) {
		return ErrOrgOpen()
	}
	return err
}

// InsertOrgLicence stores a submission's sealed licence in tx.
func InsertOrgLicence(tx *gorm.DB, verificationID int64, sealed string) error {
	return tx.Create(&OrgLicence{VerificationID: verificationID, Sealed: sealed}).Error
}

// OrgLicenceSealed returns a submission's sealed licence in tx, or
// ENOTFOUND (an operator's verification has none).
func OrgLicenceSealed(tx *gorm.DB, verificationID int64) (string, error) {
	var l OrgLicence
	err := tx.Where("verification_id = ?", verificationID).First(&l).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", apperr.NotFound("licence")
	}
	return l.Sealed, err
}

// SetOrgLicenceSealed replaces a sealed licence in tx (a key rotation's
// reseal), only while it is still old: changed is false when another
// reseal got there first.
func SetOrgLicenceSealed(tx *gorm.DB, verificationID int64, old, sealed string) (changed bool, err error) {
	res := tx.Model(&OrgLicence{}).Where("verification_id = ? AND sealed = ?", verificationID, old).Update("sealed", sealed)
	return res.RowsAffected == 1, res.Error
}

// LicenceRef names a sealed licence: what resealing it needs for its
// context, without its (large) content.
type LicenceRef struct {
	VerificationID int64
	OrgID          int64
}

// OrgLicencesAfter returns up to limit sealed licences' references with a
// verification id above afterID, in id order: a reseal walks them in
// batches, reading one file at a time.
func OrgLicencesAfter(ctx context.Context, db *models.DB, afterID int64, limit int) ([]LicenceRef, error) {
	var out []LicenceRef
	err := db.W.WithContext(ctx).Table("identity_org_licences l").
		Joins("JOIN identity_org_verifications v ON v.id = l.verification_id").
		Where("l.verification_id > ?", afterID).Order("l.verification_id").Limit(limit).
		Select("l.verification_id, v.org_id").Scan(&out).Error
	return out, err
}

// OrgVerificationByID returns a submission, or ENOTFOUND.
func OrgVerificationByID(ctx context.Context, db *models.DB, id int64) (*OrgVerification, error) {
	return orgVerificationWhere(db.W.WithContext(ctx), "id = ?", id)
}

// OrgVerificationForUpdate returns a submission in tx, locked on
// PostgreSQL, or ENOTFOUND.
func OrgVerificationForUpdate(tx *gorm.DB, id int64) (*OrgVerification, error) {
	return orgVerificationWhere(models.LockRow(tx), "id = ?", id)
}

func orgVerificationWhere(q *gorm.DB, where string, args ...any) (*OrgVerification, error) {
	var v OrgVerification
	err := q.Where(where, args...).Order("id DESC").First(&v).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("organisation verification")
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// LatestOrgVerification returns an organisation's newest submission, or
// ENOTFOUND when it never submitted one.
func LatestOrgVerification(ctx context.Context, db *models.DB, orgID int64) (*OrgVerification, error) {
	return LatestOrgVerificationIn(db.W.WithContext(ctx), orgID)
}

// LatestOrgVerificationIn is LatestOrgVerification in tx.
func LatestOrgVerificationIn(tx *gorm.DB, orgID int64) (*OrgVerification, error) {
	return orgVerificationWhere(tx, "org_id = ?", orgID)
}

// DecideOrgVerification moves a submission from one status to another in
// tx, recording who and when (and why: the reason, shown to the
// organisation); changed is false when it no longer has the status from
// (another admin decided first).
func DecideOrgVerification(tx *gorm.DB, id int64, from, to OrgStatus, by int64, at time.Time, reason string) (changed bool, err error) {
	res := tx.Model(&OrgVerification{}).Where("id = ? AND status = ?", id, from).Updates(map[string]any{
		"status": to, "reviewed_by": by, "reviewed_at": at, "reason": reason,
	})
	if res.Error != nil && orgUnique(res.Error) {
		return false, ErrOrgOpen()
	}
	return res.RowsAffected == 1, res.Error
}

// OrgVerifiedIn reports in tx whether the organisation is verified.
func OrgVerifiedIn(tx *gorm.DB, orgID int64) (bool, error) {
	var n int64
	err := tx.Model(&OrgVerification{}).Where("org_id = ? AND status = ?", orgID, OrgVerified).Count(&n).Error
	return n > 0, err
}

// VerifiedOrgs returns which of the organisations are verified.
func VerifiedOrgs(ctx context.Context, db *models.DB, orgIDs []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(orgIDs) == 0 {
		return out, nil
	}
	var ids []int64
	err := db.W.WithContext(ctx).Model(&OrgVerification{}).Where("org_id IN ? AND status = ?", orgIDs, OrgVerified).Pluck("org_id", &ids).Error
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

// MarkOrgVerified records in tx that an operator vouched for the
// organisation (`suanli admin create-user --provider`, the demo's
// provider, tests): verified at once, with no licence. An organisation
// already verified is left as it is.
func MarkOrgVerified(tx *gorm.DB, orgID int64, at time.Time) error {
	return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&OrgVerification{
		OrgID: orgID, Status: OrgVerified, Source: SourceOperator, SubmittedAt: at, ReviewedAt: &at,
	}).Error
}

// PendingOrg is a submission waiting for review, with its organisation.
type PendingOrg struct {
	OrgVerification
	OrgKind string
	// OrgDisplayName is the organisation's name on the platform (which
	// may differ from the registered name it submitted).
	OrgDisplayName string
}

// PendingOrgVerifications returns up to limit submissions waiting for
// review, oldest first, and how many wait in all.
func PendingOrgVerifications(ctx context.Context, db *models.DB, limit int) ([]PendingOrg, int64, error) {
	q := db.R.WithContext(ctx).Table("identity_org_verifications v").Joins("JOIN orgs o ON o.id = v.org_id").Where("v.status = ?", OrgPending)
	var n int64
	if err := q.Count(&n).Error; err != nil {
		return nil, 0, err
	}
	var out []PendingOrg
	err := q.Select("v.*, o.kind AS org_kind, o.name AS org_display_name").Order("v.submitted_at, v.id").Limit(limit).Scan(&out).Error
	return out, n, err
}

// OrgOwnersIn returns the organisation's owners in tx, oldest membership
// first: whom a review's decision is mailed to.
func OrgOwnersIn(tx *gorm.DB, orgID int64) ([]models.User, error) {
	var us []models.User
	err := tx.Table("users u").Joins("JOIN memberships m ON m.user_id = u.id").
		Where("m.org_id = ? AND m.role = ?", orgID, models.RoleOwner).Order("m.created_at, u.id").Select("u.*").Scan(&us).Error
	return us, err
}
