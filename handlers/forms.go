package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
	"suanli/views"
)

// ReadForm reads the named fields of a POST into a views.Form.
func ReadForm(c echo.Context, names ...string) views.Form {
	f := views.Form{Values: map[string]string{}, Errors: map[string]string{}}
	for _, n := range names {
		f.Values[n] = c.FormValue(n)
	}
	return f
}

// WithErrors puts field errors into f in the reader's language and reports
// whether err was a form error (anything else is returned to the caller).
func WithErrors(c echo.Context, f views.Form, err error) (views.Form, bool) {
	var fe accounts.FieldErrors
	if errors.As(err, &fe) {
		for _, e := range fe {
			f.Errors[e.Field] = locales.T(Lang(c), e.Key, e.Args...)
		}
		return f, true
	}
	if ae, ok := apperr.As(err); ok && apperr.General(ae.Code) == apperr.EINVALID && ae.Key != "" {
		field := ae.Field
		if field == "" {
			field = "_form"
		}
		f.Errors[field] = locales.T(Lang(c), ae.Key, ae.Args...)
		return f, true
	}
	return f, false
}

// Flash sets a one-time message shown on the next page.
func (h *Handler) Flash(c echo.Context, key string, args ...any) {
	h.Sessions.Put(c.Request().Context(), FlashKey, locales.T(Lang(c), key, args...))
}

// SeeOther redirects after a successful POST (or tells htmx to).
func SeeOther(c echo.Context, url string) error {
	if IsHTMX(c) {
		c.Response().Header().Set("HX-Redirect", url)
		return c.NoContent(http.StatusOK)
	}
	return c.Redirect(http.StatusSeeOther, url)
}

// JSONDecoder reads a JSON body of at most 64 KB, refusing unknown fields.
func JSONDecoder(c echo.Context) *json.Decoder {
	dec := json.NewDecoder(io.LimitReader(c.Request().Body, 64<<10))
	dec.DisallowUnknownFields()
	return dec
}

// JSONDecoderLimit reads a JSON body of at most limit bytes; unknown
// fields are allowed (agents of a newer version may send more).
func JSONDecoderLimit(c echo.Context, limit int64) *json.Decoder {
	return json.NewDecoder(io.LimitReader(c.Request().Body, limit))
}

// YuanField parses an optional yuan amount field into fen (nil when empty).
func YuanField(f views.Form, name string) (*int64, *apperr.Error) {
	s := strings.TrimSpace(f.Get(name))
	if s == "" {
		return nil, nil
	}
	fen, ok := pricing.ParseYuan(s)
	if !ok {
		return nil, &apperr.Error{Code: apperr.EINVALID, Field: name, Key: "err.amount"}
	}
	return &fen, nil
}

// ParseID reads a positive integer path parameter; anything else is a 404
// (an id that cannot exist names nothing).
func ParseID(c echo.Context, name, what string) (int64, error) {
	s := c.Param(name)
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, apperr.NotFound(what + " " + strings.TrimSpace(s))
	}
	return id, nil
}

// APIOrg returns the organisation an API call is about: ?org_id= or the
// caller's personal organisation.
func (h *Handler) APIOrg(c echo.Context, a accounts.Action, orgParam string) (*models.Org, error) {
	ctx := c.Request().Context()
	u := CurrentUser(c)
	if orgParam == "" {
		orgs, err := h.DB.OrgsOfUser(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		for _, om := range orgs {
			if om.Org.Personal {
				orgParam = strconv.FormatInt(om.Org.ID, 10)
			}
		}
	}
	id, err := strconv.ParseInt(orgParam, 10, 64)
	if err != nil || id <= 0 {
		return nil, &apperr.Error{Code: apperr.EINVALID, Field: "org_id", Message: "org_id must be an organisation id"}
	}
	org, _, err := h.Accounts.Authorize(ctx, u, id, a)
	return org, err
}
