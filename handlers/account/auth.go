package account

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"suanli/handlers"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/models"
	"suanli/routenames"
	"suanli/views/accountpages"
)

const (
	// afterVerifyKey keeps, in a visitor's session, where to continue once
	// the verification link has been opened (an invitation, say).
	afterVerifyKey = "after_verify"
	// signedUpKey marks the browser that signed a user up: the
	// verification link logs in there; anywhere else it asks for the
	// password to set (see Verify).
	signedUpKey = "signed_up"
)

// logIn starts a fresh session for u (a new token, so a session fixed
// before login is worthless).
func (h *Handler) logIn(c echo.Context, u *models.User) error {
	ctx := c.Request().Context()
	if err := h.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.Sessions.Put(ctx, handlers.SessionUserKey, u.ID)
	h.Sessions.Put(ctx, handlers.SessionEpochKey, u.SessionEpoch)
	return nil
}

// SignupForm is GET /signup (?next= is where to continue once verified).
func (h *Handler) SignupForm(c echo.Context) error {
	f := handlers.ReadForm(c, "next")
	f.Values["next"] = handlers.SafeNext(c.QueryParam("next"))
	return handlers.Render(c, http.StatusOK, accountpages.SignupPage(handlers.ViewCtx(c), f))
}

// Signup is POST /signup. It answers "check your email" whether the
// address is new (a verification link, which logs the user in) or already
// has an account (its owner is told), so that sign-up reveals nothing.
func (h *Handler) Signup(c echo.Context) error {
	f := handlers.ReadForm(c, "email", "name", "lang", "next")
	created, err := h.Accounts.SignUp(c.Request().Context(), accounts.SignUpInput{
		Email: f.Get("email"), Password: c.FormValue("password"), Name: f.Get("name"), Lang: f.Get("lang"), IP: c.RealIP(),
	})
	if msg, ok := throttled(c, err); ok {
		f.Errors["_form"] = msg
		return handlers.Render(c, http.StatusTooManyRequests, accountpages.SignupPage(handlers.ViewCtx(c), f))
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return handlers.Render(c, http.StatusUnprocessableEntity, accountpages.SignupPage(handlers.ViewCtx(c), f))
		}
		return err
	}
	if next := handlers.SafeNext(f.Get("next")); next != "/" {
		h.Sessions.Put(c.Request().Context(), afterVerifyKey, next)
	}
	if created != nil {
		h.Sessions.Put(c.Request().Context(), signedUpKey, created.ID)
	}
	vc := handlers.ViewCtx(c)
	email, _ := accounts.CheckEmail("email", f.Get("email"))
	return handlers.Render(c, http.StatusOK, accountpages.MessagePage(vc, http.StatusOK, vc.T("signup.check_title"), vc.T("signup.check_lead", email), "", ""))
}

// linkFailed answers a one-time link that is invalid, used or expired
// with a page that says so (400); other errors go to the error handler.
func linkFailed(c echo.Context, err error) error {
	ae, ok := apperr.As(err)
	if !ok || ae.Code != apperr.EINVALID {
		return err
	}
	vc := handlers.ViewCtx(c)
	return handlers.Render(c, http.StatusBadRequest, accountpages.MessagePage(vc, http.StatusBadRequest, vc.T("verify.failed"), vc.T(ae.Key, ae.Args...), vc.T("nav.account"), c.Echo().Reverse(routenames.AccountShow)))
}

// throttled reports whether err is a throttle; if so it sets Retry-After
// and returns the message for the page.
func throttled(c echo.Context, err error) (string, bool) {
	var th *accounts.Throttled
	if !errors.As(err, &th) {
		return "", false
	}
	secs := int(th.RetryAfter.Seconds() + 0.5)
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return handlers.ViewCtx(c).T(th.MessageKey(), (secs+59)/60), true
}

// LoginForm is GET /login.
func (h *Handler) LoginForm(c echo.Context) error {
	f := handlers.ReadForm(c, "next")
	f.Values["next"] = handlers.SafeNext(c.QueryParam("next"))
	return handlers.Render(c, http.StatusOK, accountpages.LoginPage(handlers.ViewCtx(c), f))
}

// Login is POST /login, throttled per account and per address.
func (h *Handler) Login(c echo.Context) error {
	f := handlers.ReadForm(c, "email", "next")
	u, err := h.Accounts.Login(c.Request().Context(), f.Get("email"), c.FormValue("password"), c.RealIP())
	if msg, ok := throttled(c, err); ok {
		f.Errors["_form"] = msg
		return handlers.Render(c, http.StatusTooManyRequests, accountpages.LoginPage(handlers.ViewCtx(c), f))
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			f.Errors["_form"], f.Errors["password"] = f.Errors["password"], ""
			return handlers.Render(c, http.StatusUnprocessableEntity, accountpages.LoginPage(handlers.ViewCtx(c), f))
		}
		return err
	}
	if err := h.logIn(c, u); err != nil {
		return err
	}
	return handlers.SeeOther(c, handlers.SafeNext(f.Get("next")))
}

// Logout is POST /logout: the session ends, and with it the sessions of
// rentals' apps origins that it opened.
func (h *Handler) Logout(c echo.Context) error {
	ctx := c.Request().Context()
	if err := h.Workspace().EndAppSessions(ctx, h.Sessions.Token(ctx)); err != nil {
		return err
	}
	if err := h.Sessions.Destroy(ctx); err != nil {
		return err
	}
	return handlers.SeeOther(c, "/")
}

