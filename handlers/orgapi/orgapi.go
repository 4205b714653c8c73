// Package orgapi holds the API of what the console does to organisations
// and labs (/api/v1/orgs/…, /api/v1/invitations/…, /api/v1/labs) and to
// their wallets beyond the balance and top-ups (refunds, billing
// details): each handler binds the JSON, calls the use case the page's
// handler calls (accounts, idlestop, billing) and answers JSON. Every
// console action has its endpoint (web/parity_test.go).
package orgapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/models"
)

// Handler is the organisation API's handlers, on the shared dependencies.
type Handler struct{ *handlers.Handler }

// Org is an organisation as the API shows it to one of its members.
type Org struct {
	ID       int64  `json:"id"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Personal bool   `json:"personal"`
	Status   string `json:"status"`
	// StatusReason is why a lab or provider was rejected.
	StatusReason string `json:"status_reason"`
	// Role is the caller's ("" for a platform admin looking in).
	Role             string    `json:"role"`
	Institution      string    `json:"institution"`
	Supervisor       string    `json:"supervisor"`
	EmailDomain      string    `json:"email_domain"`
	MonthlyBudgetFen *int64    `json:"monthly_budget_fen"`
	MemberCapFen     *int64    `json:"member_cap_fen"`
	IdlePolicy       *Policy   `json:"idle_policy"`
	CreatedAt        time.Time `json:"created_at"`
	Members          []Member  `json:"members"`
	// Invitations are the pending ones, for a caller who may invite (nil
	// otherwise: answered null).
	Invitations []Invitation `json:"invitations"`
}

// Policy is a lab's idle-stop policy, the shape of a rental's idle_stop.
type Policy struct {
	GPUUtilBelowPct int `json:"gpu_util_below_pct"`
	Minutes         int `json:"minutes"`
}

// Member is one member of an organisation.
type Member struct {
	UserID int64  `json:"user_id"`
	Name   string `json:"name"`
	Email  string `json:"email"`
	Role   string `json:"role"`
	// Confirmed: a lab member's institutional address is confirmed.
	Confirmed bool      `json:"confirmed"`
	Since     time.Time `json:"since"`
}

// Invitation is a pending invitation to join an organisation.
type Invitation struct {
	ID        int64     `json:"id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// orgOut is an organisation without its members, as its id, kind and
// settings; detail adds the members and invitations.
func orgOut(o *models.Org, m *models.Membership) Org {
	out := Org{ID: o.ID, Kind: o.Kind, Name: o.Name, Personal: o.Personal, Status: o.Status, StatusReason: o.StatusReason,
		Institution: o.Institution, Supervisor: o.Supervisor, EmailDomain: o.EmailDomain,
		MonthlyBudgetFen: o.MonthlyBudgetFen, MemberCapFen: o.MemberCapFen, CreatedAt: o.CreatedAt, Members: []Member{}}
	if m != nil {
		out.Role = m.Role
	}
	if p := o.IdlePolicy; p != (models.IdleStop{}) {
		out.IdlePolicy = &Policy{GPUUtilBelowPct: p.BelowPct, Minutes: p.Minutes}
	}
	return out
}

// orgID is the route's :id, an organisation.
func orgID(c echo.Context) (int64, error) { return handlers.ParseID(c, "id", "organisation") }

// detail answers an organisation as the caller may see it: its members,
// and its pending invitations when the caller may invite.
func (h *Handler) detail(c echo.Context, status int, id int64) error {
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	org, me, err := h.Accounts.Authorize(ctx, u, id, accounts.ViewOrg)
	if err != nil {
		return err
	}
	out := orgOut(org, me)
	members, err := h.DB.MembersOf(ctx, id)
	if err != nil {
		return err
	}
	for _, m := range members {
		out.Members = append(out.Members, Member{UserID: m.UserID, Name: m.User.Name, Email: m.User.Email, Role: m.Role, Confirmed: m.ConfirmedAt != nil, Since: m.CreatedAt})
	}
	if _, _, err := h.Accounts.Authorize(ctx, u, id, accounts.InviteMembers); err == nil && !org.Personal {
		invs, err := h.Accounts.PendingInvitations(ctx, u, id)
		if err != nil {
			return err
		}
		out.Invitations = make([]Invitation, len(invs))
		for i, inv := range invs {
			out.Invitations[i] = Invitation{ID: inv.ID, Email: inv.Email, Role: inv.Role, CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt}
		}
	}
	return c.JSON(status, out)
}

// decode reads the JSON body into dst (unknown fields refused); a bad
// body is EINVALID naming the field of a wrong type, else "body".
func decode(c echo.Context, dst any, want string) error {
	err := handlers.JSONDecoder(c).Decode(dst)
	if err == nil {
		return nil
	}
	if e := apperr.WrongJSONType(err); e != nil {
		return e
	}
	return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "want JSON " + want + ": " + err.Error()}
}

// renamed renames the fields of a use case's input errors to the API's
// names (the forms take yuan, the API fen: hourly_cap is hourly_cap_fen).
func renamed(err error, names map[string]string) error {
	var fe apperr.Fields
	if errors.As(err, &fe) {
		for _, e := range fe {
			if n, ok := names[e.Field]; ok {
				e.Field = n
			}
		}
		return err
	}
	if ae, ok := apperr.As(err); ok {
		if n, ok := names[ae.Field]; ok {
			ae.Field = n
		}
	}
	return err
}

// throttledAPI answers a use case's throttle (too many invitations) as
// the API's 429 with Retry-After.
func throttledAPI(c echo.Context, err error) error {
	var th *accounts.Throttled
	if !errors.As(err, &th) {
		return err
	}
	secs := max(1, int(th.RetryAfter.Seconds()+0.5))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return &apperr.Error{Code: apperr.ERATELIMIT, Message: fmt.Sprintf("too many requests; retry in %d s", secs)}
}

// orgParam is an optional org_id of a body as APIOrg takes it ("" for
// the caller's personal organisation).
func orgParam(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// noContent answers a change that has nothing to show: 204.
func noContent(c echo.Context) error { return c.NoContent(http.StatusNoContent) }
