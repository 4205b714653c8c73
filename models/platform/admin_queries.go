package platform

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
)

// The platform admins' console reads: searching users and organisations,
// suspending them, open incidents, the providers behind organisations,
// the outbox by page and River's job tables.

// likePattern makes a case-insensitive LIKE pattern that matches q
// anywhere, with LIKE's wildcards in q escaped (ESCAPE '\').
func likePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(q)) + "%"
}

// SearchUsers returns one page of users whose email or name contains q
// (case-insensitive; empty q: everyone), newest first, and how many match.
func SearchUsers(ctx context.Context, db *models.DB, q string, page, per int) ([]models.User, int64, error) {
	tx := db.R.WithContext(ctx).Model(&models.User{})
	if q = strings.TrimSpace(q); q != "" {
		p := likePattern(q)
		tx = tx.Where(`LOWER(email) LIKE ? ESCAPE '\' OR LOWER(name) LIKE ? ESCAPE '\'`, p, p)
	}
	var total int64
	if err := tx.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	page, per = models.ClampPage(page, per, 200)
	var us []models.User
	err := tx.Order("id DESC").Offset((page - 1) * per).Limit(per).Find(&us).Error
	return us, total, err
}

// SearchOrgs returns one page of organisations whose name contains q
// (case-insensitive; empty q: all), newest first, and how many match.
func SearchOrgs(ctx context.Context, db *models.DB, q string, page, per int) ([]models.Org, int64, error) {
	tx := db.R.WithContext(ctx).Model(&models.Org{})
	if q = strings.TrimSpace(q); q != "" {
		tx = tx.Where(`LOWER(name) LIKE ? ESCAPE '\'`, likePattern(q))
	}
	var total int64
	if err := tx.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	page, per = models.ClampPage(page, per, 200)
	var os []models.Org
	err := tx.Order("id DESC").Offset((page - 1) * per).Limit(per).Find(&os).Error
	return os, total, err
}

// UserForUpdate reads a user in tx, locking the row on PostgreSQL; a
// missing user is ENOTFOUND.
func UserForUpdate(tx *gorm.DB, id int64) (*models.User, error) {
	return models.UserByIDIn(models.LockRow(tx), id)
}

// OrgForUpdate reads an organisation in tx, locking the row on
// PostgreSQL; a missing organisation is ENOTFOUND.
func OrgForUpdate(tx *gorm.DB, id int64) (*models.Org, error) {
	var o models.Org
	err := models.LockRow(tx).Where("id = ?", id).First(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("organisation")
	}
	return &o, err
}

// SetUserSuspended sets (at non-nil) or clears (nil) a user's suspension in tx.
func SetUserSuspended(tx *gorm.DB, userID int64, at *time.Time) error {
	return tx.Model(&models.User{}).Where("id = ?", userID).Update("suspended_at", at).Error
}

// SetOrgSuspended sets (at non-nil) or clears (nil) an organisation's suspension in tx.
func SetOrgSuspended(tx *gorm.DB, orgID int64, at *time.Time) error {
	if err := tx.Model(&models.Org{}).Where("id = ?", orgID).Update("suspended_at", at).Error; err != nil {
		return err
	}
	// A suspended provider's offers leave the list (and come back).
	return models.OffersChanged(tx, models.OfferScope{Orgs: []int64{orgID}})
}

// ProvidersOfOrgs returns the provider profiles of the organisations, by
// organisation id (organisations without a profile are absent).
func ProvidersOfOrgs(ctx context.Context, db *models.DB, orgIDs []int64) (map[int64]models.Provider, error) {
	out := map[int64]models.Provider{}
	if len(orgIDs) == 0 {
		return out, nil
	}
	var ps []models.Provider
	if err := db.R.WithContext(ctx).Where("org_id IN ?", orgIDs).Find(&ps).Error; err != nil {
		return nil, err
	}
	for _, p := range ps {
		if p.OrgID != nil {
			out[*p.OrgID] = p
		}
	}
	return out, nil
}

// Applicant is who applied for an organisation under review, as the
// review card shows them: the owner's name and account email (verified or
// not), and for a lab the institutional address they gave and whether its
// confirmation link was opened.
type Applicant struct {
	OrgID, UserID   int64
	Name, Email     string
	EmailVerifiedAt *time.Time
	EduEmail        string
	ConfirmedAt     *time.Time
}

// ApplicantsOfOrgs returns the owner of each organisation, by organisation
// id (an organisation without an owner is absent).
func ApplicantsOfOrgs(ctx context.Context, db *models.DB, orgIDs []int64) (map[int64]Applicant, error) {
	out := map[int64]Applicant{}
	if len(orgIDs) == 0 {
		return out, nil
	}
	var rows []Applicant
	err := db.R.WithContext(ctx).Table("memberships").
		Select("memberships.org_id, memberships.user_id, users.name, users.email, users.email_verified_at, memberships.edu_email, memberships.confirmed_at").
		Joins("JOIN users ON users.id = memberships.user_id").
		Where("memberships.org_id IN ? AND memberships.role = ?", orgIDs, models.RoleOwner).
		Order("memberships.org_id, memberships.created_at, memberships.user_id").Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if _, seen := out[r.OrgID]; !seen { // the first owner: the one who applied
			out[r.OrgID] = r
		}
	}
	return out, nil
}

