package identity

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	ident "suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/adminpages"
	"suanli/views/identitypages"
)

// AdminShow is GET /admin/users/{id}/real-name: the user's identity for
// review, the ID number masked.
func (h *Handler) AdminShow(c echo.Context) error {
	return h.renderAdmin(c, http.StatusOK, handlers.ReadForm(c), "")
}

// renderAdmin renders the review page; fullID, when given, is the
// audited read's answer and is never cached.
func (h *Handler) renderAdmin(c echo.Context, status int, f views.Form, fullID string) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	id, err := handlers.ParseID(c, "id", "user")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := h.DB.UserByID(ctx, id)
	if err != nil {
		return err
	}
	v, err := svc.Status(ctx, id)
	if err != nil {
		return err
	}
	vm := identitypages.AdminVM{User: identitypages.User{ID: u.ID, Email: u.Email, Name: u.Name}, Identity: identityVM(v), FullID: fullID, Form: f}
	c.Response().Header().Set("Cache-Control", "no-store")
	return handlers.Render(c, status, identitypages.AdminPage(handlers.ViewCtx(c), vm))
}

// AdminReveal is POST /admin/users/{id}/real-name/reveal: the full ID
// number, shown once in this answer (never cached), after the read is
// written to the audit log with who read whose.
func (h *Handler) AdminReveal(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	id, err := handlers.ParseID(c, "id", "user")
	if err != nil {
		return err
	}
	full, err := svc.RevealID(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	return h.renderAdmin(c, http.StatusOK, handlers.ReadForm(c), full)
}

// AdminReject is POST /admin/users/{id}/real-name/reject with a reason:
// the user's identity is rejected (they may start again).
func (h *Handler) AdminReject(c echo.Context) error {
	svc, err := h.svc()
	if err != nil {
		return err
	}
	id, err := handlers.ParseID(c, "id", "user")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, ident.FieldReason)
	if err := svc.RejectIndividual(c.Request().Context(), handlers.CurrentUser(c), id, f.Get(ident.FieldReason)); err != nil {
		status, ok := formProblems(c, &f, err, ident.FieldReason)
		if !ok {
			return err
		}
		return h.renderAdmin(c, status, f, "")
	}
	h.Flash(c, "realname.admin.rejected_flash")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminRealName, strconv.FormatInt(id, 10)))
}

// AdminSMS is GET /admin/sms?phone=&page=: the SMS outbox, newest first
// (where the codes are when no SMS provider is configured).
func (h *Handler) AdminSMS(c echo.Context) error {
	phone := strings.TrimSpace(c.QueryParam("phone"))
	if p, ok := ident.MobileNumber(phone); ok {
		phone = p
	} else if len(phone) > 32 {
		phone = strings.ToValidUTF8(phone[:32], "")
	}
	page, err := strconv.Atoi(c.QueryParam("page"))
	if err != nil || page < 1 {
		page = 1
	}
	page = min(page, handlers.MaxPage)
	ms, total, err := identitystore.OutboxPage(c.Request().Context(), h.DB, phone, page, models.AdminPerPage)
	if err != nil {
		return err
	}
	vm := identitypages.SMSVM{Phone: phone}
	for _, m := range ms {
		vm.Messages = append(vm.Messages, identitypages.SMS{ID: m.ID, ToPhone: m.ToPhone, Body: m.Body, CreatedAt: m.CreatedAt})
	}
	base := c.Echo().Reverse(routenames.AdminSMS)
	vm.Pager = adminpages.NewPager(page, models.AdminPerPage, total, func(p int) string {
		v := url.Values{}
		if phone != "" {
			v.Set("phone", phone)
		}
		if p > 1 {
			v.Set("page", strconv.Itoa(p))
		}
		if len(v) == 0 {
			return base
		}
		return base + "?" + v.Encode()
	})
	// Live codes and full numbers: never kept by a cache.
	c.Response().Header().Set("Cache-Control", "no-store")
	return handlers.Render(c, http.StatusOK, identitypages.SMSPage(handlers.ViewCtx(c), vm))
}
