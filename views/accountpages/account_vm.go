package accountpages

import (
	"net/url"
	"time"

	"suanli/views"
	"suanli/views/orgverifypages"
)

// AccountVM is the account page's view model.
type AccountVM struct {
	User     User
	Orgs     []OrgLink
	Tokens   []Token
	NewToken string
	Password views.Form
	Token    views.Form
	Org      views.Form
	// Resend carries the throttle message of a refused resend.
	Resend views.Form
	// Invitations are the pending invitations to the user's verified address.
	Invitations []Invitation
}

// User is the account page's profile.
type User struct {
	Name, Email string
	Verified    bool
}

// OrgLink is one of the user's organisations with the user's role in it.
type OrgLink struct {
	ID                       int64
	Name, Kind, Role, Status string
}

// Token is one of the user's API tokens (never its secret).
type Token struct {
	ID           int64
	Name, Prefix string
	Revoked      bool
	LastUsedAt   *time.Time
}

// Invitation is a pending invitation to the user's verified address.
type Invitation struct {
	ID            int64
	OrgName, Role string
}

// InvitationRow is a pending invitation on the organisation page.
type InvitationRow struct {
	ID        int64
	Email     string
	Role      string
	ExpiresAt time.Time
}

// Org is what the organisation, wallet and receipt pages show of an
// organisation.
type Org struct {
	ID                                   int64
	Name, Kind, Status, StatusReason     string
	Institution, Supervisor, EmailDomain string
	// Budgets and caps in fen; nil: none.
	MonthlyBudgetFen, MemberCapFen, HourlyCapFen *int64
	// InvoiceTitle and TaxID are printed on receipts.
	InvoiceTitle, TaxID string
	// IdlePolicy is a lab's idle-stop policy (zero: none).
	IdlePolicy IdlePolicy
}

// IdlePolicy is a lab's idle-stop policy: its rentals stop when every GPU
// stays below BelowPct % for Minutes minutes (zero: none).
type IdlePolicy struct {
	BelowPct, Minutes int
}

// Me is the viewer's own membership of a lab.
type Me struct {
	// Confirmed is whether the mailed link proved EduEmail.
	Confirmed bool
	EduEmail  string
}

// Member is one row of the members table.
type Member struct {
	UserID            int64
	Name, Email, Role string
	// Confirmed: a lab member whose institutional address is proven.
	Confirmed bool
}

// OrgVM is the organisation page's view model.
type OrgVM struct {
	Org Org
	// Me is the viewer's membership (nil for a platform admin looking in).
	Me        *Me
	Members   []Member
	CanInvite bool
	CanRemove bool
	CanBudget bool
	CanWallet bool
	Invite    views.Form
	Budget    views.Form
	// CanIdlePolicy: the viewer may set the lab's idle-stop policy, with
	// IdlePolicy (idle_policy_below_pct, idle_policy_minutes; its
	// "idle_policy" message beside them) within the window's bounds.
	CanIdlePolicy                  bool
	IdlePolicy                     views.Form
	IdleMinMinutes, IdleMaxMinutes int
	// Invitations are the pending ones (for members who may invite).
	Invitations []InvitationRow
	// Verification is its organisation verification (企业认证) card.
	Verification orgverifypages.Card
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
