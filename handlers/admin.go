package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/models"
	"suanli/views/pages"
)

// AdminHome is GET /admin: the verification queue, then the outbox.
func (h *Handler) AdminHome(c echo.Context) error {
	ctx := c.Request().Context()
	pending, err := h.DB.OrgsByStatus(ctx, models.OrgPending, models.OrgLab, models.OrgProvider)
	if err != nil {
		return err
	}
	outbox, err := h.DB.Outbox(ctx, "", 50)
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, pages.AdminPage(ViewCtx(c), pages.AdminVM{Pending: pending, Outbox: outbox}))
}

// AdminReview is POST /admin/orgs/{id}/review with decision=approve|reject.
func (h *Handler) AdminReview(c echo.Context) error {
	id, err := parseID(c, "id", "application")
	if err != nil {
		return err
	}
	approve := c.FormValue("decision") == "approve"
	if err := h.Accounts.Review(c.Request().Context(), CurrentUser(c), id, approve, c.FormValue("reason")); err != nil {
		if _, ok := withErrors(c, form(c), err); ok {
			h.flash(c, "admin.reason_required")
			return seeOther(c, c.Echo().Reverse("admin.home"))
		}
		return err
	}
	h.flash(c, "admin.reviewed")
	return seeOther(c, c.Echo().Reverse("admin.home"))
}
