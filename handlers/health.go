package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/migrations"
)

// Healthz is GET /healthz: the process is up. It touches nothing else, so
// a slow database never gets a healthy process restarted.
func (h *Handler) Healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// Readyz is GET /readyz: the database answers and its schema is current.
func (h *Handler) Readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	if err := h.DB.Ping(ctx); err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "database": err.Error()})
	}
	st, err := migrations.Check(ctx, h.DB.Dialect, h.DB.ReadSQL)
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "migrations": err.Error()})
	}
	if st.Behind() {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "migrations": st.String() + "; run suanli migrate"})
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "schema_version": st.Current, "offers_indexed": h.Index.Len()})
}
