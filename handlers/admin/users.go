package admin

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/platform"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/adminpages"
)

// maxQueryLen caps a search or filter value; longer input is cut, not refused.
const maxQueryLen = 200

// queryValue reads a query parameter, trimmed and capped, as valid UTF-8
// without NUL bytes (PostgreSQL refuses both in a text parameter).
func queryValue(c echo.Context, name string) string {
	v := strings.TrimSpace(c.QueryParam(name))
	if len(v) > maxQueryLen {
		v = v[:maxQueryLen]
	}
	return strings.ReplaceAll(strings.ToValidUTF8(v, ""), "\x00", "")
}

// pageParam reads ?page=, 1 when missing or not a positive number.
func pageParam(c echo.Context) int {
	n, err := strconv.Atoi(c.QueryParam("page"))
	if err != nil || n < 1 {
		return 1
	}
	return min(n, handlers.MaxPage)
}

// pageLinker returns a function that links to a page of the list at
// route, keeping the filters in values.
func pageLinker(c echo.Context, route string, values url.Values) func(int) string {
	base := c.Echo().Reverse(route)
	return func(page int) string {
		v := url.Values{}
		for k, vs := range values {
			if len(vs) > 0 && vs[0] != "" {
				v.Set(k, vs[0])
			}
		}
		if page > 1 {
			v.Set("page", strconv.Itoa(page))
		}
		if len(v) == 0 {
			return base
		}
		return base + "?" + v.Encode()
	}
}

// AdminUsers is GET /admin/users?q=&page=: users by email or name.
func (h *Handler) AdminUsers(c echo.Context) error {
	return h.renderAdminUsers(c, http.StatusOK, queryValue(c, "q"), pageParam(c), views.Form{}, 0)
}

func (h *Handler) renderAdminUsers(c echo.Context, status int, q string, page int, f views.Form, errID int64) error {
	users, total, err := platform.SearchUsers(c.Request().Context(), h.DB, q, page, models.AdminPerPage)
	if err != nil {
		return err
	}
	vm := adminpages.AdminUsersVM{Q: q, Users: userVMs(users), Self: handlers.CurrentUser(c).ID, Form: f, ErrID: errID,
		Pager:             adminpages.NewPager(page, models.AdminPerPage, total, pageLinker(c, routenames.AdminUsers, url.Values{"q": {q}})),
		DefaultOrgsPerDay: strconv.Itoa(accounts.DefaultOrgsPerDay), MaxOrgsPerDay: strconv.Itoa(accounts.MaxOrgsPerDay)}
	return handlers.Render(c, status, adminpages.AdminUsersPage(handlers.ViewCtx(c), vm))
}

// AdminOrgs is GET /admin/orgs?q=&page=: organisations by name.
func (h *Handler) AdminOrgs(c echo.Context) error {
	return h.renderAdminOrgs(c, http.StatusOK, queryValue(c, "q"), pageParam(c), views.Form{}, 0)
}

func (h *Handler) renderAdminOrgs(c echo.Context, status int, q string, page int, f views.Form, errID int64) error {
	orgs, total, err := platform.SearchOrgs(c.Request().Context(), h.DB, q, page, models.AdminPerPage)
	if err != nil {
		return err
	}
	vm := adminpages.AdminOrgsVM{Q: q, Orgs: orgVMs(orgs), Form: f, ErrID: errID,
		Pager: adminpages.NewPager(page, models.AdminPerPage, total, pageLinker(c, routenames.AdminOrgs, url.Values{"q": {q}}))}
	return handlers.Render(c, status, adminpages.AdminOrgsPage(handlers.ViewCtx(c), vm))
}

// AdminOrgsPerDay is POST /admin/users/{id}/orgs-per-day: how many
// organisations the user may create a day (per_day empty: the default).
func (h *Handler) AdminOrgsPerDay(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "user")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "per_day", "q")
	var n *int
	if v := strings.TrimSpace(f.Get("per_day")); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil {
			k = -1 // refused below as out of range
		}
		n = &k
	}
	if err := h.Accounts.SetOrgsPerDay(c.Request().Context(), handlers.CurrentUser(c), id, n); err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.renderAdminUsers(c, http.StatusUnprocessableEntity, strings.TrimSpace(f.Get("q")), 1, f, id)
		}
		return err
	}
	h.Flash(c, "admin.user_orgs_per_day_set")
	return handlers.SeeOther(c, pageLinker(c, routenames.AdminUsers, url.Values{"q": {strings.TrimSpace(f.Get("q"))}})(1))
}

// AdminSuspendUser is POST /admin/users/{id}/suspend with a reason.
func (h *Handler) AdminSuspendUser(c echo.Context) error {
	return h.adminSuspendUser(c, true)
}

// AdminUnsuspendUser is POST /admin/users/{id}/unsuspend (reason optional).
func (h *Handler) AdminUnsuspendUser(c echo.Context) error {
	return h.adminSuspendUser(c, false)
}

func (h *Handler) adminSuspendUser(c echo.Context, suspend bool) error {
	id, err := handlers.ParseID(c, "id", "user")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "reason", "q")
	ctx, admin := c.Request().Context(), handlers.CurrentUser(c)
	if suspend {
		err = h.Accounts.SuspendUser(ctx, admin, id, f.Get("reason"))
	} else {
		err = h.Accounts.UnsuspendUser(ctx, admin, id, f.Get("reason"))
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.renderAdminUsers(c, http.StatusUnprocessableEntity, strings.TrimSpace(f.Get("q")), 1, f, id)
		}
		return err
	}
	h.Flash(c, map[bool]string{true: "admin.user_suspended", false: "admin.user_unsuspended"}[suspend])
	return handlers.SeeOther(c, pageLinker(c, routenames.AdminUsers, url.Values{"q": {strings.TrimSpace(f.Get("q"))}})(1))
}

// AdminSuspendOrg is POST /admin/orgs/{id}/suspend with a reason.
func (h *Handler) AdminSuspendOrg(c echo.Context) error {
	return h.adminSuspendOrg(c, true)
}

// AdminUnsuspendOrg is POST /admin/orgs/{id}/unsuspend (reason optional).
func (h *Handler) AdminUnsuspendOrg(c echo.Context) error {
	return h.adminSuspendOrg(c, false)
}

func (h *Handler) adminSuspendOrg(c echo.Context, suspend bool) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "reason", "q")
	ctx, admin := c.Request().Context(), handlers.CurrentUser(c)
	if suspend {
		err = h.Accounts.SuspendOrg(ctx, admin, id, f.Get("reason"))
	} else {
		err = h.Accounts.UnsuspendOrg(ctx, admin, id, f.Get("reason"))
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.renderAdminOrgs(c, http.StatusUnprocessableEntity, strings.TrimSpace(f.Get("q")), 1, f, id)
		}
		return err
	}
	// The flash keys are the audit actions' own names.
	h.Flash(c, map[bool]string{true: accounts.AuditOrgSuspended, false: accounts.AuditOrgUnsuspended}[suspend])
	return handlers.SeeOther(c, pageLinker(c, routenames.AdminOrgs, url.Values{"q": {strings.TrimSpace(f.Get("q"))}})(1))
}
