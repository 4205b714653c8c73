package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
)

// InsertOrg creates an organisation in tx.
func InsertOrg(tx *gorm.DB, o *Org) error { return tx.Create(o).Error }

// AddMember adds (or, for an existing member, updates) a membership in tx.
func AddMember(tx *gorm.DB, m *Membership) error {
	var existing Membership
	err := tx.Where("org_id = ? AND user_id = ?", m.OrgID, m.UserID).First(&existing).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return tx.Create(m).Error
	}
	if err != nil {
		return err
	}
	updates := map[string]any{}
	if RoleRank(m.Role) > RoleRank(existing.Role) {
		updates["role"] = m.Role
	}
	if m.EduEmail != "" {
		updates["edu_email"] = m.EduEmail
		updates["confirmed_at"] = m.ConfirmedAt
	}
	if len(updates) == 0 {
		return nil
	}
	return tx.Model(&Membership{}).Where("org_id = ? AND user_id = ?", m.OrgID, m.UserID).Updates(updates).Error
}

// OrgByID returns an organisation, or ENOTFOUND.
func (db *DB) OrgByID(ctx context.Context, id int64) (*Org, error) {
	var o Org
	err := db.W.WithContext(ctx).First(&o, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("organisation")
	}
	return &o, err
}

// MembershipOf returns the user's membership of the organisation, or ENOTFOUND.
func (db *DB) MembershipOf(ctx context.Context, orgID, userID int64) (*Membership, error) {
	var m Membership
	err := db.W.WithContext(ctx).Where("org_id = ? AND user_id = ?", orgID, userID).First(&m).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.NotFound("organisation")
	}
	return &m, err
}

// OrgMembership is one organisation of a user with the user's role in it.
type OrgMembership struct {
	Org        Org
	Membership Membership
}

// OrgsOfUser returns the user's organisations, personal first.
func (db *DB) OrgsOfUser(ctx context.Context, userID int64) ([]OrgMembership, error) {
	var ms []Membership
	if err := db.W.WithContext(ctx).Where("user_id = ?", userID).Find(&ms).Error; err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.OrgID
	}
	var orgs []Org
	if err := db.W.WithContext(ctx).Where("id IN ?", ids).Order("personal DESC, id").Find(&orgs).Error; err != nil {
		return nil, err
	}
	byOrg := map[int64]Membership{}
	for _, m := range ms {
		byOrg[m.OrgID] = m
	}
	out := make([]OrgMembership, len(orgs))
	for i, o := range orgs {
		out[i] = OrgMembership{Org: o, Membership: byOrg[o.ID]}
	}
	return out, nil
}

// Member is a membership with the member's user record.
type Member struct {
	Membership
	User User
}

// MembersOf returns an organisation's members, owners first.
func (db *DB) MembersOf(ctx context.Context, orgID int64) ([]Member, error) {
	var ms []Membership
	if err := db.W.WithContext(ctx).Where("org_id = ?", orgID).Order("created_at, user_id").Find(&ms).Error; err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		u, err := db.UserByID(ctx, m.UserID)
		if err != nil {
			return nil, err
		}
		out = append(out, Member{Membership: m, User: *u})
	}
	return out, nil
}

// RemoveMember deletes a membership in tx.
func RemoveMember(tx *gorm.DB, orgID, userID int64) error {
	return tx.Where("org_id = ? AND user_id = ?", orgID, userID).Delete(&Membership{}).Error
}

// OrgsByStatus returns organisations of the kinds with the status, oldest first.
func (db *DB) OrgsByStatus(ctx context.Context, status string, kinds ...string) ([]Org, error) {
	var orgs []Org
	err := db.W.WithContext(ctx).Where("status = ? AND kind IN ?", status, kinds).Order("created_at, id").Find(&orgs).Error
	return orgs, err
}

// SetOrgStatus records a review decision in tx. A provider's offers are
// listed only once it is approved, so the offers version moves with it
// (every process's offer index then reloads).
func SetOrgStatus(tx *gorm.DB, orgID int64, status, reason string, by int64, at time.Time) error {
	if err := tx.Model(&Org{}).Where("id = ?", orgID).Updates(map[string]any{
		"status": status, "status_reason": reason, "reviewed_by": by, "reviewed_at": at,
	}).Error; err != nil {
		return err
	}
	return OffersChanged(tx, OfferScope{Orgs: []int64{orgID}})
}

// SetLabBudget stores a lab's monthly budget and per-member cap (nil: none).
func SetLabBudget(tx *gorm.DB, orgID int64, budget, cap *int64) error {
	return tx.Model(&Org{}).Where("id = ?", orgID).Updates(map[string]any{
		"monthly_budget_fen": budget, "member_cap_fen": cap,
	}).Error
}

// StudentPricing reports whether the user is a confirmed member of an
// approved lab, and so sees student prices.
func (db *DB) StudentPricing(ctx context.Context, userID int64) (bool, error) {
	var n int64
	err := db.W.WithContext(ctx).Model(&Membership{}).
		Joins("JOIN orgs ON orgs.id = memberships.org_id").
		Where("memberships.user_id = ? AND memberships.confirmed_at IS NOT NULL AND orgs.kind = ? AND orgs.status = ?", userID, OrgLab, OrgApproved).
		Count(&n).Error
	return n > 0, err
}

// PersonalOrgOf returns the id of the user's personal organisation in tx.
func PersonalOrgOf(tx *gorm.DB, userID int64) (int64, error) {
	var id int64
	err := tx.Table("orgs o").Joins("JOIN memberships m ON m.org_id = o.id").
		Where("m.user_id = ? AND m.role = ? AND o.personal", userID, RoleOwner).Order("o.id").Limit(1).Pluck("o.id", &id).Error
	if err == nil && id == 0 {
		return 0, apperr.NotFound("personal organisation")
	}
	return id, err
}

// OrgsCreatedSince counts the organisations the user created (owns, not
// counting the personal one) since the time given, in tx.
func OrgsCreatedSince(tx *gorm.DB, userID int64, since time.Time) (int64, error) {
	var n int64
	err := tx.Table("orgs o").Joins("JOIN memberships m ON m.org_id = o.id").
		Where("m.user_id = ? AND m.role = ? AND NOT o.personal AND o.created_at >= ?", userID, RoleOwner, since).Count(&n).Error
	return n, err
}

// SetOrgIdlePolicy stores a lab's idle-stop policy for its members'
// rentals (zero: none).
func SetOrgIdlePolicy(tx *gorm.DB, orgID int64, p IdleStop) error {
	return tx.Model(&Org{}).Where("id = ?", orgID).Updates(map[string]any{
		"idle_policy_below_pct": p.BelowPct, "idle_policy_minutes": p.Minutes,
	}).Error
}
