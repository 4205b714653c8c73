package identity

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	ident "suanli/identity"
)

// RealName is a verification in the API (schema RealName): never the
// full ID number.
type RealName struct {
	Status         string     `json:"status"`
	Kind           string     `json:"kind"`
	Name           string     `json:"name"`
	IDNumberMasked string     `json:"id_number_masked"`
	PhoneMasked    string     `json:"phone_masked"`
	NoticeVersion  string     `json:"notice_version"`
	ConsentedAt    *time.Time `json:"consented_at"`
	CodeExpiresAt  *time.Time `json:"code_expires_at"`
	VerifiedAt     *time.Time `json:"verified_at"`
}

func realNameJSON(v ident.View) RealName {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return RealName{Status: v.Status, Kind: ident.KindIndividual, Name: v.Name, IDNumberMasked: v.IDMask, PhoneMasked: v.PhoneMask,
		NoticeVersion: v.ConsentVersion, ConsentedAt: utc(v.ConsentAt), CodeExpiresAt: utc(v.CodeExpiresAt), VerifiedAt: utc(v.VerifiedAt)}
}

// startBody is POST /api/v1/me/real-name.
type startBody struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	IDNumber string `json:"id_number"`
	Phone    string `json:"phone"`
}

// APIStart is POST /api/v1/me/real-name: starts the caller's
// verification as an individual; the call is consent to the current
// privacy notice (the operation's documentation says so). 202 pending:
// an SMS code was sent. Bad fields are 422 naming each.
func (h *Handler) APIStart(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	var in startBody
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		if e := apperr.WrongJSONType(err); e != nil {
			return apperr.Fields{e}
		}
		return &apperr.Error{Code: apperr.EINVALID, Field: "body",
			Message: `want JSON {"kind":"individual","name":"…","id_number":"18 characters","phone":"mainland mobile number"}`}
	}
	v, err := svc.StartIndividual(c.Request().Context(), handlers.CurrentUser(c), ident.IndividualInput{Kind: in.Kind, Name: in.Name,
		IDNumber: in.IDNumber, Phone: in.Phone, Consent: true, IP: c.RealIP()})
	if err != nil {
		retryAfter(c, err)
		return err
	}
	return c.JSON(http.StatusAccepted, realNameJSON(v))
}

// APIConfirm is POST /api/v1/me/real-name/confirm {"code"}: verified.
func (h *Handler) APIConfirm(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	var in struct {
		Code string `json:"code"`
	}
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		if e := apperr.WrongJSONType(err); e != nil {
			return apperr.Fields{e}
		}
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: `want JSON {"code":"6 digits"}`}
	}
	v, err := svc.ConfirmIndividual(c.Request().Context(), handlers.CurrentUser(c), in.Code)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, realNameJSON(v))
}

// APIWithdraw is DELETE /api/v1/me/real-name: the caller withdraws their
// consent and their verification's personal information is deleted
// (whatever its status); they are unverified after. The call is the
// confirmation. 204 whether or not anything was held: a DELETE asks for
// an outcome, and a retried one (its answer lost) must not fail.
func (h *Handler) APIWithdraw(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	// No body, or {}: anything else is refused before anything changes
	// (what a NUL character or bad UTF-8 is refused with, too).
	var none struct{}
	if err := handlers.JSONDecoder(c).Decode(&none); err != nil && !errors.Is(err, io.EOF) {
		if _, ok := apperr.As(err); ok {
			return err
		}
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "this operation takes no body (or {}): " + err.Error()}
	}
	if _, err := svc.WithdrawIndividual(c.Request().Context(), handlers.CurrentUser(c), true); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
