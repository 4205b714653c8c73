package account

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
)

// APIToken is one of the caller's API tokens as the API lists it: never
// the token itself (only its hash is kept), its first characters.
type APIToken struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// APITokensList is GET /api/v1/tokens: the caller's API tokens, newest
// first, as the account page lists them. Making one is for the account
// page only (web/parity_test.go says why).
func (h *Handler) APITokensList(c echo.Context) error {
	ts, err := h.DB.APITokensOf(c.Request().Context(), handlers.CurrentUser(c).ID)
	if err != nil {
		return err
	}
	out := make([]APIToken, len(ts))
	for i, t := range ts {
		out[i] = APIToken{ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
	}
	return c.JSON(http.StatusOK, map[string]any{"tokens": out})
}

// APITokenRevoke is DELETE /api/v1/tokens/{id}: one of the caller's
// tokens stops working at once (the one the request is made with too: a
// script that finds its token leaked can end it). Revoking a revoked
// token changes nothing (204); another user's token is 404.
func (h *Handler) APITokenRevoke(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "token")
	if err != nil {
		return err
	}
	if err := h.DB.RevokeAPIToken(c.Request().Context(), handlers.CurrentUser(c).ID, id, h.DB.Now().UTC()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
