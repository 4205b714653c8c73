// Package witnessstore holds the queries of the witnesses beyond the
// provider (DESIGN.md §8): the rental-scoped credentials that the
// verifier in a rental's container posts with, the results it posted,
// and the platform's audit rentals (migration 00023).
package witnessstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// Sources of a witness result.
const (
	// SourceRenter: the verifier ran in a renter's rental.
	SourceRenter = "renter"
	// SourceAudit: the verifier ran in a platform audit rental.
	SourceAudit = "audit"
)

// Credential is the hash of a token a rental's container posts its
// verifier results with (one per launch task handed out).
type Credential struct {
	TokenHash string `gorm:"primaryKey"`
	RentalID  int64
	IssuedAt  time.Time
}

// TableName is the credentials' table.
func (Credential) TableName() string { return "witness_credentials" }

// Result is one verifier run's result, as the server accepted it.
type Result struct {
	ID       int64
	RentalID int64
	OfferID  int64
	NodeID   int64
	// Source is SourceRenter or SourceAudit.
	Source string
	// Simulated is the node's server-side state when the result came.
	Simulated bool
	GPUs      int `gorm:"column:gpus"`
	GPUName   string
	// Healthy is false when the verifier saw a GPU failing a check.
	Healthy bool
	// BF16TFLOPS is the per-GPU median of the GEMM; nil when none ran
	// (GemmNote says why).
	BF16TFLOPS *float64 `gorm:"column:bf16_tflops"`
	GemmNote   string
	// Detail is the verifier's per-GPU report as JSON.
	Detail    string
	CreatedAt time.Time
}

// TableName is the results' table.
func (Result) TableName() string { return "witness_results" }

// PutCredential stores, in tx, the hash of a new token of the rental.
func PutCredential(tx *gorm.DB, rentalID int64, hash string, now time.Time) error {
	return tx.Create(&Credential{RentalID: rentalID, TokenHash: hash, IssuedAt: now}).Error
}

// CredentialRental is the rental whose current token hashes to hash
// (ENOTFOUND when none).
func CredentialRental(ctx context.Context, db *models.DB, hash string) (int64, error) {
	var c Credential
	err := db.R.WithContext(ctx).Where("token_hash = ?", hash).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, apperr.NotFound("verify credential")
	}
	return c.RentalID, err
}

// InsertResult stores a result.
func InsertResult(ctx context.Context, db *models.DB, r *Result) error {
	return db.W.WithContext(ctx).Create(r).Error
}

// ResultsSince are the results for the offers since a time, oldest first
// (the offer pages' and the API's summaries are computed from them).
func ResultsSince(ctx context.Context, db *models.DB, offerIDs []int64, since time.Time) ([]Result, error) {
	var rs []Result
	if len(offerIDs) == 0 {
		return rs, nil
	}
	err := db.R.WithContext(ctx).Where("offer_id IN ? AND created_at >= ?", offerIDs, since).Order("created_at, id").Find(&rs).Error
	return rs, err
}

// AllResultsSince are every result taken since a time, oldest first.
func AllResultsSince(ctx context.Context, db *models.DB, since time.Time) ([]Result, error) {
	var rs []Result
	err := db.R.WithContext(ctx).Where("created_at >= ?", since).Order("created_at, id").Find(&rs).Error
	return rs, err
}

// NodesResultsSince are the results taken on any of the nodes since a
// time, oldest first.
func NodesResultsSince(ctx context.Context, db *models.DB, nodeIDs []int64, since time.Time) ([]Result, error) {
	var rs []Result
	if len(nodeIDs) == 0 {
		return rs, nil
	}
	err := db.R.WithContext(ctx).Where("node_id IN ? AND created_at >= ?", nodeIDs, since).Order("created_at, id").Find(&rs).Error
	return rs, err
}

// CountResultsOfRental counts a rental's results.
func CountResultsOfRental(ctx context.Context, db *models.DB, rentalID int64) (int64, error) {
	var n int64
	err := db.R.WithContext(ctx).Model(&Result{}).Where("rental_id = ?", rentalID).Count(&n).Error
	return n, err
}

// ResultsOfRental are a rental's results, newest first.
func ResultsOfRental(ctx context.Context, db *models.DB, rentalID int64) ([]Result, error) {
	var rs []Result
	err := db.R.WithContext(ctx).Where("rental_id = ?", rentalID).Order("created_at DESC, id DESC").Find(&rs).Error
	return rs, err
}

// Audit run states.
const (
	AuditRunning  = "running"
	AuditPassed   = "passed"
	AuditTimedOut = "timed_out"
	AuditFailed   = "failed"
)

