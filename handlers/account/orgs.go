package account

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/handlers/orgverify"
	"suanli/idlestop"
	"suanli/models"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/accountpages"
)

// OrgCreate is POST /orgs: a team, or a provider awaiting verification.
func (h *Handler) OrgCreate(c echo.Context) error {
	f := handlers.ReadForm(c, "name", "kind")
	org, err := h.Accounts.CreateOrg(c.Request().Context(), handlers.CurrentUser(c), f.Get("kind"), f.Get("name"))
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.accountPage(c, http.StatusUnprocessableEntity, accountpages.AccountVM{Org: f})
		}
		return err
	}
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, strconv.FormatInt(org.ID, 10)))
}

// orgPage renders an organisation for a user allowed to view it.
func (h *Handler) orgPage(c echo.Context, status int, invite, budget, idle views.Form) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	u := handlers.CurrentUser(c)
	org, me, err := h.Accounts.Authorize(ctx, u, id, accounts.ViewOrg)
	if err != nil {
		return err
	}
	vm := accountpages.OrgVM{Org: orgVM(org), Me: meVM(me), Invite: invite, Budget: budget, IdlePolicy: idle,
		IdleMinMinutes: idlestop.MinMinutes, IdleMaxMinutes: idlestop.MaxMinutes}
	members, err := h.DB.MembersOf(ctx, id)
	if err != nil {
		return err
	}
	vm.Members = memberRows(members)
	_, _, e1 := h.Accounts.Authorize(ctx, u, id, accounts.InviteMembers)
	_, _, e2 := h.Accounts.Authorize(ctx, u, id, accounts.RemoveMembers)
	_, _, e3 := h.Accounts.Authorize(ctx, u, id, accounts.SetBudget)
	_, _, e4 := h.Accounts.Authorize(ctx, u, id, accounts.ViewWallet)
	_, _, e5 := h.Accounts.Authorize(ctx, u, id, accounts.SetIdlePolicy)
	vm.CanInvite, vm.CanRemove, vm.CanBudget, vm.CanWallet = e1 == nil && !org.Personal, e2 == nil, e3 == nil, e4 == nil
	vm.CanIdlePolicy = e5 == nil
	// Its organisation verification (企业认证); e1: an owner or admin.
	if vm.Verification, err = orgverify.Card(c, h.Handler, org, e1 == nil); err != nil {
		return err
	}
	if vm.IdlePolicy.Values == nil {
		vm.IdlePolicy = handlers.ReadForm(c)
		if p := idlestop.Policy(org); p.On() {
			vm.IdlePolicy.Values["idle_policy_below_pct"] = strconv.Itoa(p.BelowPct)
			vm.IdlePolicy.Values["idle_policy_minutes"] = strconv.Itoa(p.Minutes)
		}
	}
	if vm.Budget.Values == nil {
		vm.Budget = handlers.ReadForm(c)
		if org.MonthlyBudgetFen != nil {
			vm.Budget.Values["monthly_budget"] = pricing.FenToYuanString(*org.MonthlyBudgetFen)
		}
		if org.MemberCapFen != nil {
			vm.Budget.Values["member_cap"] = pricing.FenToYuanString(*org.MemberCapFen)
		}
	}
	if vm.Invite.Values == nil {
		vm.Invite = handlers.ReadForm(c)
	}
	if vm.CanInvite {
		invs, err := h.Accounts.PendingInvitations(ctx, u, id)
		if err != nil {
			return err
		}
		for _, inv := range invs {
			vm.Invitations = append(vm.Invitations, accountpages.InvitationRow{ID: inv.ID, Email: inv.Email, Role: inv.Role, ExpiresAt: inv.ExpiresAt})
		}
	}
	return handlers.Render(c, status, accountpages.OrgPage(handlers.ViewCtx(c), vm))
}

// OrgShow is GET /orgs/{id}: members, invitations and, for labs, budget.
func (h *Handler) OrgShow(c echo.Context) error {
	return h.orgPage(c, http.StatusOK, views.Form{}, views.Form{}, views.Form{})
}

// OrgInvite is POST /orgs/{id}/invitations.
func (h *Handler) OrgInvite(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "email", "role")
	if _, err := h.Accounts.Invite(c.Request().Context(), handlers.CurrentUser(c), id, f.Get("email"), f.Get("role")); err != nil {
		if msg, ok := throttled(c, err); ok {
			f.Errors["email"] = msg
			return h.orgPage(c, http.StatusTooManyRequests, f, views.Form{}, views.Form{})
		}
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.orgPage(c, http.StatusUnprocessableEntity, f, views.Form{}, views.Form{})
		}
		return err
	}
	h.Flash(c, "org.invited", f.Get("email"))
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, c.Param("id")))
}

// OrgRevokeInvitation is POST /orgs/{id}/invitations/{iid}/revoke.
func (h *Handler) OrgRevokeInvitation(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation")
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
	h.Flash(c, "org.invitation_revoked")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, c.Param("id")))
}

// OrgRemoveMember is POST /orgs/{id}/members/{uid}/remove.
func (h *Handler) OrgRemoveMember(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation")
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
	h.Flash(c, "org.removed")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, c.Param("id")))
}

