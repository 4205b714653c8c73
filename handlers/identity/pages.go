package identity

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	ident "suanli/identity"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/identitypages"
)

// startInputs are the start form's fields.
var startInputs = []string{ident.FieldName, ident.FieldIDNumber, ident.FieldPhone, ident.FieldConsent}

// Show is GET /account/real-name (?edit=1: the form again while a code
// is pending, for another number or a typo).
func (h *Handler) Show(c echo.Context) error {
	return h.render(c, http.StatusOK, blankForms(c), c.QueryParam("edit") == "1")
}

// pageForms are the page's forms as submitted, with their messages.
type pageForms struct{ start, code, withdraw views.Form }

// blankForms are the page's forms with nothing in them.
func blankForms(c echo.Context) pageForms {
	return pageForms{start: handlers.ReadForm(c), code: handlers.ReadForm(c), withdraw: handlers.ReadForm(c)}
}

// render renders the page with its forms.
func (h *Handler) render(c echo.Context, status int, forms pageForms, editing bool) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	v, err := svc.Status(c.Request().Context(), handlers.CurrentUser(c).ID)
	if err != nil {
		return err
	}
	vm := identitypages.PageVM{Identity: identityVM(v), Required: svc.Required(), Unavailable: svc.Ring == nil, Form: forms.start, Code: forms.code,
		Withdraw: forms.withdraw, Editing: editing, NoticeVersion: ident.NoticeVersion, CodeMinutes: int(ident.CodeTTL.Minutes()), PhonePerDay: ident.PhonePerDay}
	// What the person typed (their ID number among it) is never kept by
	// a cache.
	c.Response().Header().Set("Cache-Control", "no-store")
	return handlers.Render(c, status, identitypages.Page(handlers.ViewCtx(c), vm))
}

// Start is POST /account/real-name: the form (with the consent box
// ticked) starts the verification and sends the code; a refused form is
// shown again with each message beside its field.
func (h *Handler) Start(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, ident.FieldKind, ident.FieldName, ident.FieldIDNumber, ident.FieldPhone, ident.FieldConsent)
	_, err = svc.StartIndividual(c.Request().Context(), handlers.CurrentUser(c), ident.IndividualInput{Kind: f.Get(ident.FieldKind),
		Name: f.Get(ident.FieldName), IDNumber: f.Get(ident.FieldIDNumber), Phone: f.Get(ident.FieldPhone), Consent: f.Get(ident.FieldConsent) != "",
		IP: c.RealIP()})
	if err != nil {
		status, ok := formProblems(c, &f, err, startInputs...)
		if !ok {
			return err
		}
		fs := blankForms(c)
		fs.start = f
		return h.render(c, status, fs, true)
	}
	h.Flash(c, "realname.code_sent")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.RealNameShow))
}

// Confirm is POST /account/real-name/confirm: the SMS code ends the
// verification.
func (h *Handler) Confirm(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	code := handlers.ReadForm(c, ident.FieldCode)
	if _, err := svc.ConfirmIndividual(c.Request().Context(), handlers.CurrentUser(c), code.Get(ident.FieldCode)); err != nil {
		status, ok := formProblems(c, &code, err, ident.FieldCode)
		if !ok {
			return err
		}
		fs := blankForms(c)
		fs.code = code
		return h.render(c, status, fs, false)
	}
	h.Flash(c, "realname.verified_flash")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.RealNameShow))
}

// Resend is POST /account/real-name/resend: a new code to the pending
// number, throttled as a start is.
func (h *Handler) Resend(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	if _, err := svc.ResendCode(c.Request().Context(), handlers.CurrentUser(c), c.RealIP()); err != nil {
		code := handlers.ReadForm(c)
		status, ok := formProblems(c, &code, err, ident.FieldPhone)
		if !ok {
			return err
		}
		fs := blankForms(c)
		fs.code = code
		return h.render(c, status, fs, false)
	}
	h.Flash(c, "realname.code_sent")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.RealNameShow))
}

// Withdraw is POST /account/real-name/withdraw: with its box ticked, the
// user withdraws their consent and their verification's personal
// information is deleted (the page then shows them unverified); without
// it, the page again with the message beside the box (422).
func (h *Handler) Withdraw(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, ident.FieldConfirm)
	withdrew, err := svc.WithdrawIndividual(c.Request().Context(), handlers.CurrentUser(c), f.Get(ident.FieldConfirm) != "")
	if err != nil {
		status, ok := formProblems(c, &f, err, ident.FieldConfirm)
		if !ok {
			return err
		}
		fs := blankForms(c)
		fs.withdraw = f
		return h.render(c, status, fs, false)
	}
	if withdrew {
		h.Flash(c, "realname.withdrawn_flash")
	} else {
		h.Flash(c, "realname.withdrawn_none")
	}
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.RealNameShow))
}
