// Package shareapi holds the API of a rental's share links
// (/api/v1/rentals/{id}/shares): a link that opens one declared HTTP port
// to anyone who holds it, until it expires or is revoked. The handlers
// call the workspace use case the rental page's forms call.
package shareapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/models"
	"suanli/routenames"
)

// Handler is the share links' API handlers, on the shared dependencies.
type Handler struct{ *handlers.Handler }

// Share is a live share link of a rental (never its token, which is
// shown once, when made).
type Share struct {
	ID        int64     `json:"id"`
	Port      int       `json:"port"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Created is a share link just made: its token and URL, shown this once.
type Created struct {
	Share
	Token string `json:"token"`
	URL   string `json:"url"`
}

func shareOut(s *models.PortShare) Share {
	return Share{ID: s.ID, Port: s.Port, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt}
}

func rentalID(c echo.Context) (int64, error) { return handlers.ParseID(c, "id", "rental") }

// APISharesList is GET /api/v1/rentals/{id}/shares: the rental's live
// share links, for whoever may work in it.
func (h *Handler) APISharesList(c echo.Context) error {
	id, err := rentalID(c)
	if err != nil {
		return err
	}
	ss, err := h.Workspace().SharesFor(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	out := make([]Share, len(ss))
	for i := range ss {
		out[i] = shareOut(&ss[i])
	}
	return c.JSON(http.StatusOK, map[string]any{"rental_id": id, "shares": out})
}

// APIShareCreate is POST /api/v1/rentals/{id}/shares {"port","hours"}: a
// share link for a port declared at rent, valid for hours (1–168). The
// answer holds the token and URL, shown this once.
func (h *Handler) APIShareCreate(c echo.Context) error {
	id, err := rentalID(c)
	if err != nil {
		return err
	}
	var in struct {
		Port  int `json:"port"`
		Hours int `json:"hours"`
	}
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: `want JSON {"port":N,"hours":H}: ` + err.Error()}
	}
	token, sh, err := h.Workspace().CreateShare(c.Request().Context(), handlers.CurrentUser(c), id, in.Port, time.Duration(in.Hours)*time.Hour)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	link := strings.TrimRight(h.Rentals.BaseURL, "/") + c.Echo().Reverse(routenames.ShareRoot, token) + "/"
	return c.JSON(http.StatusCreated, Created{Share: shareOut(sh), Token: token, URL: link})
}

// APIShareRevoke is DELETE /api/v1/rentals/{id}/shares/{sid}: the link
// stops opening the port at once.
func (h *Handler) APIShareRevoke(c echo.Context) error {
	id, err := rentalID(c)
	if err != nil {
		return err
	}
	sid, err := handlers.ParseID(c, "sid", "share link")
	if err != nil {
		return err
	}
	if err := h.Workspace().RevokeShare(c.Request().Context(), handlers.CurrentUser(c), id, sid); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
