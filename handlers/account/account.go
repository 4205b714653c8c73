package account

import (
	"net/http"
	"suanli/handlers"
	"suanli/models/identitystore"

	"github.com/labstack/echo/v4"

	"suanli/routenames"
	"suanli/views"
	"suanli/views/accountpages"
)

// accountPage renders the account page with the given forms.
func (h *Handler) accountPage(c echo.Context, status int, vm accountpages.AccountVM) error {
	u := handlers.CurrentUser(c)
	ctx := c.Request().Context()
	vm.User = userVM(u)
	orgs, err := h.DB.OrgsOfUser(ctx, u.ID)
	if err != nil {
		return err
	}
	vm.Orgs = orgLinks(orgs)
	tokens, err := h.DB.APITokensOf(ctx, u.ID)
	if err != nil {
		return err
	}
	vm.Tokens = tokenRows(tokens)
	invs, err := h.Accounts.InvitationsForMe(ctx, u)
	if err != nil {
		return err
	}
	vm.Invitations = invitationsTo(invs)
	for _, f := range []*views.Form{&vm.Password, &vm.Token, &vm.Org} {
		if f.Values == nil {
			*f = handlers.ReadForm(c)
		}
	}
	return handlers.Render(c, status, accountpages.AccountPage(handlers.ViewCtx(c), vm))
}

// AccountShow is GET /account.
func (h *Handler) AccountShow(c echo.Context) error {
	return h.accountPage(c, http.StatusOK, accountpages.AccountVM{})
}

// AccountPassword is POST /account/password.
func (h *Handler) AccountPassword(c echo.Context) error {
	f := handlers.ReadForm(c)
	err := h.Accounts.ChangePassword(c.Request().Context(), handlers.CurrentUser(c), c.FormValue("current_password"), c.FormValue("password"))
	if msg, ok := throttled(c, err); ok {
		f.Errors["current_password"] = msg
		return h.accountPage(c, http.StatusTooManyRequests, accountpages.AccountVM{Password: f})
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.accountPage(c, http.StatusUnprocessableEntity, accountpages.AccountVM{Password: f})
		}
		return err
	}
	// Every other session has ended; this one is renewed with the new epoch.
	if err := h.logIn(c, handlers.CurrentUser(c)); err != nil {
		return err
	}
	h.Flash(c, "account.password_changed")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AccountShow))
}

// AccountEndSessions is POST /account/sessions/end: logs the user out
// everywhere but here.
func (h *Handler) AccountEndSessions(c echo.Context) error {
	u := handlers.CurrentUser(c)
	if err := h.Accounts.EndOtherSessions(c.Request().Context(), u); err != nil {
		return err
	}
	if err := h.logIn(c, u); err != nil {
		return err
	}
	h.Flash(c, "account.sessions_ended")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AccountShow))
}

// AccountResend is POST /account/verify: mails a new verification link.
func (h *Handler) AccountResend(c echo.Context) error {
	err := h.Accounts.ResendVerification(c.Request().Context(), handlers.CurrentUser(c))
	if msg, ok := throttled(c, err); ok {
		f := handlers.ReadForm(c)
		f.Errors["_resend"] = msg
		return h.accountPage(c, http.StatusTooManyRequests, accountpages.AccountVM{Resend: f})
	}
	if err != nil {
		return err
	}
	h.Flash(c, "account.resent", handlers.CurrentUser(c).Email)
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AccountShow))
}

// TokenCreate is POST /account/tokens: shows the new token once.
func (h *Handler) TokenCreate(c echo.Context) error {
	f := handlers.ReadForm(c, "name")
	plain, _, err := h.Accounts.CreateAPIToken(c.Request().Context(), handlers.CurrentUser(c), f.Get("name"))
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.accountPage(c, http.StatusUnprocessableEntity, accountpages.AccountVM{Token: f})
		}
		return err
	}
	// Rendered, not redirected: the token is shown this once and never stored.
	c.Response().Header().Set("Cache-Control", "no-store")
	return h.accountPage(c, http.StatusCreated, accountpages.AccountVM{NewToken: plain})
}

// TokenRevoke is POST /account/tokens/{id}/revoke.
func (h *Handler) TokenRevoke(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "token")
	if err != nil {
		return err
	}
	if err := h.DB.RevokeAPIToken(c.Request().Context(), handlers.CurrentUser(c).ID, id, h.DB.Now().UTC()); err != nil {
		return err
	}
	h.Flash(c, "tokens.revoked_flash")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AccountShow))
}

// APIMe is GET /api/v1/me: the user, organisations and roles.
func (h *Handler) APIMe(c echo.Context) error {
	u := handlers.CurrentUser(c)
	orgs, err := h.DB.OrgsOfUser(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	type apiOrg struct {
		ID       int64  `json:"id"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
		Personal bool   `json:"personal"`
		Status   string `json:"status"`
		Role     string `json:"role"`
	}
	out := struct {
		ID             int64    `json:"id"`
		Email          string   `json:"email"`
		Name           string   `json:"name"`
		Lang           string   `json:"lang"`
		EmailVerified  bool     `json:"email_verified"`
		PlatformAdmin  bool     `json:"platform_admin"`
		StudentPricing bool     `json:"student_pricing"`
		RealName       string   `json:"real_name"`
		Orgs           []apiOrg `json:"orgs"`
	}{ID: u.ID, Email: u.Email, Name: u.Name, Lang: u.Lang, EmailVerified: u.Verified(), PlatformAdmin: u.PlatformAdmin, Orgs: []apiOrg{}}
	out.StudentPricing = handlers.IsStudent(c)
	if out.RealName, err = identitystore.StatusOf(c.Request().Context(), h.DB, u.ID); err != nil {
		return err
	}
	for _, om := range orgs {
		out.Orgs = append(out.Orgs, apiOrg{om.Org.ID, om.Org.Kind, om.Org.Name, om.Org.Personal, om.Org.Status, om.Membership.Role})
	}
	return c.JSON(http.StatusOK, out)
}
