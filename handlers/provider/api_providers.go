package provider

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
)

// APIProvidersMine is GET /api/v1/providers: the providers the caller is
// a member of, each with its profile and the caller's role, as the
// portal's /provider lists them to choose from. The provider API's other
// calls take one of their provider_id (needed when there are several).
func (h *Handler) APIProvidersMine(c echo.Context) error {
	accs, err := h.Providers.Mine(c.Request().Context(), handlers.CurrentUser(c))
	if err != nil {
		return err
	}
	out := make([]APIProviderProfile, len(accs))
	for i := range accs {
		out[i] = apiProfile(&accs[i])
	}
	return c.JSON(http.StatusOK, map[string]any{"providers": out})
}
