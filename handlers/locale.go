package handlers

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/locales"
)

// LangCookie remembers the language a reader chose.
const LangCookie = "lang"

// LangSwitch is GET /lang/{lang}?next=PATH: it remembers the choice in a
// cookie and goes back. A link, so it works without JavaScript; it changes
// only the reader's own preference, so it needs no CSRF token.
func (h *Handler) LangSwitch(c echo.Context) error {
	lang := locales.Normalize(c.Param("lang"))
	if lang == "" {
		return apperr.NotFound("language " + c.Param("lang"))
	}
	c.SetCookie(&http.Cookie{
		Name: LangCookie, Value: lang, Path: "/", MaxAge: int((365 * 24 * time.Hour).Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.IsTLS(),
	})
	return c.Redirect(http.StatusSeeOther, SafeNext(c.QueryParam("next")))
}

// SafeNext keeps redirects on this site: a local absolute path only.
func SafeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	// Browsers drop tabs and newlines from URLs ("/\t/evil" becomes
	// "//evil"), so no control character may pass.
	for _, r := range next {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return "/"
		}
	}
	return next
}
