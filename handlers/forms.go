package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/locales"
	"suanli/views"
)

// form reads the named fields of a POST into a views.Form.
func form(c echo.Context, names ...string) views.Form {
	f := views.Form{Values: map[string]string{}, Errors: map[string]string{}}
	for _, n := range names {
		f.Values[n] = c.FormValue(n)
	}
	return f
}

// withErrors puts field errors into f in the reader's language and reports
// whether err was a form error (anything else is returned to the caller).
func withErrors(c echo.Context, f views.Form, err error) (views.Form, bool) {
	var fe accounts.FieldErrors
	if errors.As(err, &fe) {
		for _, e := range fe {
			f.Errors[e.Field] = locales.T(Lang(c), e.Key, e.Args...)
		}
		return f, true
	}
	if ae, ok := apperr.As(err); ok && ae.Code == apperr.EINVALID && ae.Key != "" {
		field := ae.Field
		if field == "" {
			field = "_form"
		}
		f.Errors[field] = locales.T(Lang(c), ae.Key, ae.Args...)
		return f, true
	}
	return f, false
}

// flash sets a one-time message shown on the next page.
func (h *Handler) flash(c echo.Context, key string, args ...any) {
	h.Sessions.Put(c.Request().Context(), FlashKey, locales.T(Lang(c), key, args...))
}

// seeOther redirects after a successful POST (or tells htmx to).
func seeOther(c echo.Context, url string) error {
	if IsHTMX(c) {
		c.Response().Header().Set("HX-Redirect", url)
		return c.NoContent(http.StatusOK)
	}
	return c.Redirect(http.StatusSeeOther, url)
}

// jsonDecoder reads a JSON body of at most 64 KB, refusing unknown fields.
func jsonDecoder(c echo.Context) *json.Decoder {
	dec := json.NewDecoder(io.LimitReader(c.Request().Body, 64<<10))
	dec.DisallowUnknownFields()
	return dec
}

// jsonDecoderLimit reads a JSON body of at most limit bytes; unknown
// fields are allowed (agents of a newer version may send more).
func jsonDecoderLimit(c echo.Context, limit int64) *json.Decoder {
	return json.NewDecoder(io.LimitReader(c.Request().Body, limit))
}