// AuditRun is one platform audit of an offer: a rental made by the
// platform's audit account through the ordinary renter path.
type AuditRun struct {
	ID         int64
	OfferID    int64
	RentalID   *int64
	Status     string
	Reason     string
	StartedAt  time.Time
	Deadline   time.Time
	FinishedAt *time.Time
}

// TableName is the audit runs' table.
func (AuditRun) TableName() string { return "audit_runs" }

// InsertAuditRun stores a new audit run.
func InsertAuditRun(ctx context.Context, db *models.DB, a *AuditRun) error {
	return db.W.WithContext(ctx).Create(a).Error
}

// FinishAuditRun ends a running audit run with status and reason; one
// that has ended already is left as it is (false).
func FinishAuditRun(ctx context.Context, db *models.DB, id int64, status, reason string, now time.Time) (bool, error) {
	res := db.W.WithContext(ctx).Model(&AuditRun{}).Where("id = ? AND status = ?", id, AuditRunning).
		Updates(map[string]any{"status": status, "reason": reason, "finished_at": now})
	return res.RowsAffected == 1, res.Error
}

// LastAuditStarted is when the offer's latest audit run started; ok is
// false when it never had one.
func LastAuditStarted(ctx context.Context, db *models.DB, offerID int64) (at time.Time, ok bool, err error) {
	var as []AuditRun
	if err := db.R.WithContext(ctx).Where("offer_id = ?", offerID).Order("started_at DESC, id DESC").Limit(1).Find(&as).Error; err != nil {
		return at, false, err
	}
	if len(as) == 0 {
		return at, false, nil
	}
	return as[0].StartedAt, true, nil
}

// AuditOfRental is the audit run that made the rental (ENOTFOUND for a
// renter's rental).
func AuditOfRental(ctx context.Context, db *models.DB, rentalID int64) (AuditRun, error) {
	var a AuditRun
	err := db.R.WithContext(ctx).Where("rental_id = ?", rentalID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return a, apperr.NotFound("audit run")
	}
	return a, err
}

// SetAuditRental records the rental an audit run made.
func SetAuditRental(ctx context.Context, db *models.DB, id, rentalID int64) error {
	return db.W.WithContext(ctx).Model(&AuditRun{}).Where("id = ?", id).Update("rental_id", rentalID).Error
}

// AuditCandidates are listed offers (not the demo's, not synthetic, with
// their node shown) that have no audit running and none started since
// since, oldest audit first, at most limit.
func AuditCandidates(ctx context.Context, db *models.DB, since time.Time, limit int) ([]models.Offer, error) {
	var out []models.Offer
	err := db.R.WithContext(ctx).Raw(`SELECT o.* FROM offers o
		WHERE o.status = ? AND NOT o.awaiting_node AND NOT o.demo AND NOT o.synthetic
		AND NOT EXISTS (SELECT 1 FROM audit_runs a WHERE a.offer_id = o.id AND (a.status = ? OR a.started_at > ?))
		ORDER BY (SELECT MAX(a.started_at) FROM audit_runs a WHERE a.offer_id = o.id) IS NOT NULL,
			(SELECT MAX(a.started_at) FROM audit_runs a WHERE a.offer_id = o.id), o.id
		LIMIT ?`, models.OfferListed, AuditRunning, since, limit).Scan(&out).Error
	return out, err
}

// AuditRentalsToRelease are the audit organisation's rentals not yet
// released that no running audit run holds: those of ended audits, and
// any the audit account rented without its run naming it (a crash or a
// failed write between the rent and SetAuditRental), which would
// otherwise hold a GPU and bill the platform for ever.
func AuditRentalsToRelease(ctx context.Context, db *models.DB, auditOrgID int64) ([]int64, error) {
	var ids []int64
	err := db.R.WithContext(ctx).Raw(`SELECT r.id FROM rentals r
		WHERE r.org_id = ? AND r.released_at IS NULL AND r.status <> ?
		AND NOT EXISTS (SELECT 1 FROM audit_runs a WHERE a.rental_id = r.id AND a.status = ?) ORDER BY r.id`,
		auditOrgID, models.RentalFailed, AuditRunning).Scan(&ids).Error
	return ids, err
}

// ExpiredAudits are the running audit runs whose deadline has passed.
func ExpiredAudits(ctx context.Context, db *models.DB, now time.Time) ([]AuditRun, error) {
	var as []AuditRun
	err := db.R.WithContext(ctx).Where("status = ? AND deadline < ?", AuditRunning, now).Order("id").Find(&as).Error
	return as, err
}
