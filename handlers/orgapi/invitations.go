package orgapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/handlers"
)

// APIInvitationCreate is POST /api/v1/orgs/{id}/invitations
// {"email","role":"member"|"admin"}: mails an invitation (throttled per
// inviter and per address: 429 with Retry-After), for the organisation's
// admins. It answers the invitation, pending.
func (h *Handler) APIInvitationCreate(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	var in struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := decode(c, &in, `{"email":"…","role":"member"|"admin"}`); err != nil {
		return err
	}
	inv, err := h.Accounts.Invite(c.Request().Context(), handlers.CurrentUser(c), id, in.Email, in.Role)
	if err != nil {
		return throttledAPI(c, err)
	}
	return c.JSON(http.StatusCreated, Invitation{ID: inv.ID, Email: inv.Email, Role: inv.Role, CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt})
}

// APIInvitationRevoke is DELETE /api/v1/orgs/{id}/invitations/{iid}: the
// invitation's link stops working.
func (h *Handler) APIInvitationRevoke(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	iid, err := handlers.ParseID(c, "iid", "invitation")
	if err != nil {
		return err
	}
	if err := h.Accounts.RevokeInvitation(c.Request().Context(), handlers.CurrentUser(c), id, iid); err != nil {
		return err
	}
	return noContent(c)
}

// APIMemberRemove is DELETE /api/v1/orgs/{id}/members/{uid}, for the
// owner (the owner cannot be removed: 409).
func (h *Handler) APIMemberRemove(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	uid, err := handlers.ParseID(c, "uid", "member")
	if err != nil {
		return err
	}
	if err := h.Accounts.RemoveMember(c.Request().Context(), handlers.CurrentUser(c), id, uid); err != nil {
		return err
	}
	return noContent(c)
}

// MyInvitation is a pending invitation to the caller's verified address.
type MyInvitation struct {
	ID      int64  `json:"id"`
	OrgName string `json:"org_name"`
	Role    string `json:"role"`
}

// APIMyInvitations is GET /api/v1/invitations: the pending invitations
// to the caller's verified address (none before it is verified), as the
// account page lists them.
func (h *Handler) APIMyInvitations(c echo.Context) error {
	invs, err := h.Accounts.InvitationsForMe(c.Request().Context(), handlers.CurrentUser(c))
	if err != nil {
		return err
	}
	out := make([]MyInvitation, len(invs))
	for i, inv := range invs {
		out[i] = MyInvitation{ID: inv.ID, OrgName: inv.OrgName, Role: inv.Role}
	}
	return c.JSON(http.StatusOK, map[string]any{"invitations": out})
}

// APIInvitationAccept is POST /api/v1/invitations/{id}/accept: accepts an
// invitation to the caller's verified address; it answers the
// organisation joined.
func (h *Handler) APIInvitationAccept(c echo.Context) error {
	iid, err := handlers.ParseID(c, "id", "invitation")
	if err != nil {
		return err
	}
	org, err := h.Accounts.AcceptInvitation(c.Request().Context(), handlers.CurrentUser(c), iid)
	if err != nil {
		return err
	}
	return h.detail(c, http.StatusOK, org.ID)
}

// APIInvitationAcceptToken is POST /api/v1/invitations/accept
// {"token"}: accepts an invitation by the token of its mailed link (the
// caller's verified address must be the invited one).
func (h *Handler) APIInvitationAcceptToken(c echo.Context) error {
	var in struct {
		Token string `json:"token"`
	}
	if err := decode(c, &in, `{"token":"…"}`); err != nil {
		return err
	}
	org, err := h.Accounts.AcceptInvite(c.Request().Context(), handlers.CurrentUser(c), in.Token)
	if err != nil {
		return err
	}
	return h.detail(c, http.StatusOK, org.ID)
}

// APILabApply is POST /api/v1/labs {"institution","lab_name",
// "supervisor","email_domain","edu_email"}: a lab, pending until a
// platform admin verifies it; a link is mailed to edu_email to confirm
// it. It answers the lab.
func (h *Handler) APILabApply(c echo.Context) error {
	var in struct {
		Institution string `json:"institution"`
		LabName     string `json:"lab_name"`
		Supervisor  string `json:"supervisor"`
		EmailDomain string `json:"email_domain"`
		EduEmail    string `json:"edu_email"`
	}
	if err := decode(c, &in, `{"institution":"…","lab_name":"…","supervisor":"…","email_domain":"…","edu_email":"…"}`); err != nil {
		return err
	}
	org, err := h.Accounts.ApplyLab(c.Request().Context(), handlers.CurrentUser(c), accounts.LabApplication{
		Institution: in.Institution, LabName: in.LabName, Supervisor: in.Supervisor, EmailDomain: in.EmailDomain, EduEmail: in.EduEmail,
	})
	if err != nil {
		return err
	}
	return h.detail(c, http.StatusCreated, org.ID)
}
