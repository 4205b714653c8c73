// Package identity holds the handlers of real-name verification (实名认证,
// issue 21): the user's page (/account/real-name: the privacy notice,
// the form, the SMS code, the withdrawal of consent), its API (POST
// /api/v1/me/real-name and …/confirm, DELETE /api/v1/me/real-name), and
// the admin console's review of a user's identity (the
// audited full read of an ID number, a rejection) and SMS outbox.
package identity

import (
	"errors"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	ident "suanli/identity"
	"suanli/models/identitystore"
	"suanli/views"
	"suanli/views/identitypages"
)

// Handler serves real-name verification on the shared dependencies
// (handlers.Handler.Identity).
type Handler struct{ *handlers.Handler }

// svc is the use case, or EUNAVAILABLE when the server was built
// without it.
func (h *Handler) svc() (*ident.Service, error) {
	if h.Identity == nil {
		return nil, &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "real-name verification is not configured on this server"}
	}
	return h.Identity, nil
}

// identityVM is a verification as the pages show it.
func identityVM(v ident.View) identitypages.Identity {
	return identitypages.Identity{Status: v.Status, Operator: v.Method == identitystore.MethodOperator, Name: v.Name, IDMask: v.IDMask, Phone: v.Phone,
		PhoneMask: v.PhoneMask, SubmittedAt: v.SubmittedAt, VerifiedAt: v.VerifiedAt, RejectedAt: v.RejectedAt, RejectReason: v.RejectReason,
		ConsentVersion: v.ConsentVersion, ConsentAt: v.ConsentAt, CodeExpiresAt: v.CodeExpiresAt, HasSealedID: v.HasSealedID}
}

// retryAfter sets Retry-After on a refused sending (429).
func retryAfter(c echo.Context, err error) {
	var rl *ident.RateLimited
	if errors.As(err, &rl) {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(rl.RetryAfter.Seconds())))
	}
}

// formProblems puts a refusal's messages into f, each beside its field
// when it is one of inputs, else at the top ("_form"), and returns the
// status to answer with; ok is false for an error that is not about the
// request (the central handler answers those).
func formProblems(c echo.Context, f *views.Form, err error, inputs ...string) (status int, ok bool) {
	retryAfter(c, err)
	var problems apperr.Fields
	if !errors.As(err, &problems) {
		ae, isApp := apperr.As(err)
		if !isApp {
			return 0, false
		}
		problems = apperr.Fields{ae}
	}
	vc := handlers.ViewCtx(c)
	for _, p := range problems {
		if p.Key == "" || p.Code == apperr.EINTERNAL {
			return 0, false
		}
		field := p.Field
		if !slices.Contains(inputs, field) {
			field = "_form"
		}
		if f.Errors[field] == "" {
			f.Errors[field] = vc.T(p.Key, p.Args...)
		}
	}
	return handlers.ErrorStatus(err), true
}