// OpenIncident is an incident that is not closed, with its node and provider.
type OpenIncident struct {
	models.Incident
	NodeName       string
	ProviderNameZH string `gorm:"column:provider_name_zh"`
	ProviderNameEN string `gorm:"column:provider_name_en"`
}

// OpenIncidents returns the open incidents (closed_at IS NULL), oldest
// first, at most limit.
func OpenIncidents(ctx context.Context, db *models.DB, limit int) ([]OpenIncident, error) {
	var out []OpenIncident
	err := db.R.WithContext(ctx).Table("incidents").
		Select("incidents.*, nodes.name AS node_name, providers.name_zh AS provider_name_zh, providers.name_en AS provider_name_en").
		Joins("JOIN nodes ON nodes.id = incidents.node_id").
		Joins("JOIN providers ON providers.id = nodes.provider_id").
		Where("incidents.closed_at IS NULL").
		Order("incidents.opened_at, incidents.id").Limit(limit).Scan(&out).Error
	return out, err
}

// CountOpenIncidents counts the incidents that are not closed.
func CountOpenIncidents(ctx context.Context, db *models.DB) (int64, error) {
	var n int64
	err := db.R.WithContext(ctx).Table("incidents").Where("closed_at IS NULL").Count(&n).Error
	return n, err
}

// OutboxPage returns one page of the outbox, newest first, and its size.
func OutboxPage(ctx context.Context, db *models.DB, page, per int) ([]models.OutboxMail, int64, error) {
	tx := db.R.WithContext(ctx).Model(&models.OutboxMail{})
	var total int64
	if err := tx.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	page, per = models.ClampPage(page, per, 200)
	var ms []models.OutboxMail
	err := tx.Order("id DESC").Offset((page - 1) * per).Limit(per).Find(&ms).Error
	return ms, total, err
}

// UsersByIDs returns the users with the ids, by id.
func UsersByIDs(ctx context.Context, db *models.DB, ids []int64) (map[int64]models.User, error) {
	out := map[int64]models.User{}
	if len(ids) == 0 {
		return out, nil
	}
	var us []models.User
	if err := db.R.WithContext(ctx).Where("id IN ?", ids).Find(&us).Error; err != nil {
		return nil, err
	}
	for _, u := range us {
		out[u.ID] = u
	}
	return out, nil
}

// OrgNames returns the names of the organisations with the ids, by id.
func OrgNames(ctx context.Context, db *models.DB, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var os []models.Org
	if err := db.R.WithContext(ctx).Select("id", "name").Where("id IN ?", ids).Find(&os).Error; err != nil {
		return nil, err
	}
	for _, o := range os {
		out[o.ID] = o.Name
	}
	return out, nil
}

// JobCount is how many of River's jobs of a kind are in a state.
type JobCount struct {
	Kind  string
	State string
	Count int64
}

// JobCounts counts River's jobs by kind and state, by kind then state.
func JobCounts(ctx context.Context, db *models.DB) ([]JobCount, error) {
	var out []JobCount
	err := db.R.WithContext(ctx).Raw(`SELECT kind, state, COUNT(*) AS count FROM river_job GROUP BY kind, state ORDER BY kind, state`).Scan(&out).Error
	return out, err
}

// FailedJob is one of River's jobs that failed at least once and is
// retryable or discarded (or any job with errors), with its errors.
type FailedJob struct {
	ID          int64
	Kind        string
	State       string
	Queue       string
	Attempt     int
	MaxAttempts int
	CreatedAt   time.Time
	ScheduledAt time.Time
	FinalizedAt *time.Time
	// Errors are River's error records, oldest first.
	Errors []JobError `gorm:"-"`
}

// JobError is one attempt's error as River records it.
type JobError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	Trace   string    `json:"trace"`
}

// LastError returns the latest attempt's error, or "".
func (j FailedJob) LastError() string {
	if len(j.Errors) == 0 {
		return ""
	}
	return j.Errors[len(j.Errors)-1].Error
}

// FailedJobs returns the latest limit jobs that are retryable or discarded,
// or that failed and were then cancelled, newest first, with their errors.
// River stores errors as jsonb[] on PostgreSQL and as a JSON array (jsonb)
// on SQLite; both are read as JSON text here.
func FailedJobs(ctx context.Context, db *models.DB, limit int) ([]FailedJob, error) {
	errorsCol := "json(errors)"
	if db.Dialect == "postgres" {
		errorsCol = "array_to_json(errors)::text"
	}
	type row struct {
		FailedJob
		ErrorsJSON *string `gorm:"column:errors_json"`
	}
	var rows []row
	err := db.R.WithContext(ctx).Raw(`SELECT id, kind, state, queue, attempt, max_attempts, created_at, scheduled_at, finalized_at, `+errorsCol+` AS errors_json
		FROM river_job WHERE state IN ('retryable', 'discarded') OR (state = 'cancelled' AND errors IS NOT NULL)
		ORDER BY id DESC LIMIT ?`, limit).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make([]FailedJob, 0, len(rows))
	for _, r := range rows {
		j := r.FailedJob
		if r.ErrorsJSON != nil && *r.ErrorsJSON != "" {
			// A record River wrote in another shape is shown without errors
			// rather than failing the page.
			_ = json.Unmarshal([]byte(*r.ErrorsJSON), &j.Errors)
		}
		out = append(out, j)
	}
	return out, nil
}