// Verify is GET /verify?token=: the link in the verification mail. In the
// browser that signed up (or one logged in as the user) it verifies the
// address and logs in there, continuing where the sign-up started, if it
// said. Anywhere else the link alone proves only the mailbox, not who
// chose the password at sign-up: it asks for the password to set, which
// verifies on submit (VerifyPassword), and the link is not used until then.
func (h *Handler) Verify(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.QueryParam("token")
	uid, err := h.Accounts.VerifyLinkUser(ctx, token)
	if err != nil {
		return linkFailed(c, err)
	}
	cur := handlers.CurrentUser(c)
	own := (cur != nil && cur.ID == uid) || (cur == nil && h.Sessions.GetInt64(ctx, signedUpKey) == uid)
	if !own {
		f := handlers.ReadForm(c)
		f.Values["token"] = token
		return handlers.Render(c, http.StatusOK, accountpages.VerifyPasswordPage(handlers.ViewCtx(c), f))
	}
	u, err := h.Accounts.VerifyEmail(ctx, token)
	if err != nil {
		return linkFailed(c, err)
	}
	return h.verified(c, u)
}

// VerifyPassword is POST /verify: the password chosen where the
// verification link was opened away from the sign-up; it verifies the
// address, sets the password and logs in here.
func (h *Handler) VerifyPassword(c echo.Context) error {
	f := handlers.ReadForm(c, "token")
	u, err := h.Accounts.VerifyWithPassword(c.Request().Context(), f.Get("token"), c.FormValue("password"))
	if err != nil {
		if ae, ok := apperr.As(err); ok && ae.Field == "token" {
			return linkFailed(c, err)
		}
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return handlers.Render(c, http.StatusUnprocessableEntity, accountpages.VerifyPasswordPage(handlers.ViewCtx(c), f))
		}
		return err
	}
	return h.verified(c, u)
}

// verified logs the verified user in (the epoch changed: every older
// session has ended) and says so, continuing where the sign-up started.
func (h *Handler) verified(c echo.Context, u *models.User) error {
	ctx := c.Request().Context()
	next := h.Sessions.PopString(ctx, afterVerifyKey)
	h.Sessions.Remove(ctx, signedUpKey)
	if err := h.logIn(c, u); err != nil {
		return err
	}
	c.Set(handlers.UserKey, u) // the page is drawn for the user as they are now: verified
	vc := handlers.ViewCtx(c)
	label, link := vc.T("nav.offers"), c.Echo().Reverse(routenames.OffersList)
	if next != "" {
		label, link = vc.T("verify.continue"), handlers.SafeNext(next)
	} else if invs, err := h.Accounts.InvitationsForMe(ctx, u); err != nil {
		// The address is verified already: the page says so all the same,
		// and the account page lists the invitations.
		slog.WarnContext(ctx, "listing invitations after verification", "user", u.ID, "err", err)
	} else if len(invs) > 0 {
		// Invited before signing up, on another device: the account page
		// lists the invitations to accept.
		label, link = vc.T("verify.to_invitations", len(invs)), c.Echo().Reverse(routenames.AccountShow)+"#invitations"
	}
	return handlers.Render(c, http.StatusOK, accountpages.MessagePage(vc, http.StatusOK, vc.T("verify.done"), vc.T("verify.done_lead", u.Email), label, link))
}

// ForgotForm is GET /password/forgot.
func (h *Handler) ForgotForm(c echo.Context) error {
	return handlers.Render(c, http.StatusOK, accountpages.ForgotPage(handlers.ViewCtx(c), handlers.ReadForm(c), false))
}

// Forgot is POST /password/forgot; it answers the same whether or not the
// address has an account.
func (h *Handler) Forgot(c echo.Context) error {
	f := handlers.ReadForm(c, "email")
	err := h.Accounts.RequestPasswordReset(c.Request().Context(), f.Get("email"), c.RealIP())
	if msg, ok := throttled(c, err); ok {
		f.Errors["email"] = msg
		return handlers.Render(c, http.StatusTooManyRequests, accountpages.ForgotPage(handlers.ViewCtx(c), f, false))
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return handlers.Render(c, http.StatusUnprocessableEntity, accountpages.ForgotPage(handlers.ViewCtx(c), f, false))
		}
		return err
	}
	return handlers.Render(c, http.StatusOK, accountpages.ForgotPage(handlers.ViewCtx(c), f, true))
}

// ResetForm is GET /password/reset?token=.
func (h *Handler) ResetForm(c echo.Context) error {
	f := handlers.ReadForm(c)
	f.Values["token"] = c.QueryParam("token")
	return handlers.Render(c, http.StatusOK, accountpages.ResetPage(handlers.ViewCtx(c), f))
}

// Reset is POST /password/reset: sets the password, which ends every
// session of the user, and logs in here.
func (h *Handler) Reset(c echo.Context) error {
	f := handlers.ReadForm(c, "token")
	u, err := h.Accounts.ResetPassword(c.Request().Context(), f.Get("token"), c.FormValue("password"))
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return handlers.Render(c, http.StatusUnprocessableEntity, accountpages.ResetPage(handlers.ViewCtx(c), f))
		}
		return err
	}
	if err := h.logIn(c, u); err != nil {
		return err
	}
	h.Flash(c, "reset.done")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AccountShow))
}