// OrgBudget is POST /orgs/{id}/budget: a lab's monthly budget and cap.
func (h *Handler) OrgBudget(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "monthly_budget", "member_cap")
	budget, e1 := handlers.YuanField(f, "monthly_budget")
	cap, e2 := handlers.YuanField(f, "member_cap")
	var fe accounts.FieldErrors
	for _, e := range []*apperr.Error{e1, e2} {
		if e != nil {
			fe = append(fe, e)
		}
	}
	if len(fe) == 0 {
		err = h.Accounts.SetLabBudget(c.Request().Context(), handlers.CurrentUser(c), id, budget, cap)
	} else {
		// Authorise before saying anything about the input.
		if _, _, aerr := h.Accounts.Authorize(c.Request().Context(), handlers.CurrentUser(c), id, accounts.SetBudget); aerr != nil {
			return aerr
		}
		err = fe
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.orgPage(c, http.StatusUnprocessableEntity, views.Form{}, f, views.Form{})
		}
		return err
	}
	h.Flash(c, "lab.budget_saved")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, c.Param("id")))
}

// OrgIdlePolicy is POST /orgs/{id}/idle-policy: a lab's idle-stop policy
// for the rentals it pays for, for its admins (both fields empty: none).
// Bad input shows the page again with the message beside the fields (422).
func (h *Handler) OrgIdlePolicy(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	f := handlers.ReadForm(c, "idle_policy_below_pct", "idle_policy_minutes")
	if p, perr := idlePolicyForm(f); perr != nil {
		// Authorise before saying anything about the input.
		if _, _, aerr := h.Accounts.Authorize(ctx, u, id, accounts.SetIdlePolicy); aerr != nil {
			return aerr
		}
		err = perr
	} else {
		err = h.IdleStop().SetLabPolicy(ctx, u, id, p)
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.orgPage(c, http.StatusUnprocessableEntity, views.Form{}, views.Form{}, f)
		}
		return err
	}
	h.Flash(c, "idle.policy_saved_flash")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, c.Param("id")))
}

// idlePolicyForm reads the organisation page's policy fields: both empty
// is no policy; otherwise whole numbers, or the problem to show.
func idlePolicyForm(f views.Form) (models.IdleStop, *apperr.Error) {
	pct, minutes := strings.TrimSpace(f.Get("idle_policy_below_pct")), strings.TrimSpace(f.Get("idle_policy_minutes"))
	if pct == "" && minutes == "" {
		return models.IdleStop{}, nil
	}
	var p models.IdleStop
	var err error
	if p.BelowPct, err = strconv.Atoi(pct); err != nil {
		return p, apperr.Field(idlestop.PolicyField, "idle.err.pct")
	}
	if p.Minutes, err = strconv.Atoi(minutes); err != nil {
		return p, apperr.Field(idlestop.PolicyField, "idle.err.minutes", idlestop.MinMinutes, idlestop.MaxMinutes)
	}
	return p, nil
}

// LabApplyForm is GET /labs/apply.
func (h *Handler) LabApplyForm(c echo.Context) error {
	return handlers.Render(c, http.StatusOK, accountpages.LabApplyPage(handlers.ViewCtx(c), handlers.ReadForm(c)))
}

// LabApply is POST /labs/apply.
func (h *Handler) LabApply(c echo.Context) error {
	f := handlers.ReadForm(c, "institution", "lab_name", "supervisor", "email_domain", "edu_email")
	org, err := h.Accounts.ApplyLab(c.Request().Context(), handlers.CurrentUser(c), accounts.LabApplication{
		Institution: f.Get("institution"), LabName: f.Get("lab_name"), Supervisor: f.Get("supervisor"),
		EmailDomain: f.Get("email_domain"), EduEmail: f.Get("edu_email"),
	})
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return handlers.Render(c, http.StatusUnprocessableEntity, accountpages.LabApplyPage(handlers.ViewCtx(c), f))
		}
		return err
	}
	h.Flash(c, "lab.applied", f.Get("edu_email"))
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, strconv.FormatInt(org.ID, 10)))
}

// LabConfirm is GET /labs/confirm?token=: the link mailed to a lab member's
// institutional address, opened while logged in as that member.
func (h *Handler) LabConfirm(c echo.Context) error {
	org, err := h.Accounts.ConfirmLabAddress(c.Request().Context(), handlers.CurrentUser(c), c.QueryParam("token"))
	if err != nil {
		return linkFailed(c, err)
	}
	h.Flash(c, "lab.confirmed_flash")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, strconv.FormatInt(org.ID, 10)))
}

// InviteShow is GET /invitations/accept?token=.
func (h *Handler) InviteShow(c echo.Context) error {
	return handlers.Render(c, http.StatusOK, accountpages.InvitePage(handlers.ViewCtx(c), c.QueryParam("token")))
}

// InvitationAccept is POST /invitations/{iid}/accept: an invitation to the
// user's verified address, accepted from the account page.
func (h *Handler) InvitationAccept(c echo.Context) error {
	iid, err := handlers.ParseID(c, "iid", "invitation")
	if err != nil {
		return err
	}
	org, err := h.Accounts.AcceptInvitation(c.Request().Context(), handlers.CurrentUser(c), iid)
	if err != nil {
		return err
	}
	h.Flash(c, "invite.joined", org.Name)
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, strconv.FormatInt(org.ID, 10)))
}

// InviteAccept is POST /invitations/accept.
func (h *Handler) InviteAccept(c echo.Context) error {
	org, err := h.Accounts.AcceptInvite(c.Request().Context(), handlers.CurrentUser(c), c.FormValue("token"))
	if err != nil {
		return linkFailed(c, err)
	}
	h.Flash(c, "invite.joined", org.Name)
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgsShow, strconv.FormatInt(org.ID, 10)))
}
