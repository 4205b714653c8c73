package pages

import (
	"net/url"
	"time"

	"suanli/models"
	"suanli/views"
)

// AccountVM is the account page's view model.
type AccountVM struct {
	User     models.User
	Orgs     []models.OrgMembership
	Tokens   []models.APIToken
	NewToken string
	Password views.Form
	Token    views.Form
	Org      views.Form
	// Resend carries the throttle message of a refused resend.
	Resend views.Form
	// Invitations are the pending invitations to the user's verified address.
	Invitations []models.InvitationTo
}

// InvitationRow is a pending invitation on the organisation page.
type InvitationRow struct {
	ID        int64
	Email     string
	Role      string
	ExpiresAt time.Time
}

// OrgVM is the organisation page's view model.
type OrgVM struct {
	Org       models.Org
	Me        *models.Membership
	Members   []models.Member
	CanInvite bool
	CanRemove bool
	CanBudget bool
	CanWallet bool
	Invite    views.Form
	Budget    views.Form
	// Invitations are the pending ones (for members who may invite).
	Invitations []InvitationRow
}

func yuanOrNone(vc views.Ctx, fen *int64) string {
	if fen == nil {
		return vc.T("org.no_limit")
	}
	return views.Yuan(*fen)
}

// withNext adds ?next= to a URL when there is somewhere to continue to.
func withNext(u, next string) string {
	if next == "" || next == "/" {
		return u
	}
	return u + "?next=" + url.QueryEscape(next)
}
