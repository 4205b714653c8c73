package pages

import (
	"net/url"
	"strconv"
	"time"

	"suanli/models"
	"suanli/pricing"
	"suanli/views"
)

// Form is a submitted (or empty) form: values to show again and a message
// per field. Passwords are never shown again.
type Form struct {
	Values map[string]string
	Errors map[string]string
}

// Get returns the value of a field.
func (f Form) Get(name string) string { return f.Values[name] }

// Err returns a field's message.
func (f Form) Err(name string) string { return f.Errors[name] }

// AccountVM is the account page's view model.
type AccountVM struct {
	User     models.User
	Orgs     []models.OrgMembership
	Tokens   []models.APIToken
	NewToken string
	Password Form
	Token    Form
	Org      Form
	// Resend carries the throttle message of a refused resend.
	Resend Form
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
	Invite    Form
	Budget    Form
	// Invitations are the pending ones (for members who may invite).
	Invitations []InvitationRow
}

func fmtTime(vc views.Ctx, t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.In(pricing.Shanghai).Format("2006-01-02 15:04")
}

func yuanOrNone(vc views.Ctx, fen *int64) string {
	if fen == nil {
		return vc.T("org.no_limit")
	}
	return views.Yuan(*fen)
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// withNext adds ?next= to a URL when there is somewhere to continue to.
func withNext(u, next string) string {
	if next == "" || next == "/" {
		return u
	}
	return u + "?next=" + url.QueryEscape(next)
}
