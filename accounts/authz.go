package accounts

import (
	"context"

	"suanli/apperr"
	"suanli/models"
	"suanli/reqlog"
)

// Action is something done to an organisation.
type Action int

// The actions on organisations.
const (
	ViewOrg       Action = iota // see its page and members
	InviteMembers               // invite people
	RemoveMembers               // remove a member
	SetBudget                   // set a lab's budget and member cap
	ViewWallet                  // see the balance, ledger and receipts
	TopUp                       // add money
	RefundWallet                // pay unused balance back
	ManageBilling               // invoice details and the hourly spending cap
	Rent                        // rent GPUs paid from its wallet
	ViewRentals                 // see its rentals
	SetIdlePolicy               // set a lab's idle-stop policy for its members' rentals
)

// rule is who may take an action: the weakest role, and whether platform
// admins may too.
type rule struct {
	minRole       string
	platformAdmin bool
	labOnly       bool
}

// rules is the one table of who may do what to an organisation.
var rules = map[Action]rule{
	ViewOrg:       {minRole: models.RoleMember, platformAdmin: true},
	InviteMembers: {minRole: models.RoleAdmin},
	RemoveMembers: {minRole: models.RoleOwner},
	SetBudget:     {minRole: models.RoleAdmin, labOnly: true},
	ViewWallet:    {minRole: models.RoleMember, platformAdmin: true},
	TopUp:         {minRole: models.RoleMember},
	RefundWallet:  {minRole: models.RoleAdmin},
	ManageBilling: {minRole: models.RoleAdmin},
	Rent:          {minRole: models.RoleMember},
	ViewRentals:   {minRole: models.RoleMember, platformAdmin: true},
	SetIdlePolicy: {minRole: models.RoleAdmin, labOnly: true},
}

// Authorize returns the organisation and the user's membership (nil for a
// platform admin who is not a member) if the user may take the action. A
// user with no membership gets ENOTFOUND, exactly as for an organisation
// that does not exist, so other organisations' ids reveal nothing; a
// member whose role is too weak gets EFORBIDDEN.
func (s *Service) Authorize(ctx context.Context, u *models.User, orgID int64, a Action) (*models.Org, *models.Membership, error) {
	if u == nil {
		return nil, nil, apperr.NotFound("organisation")
	}
	r := rules[a]
	m, err := s.DB.MembershipOf(ctx, orgID, u.ID)
	if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
		return nil, nil, err
	}
	if m == nil && !(u.PlatformAdmin && r.platformAdmin) {
		return nil, nil, apperr.NotFound("organisation")
	}
	org, err := s.DB.OrgByID(ctx, orgID)
	if err != nil {
		return nil, nil, err
	}
	if m != nil && models.RoleRank(m.Role) < models.RoleRank(r.minRole) && !(u.PlatformAdmin && r.platformAdmin) {
		return nil, nil, apperr.Errorf(apperr.EFORBIDDEN, "your role may not do this")
	}
	if r.labOnly && org.Kind != models.OrgLab {
		return nil, nil, apperr.NotFound("lab")
	}
	// A suspended organisation may be looked at but not spend or pay in.
	if org.SuspendedAt != nil && (a == Rent || a == TopUp) {
		return nil, nil, ErrOrgSuspended()
	}
	reqlog.Set(ctx, "org_id", org.ID)
	return org, m, nil
}

// RequirePlatformAdmin returns EFORBIDDEN unless u is a platform admin.
func RequirePlatformAdmin(u *models.User) error {
	if u == nil || !u.PlatformAdmin {
		return apperr.Errorf(apperr.EFORBIDDEN, "platform admins only")
	}
	return nil
}

// Topup is the top-up id with its organisation, for a user who may see
// that organisation's wallet; another organisation's top-up is
// ENOTFOUND, exactly as one that does not exist.
func (s *Service) Topup(ctx context.Context, u *models.User, id int64) (*models.Topup, *models.Org, error) {
	t, err := s.DB.TopupByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	org, _, err := s.Authorize(ctx, u, t.OrgID, ViewWallet)
	if code := apperr.Code(err); code == apperr.ENOTFOUND || code == apperr.EFORBIDDEN {
		return nil, nil, apperr.NotFound("top-up")
	} else if err != nil {
		return nil, nil, err
	}
	return t, org, nil
}
