package admin

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/handlers/orgverify"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/providers"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/adminpages"
)

// payoutStatuses are the payout page's status filters ("" is all).
var payoutStatuses = []string{"", models.PayoutPending, models.PayoutPaid, models.PayoutFailed}

// AdminPayouts is GET /admin/payouts?status=&page=: payouts, newest first.
func (h *Handler) AdminPayouts(c echo.Context) error {
	status := c.QueryParam("status")
	if !slices.Contains(payoutStatuses, status) {
		status = ""
	}
	return h.renderAdminPayouts(c, http.StatusOK, status, pageParam(c), views.Form{}, 0)
}

func (h *Handler) renderAdminPayouts(c echo.Context, code int, status string, page int, f views.Form, errID int64) error {
	vm := adminpages.AdminPayoutsVM{Status: status, Statuses: payoutStatuses, Form: f, ErrID: errID, Unavailable: h.Payouts == nil,
		RunPeriod: providers.PayoutPeriod(h.DB.Now())}
	rows, total, err := ledger.Payouts(c.Request().Context(), h.DB, ledger.PayoutFilter{Status: status, Page: page, PerPage: models.AdminPerPage})
	if err != nil {
		return err
	}
	vm.Rows = payoutVMs(rows, handlers.Lang(c))
	vm.Pager = adminpages.NewPager(page, models.AdminPerPage, total, pageLinker(c, routenames.AdminPayouts, url.Values{"status": {status}}))
	// Providers a run skips until their organisation is verified.
	if vm.Held, err = orgverify.HeldRows(c, h.Handler); err != nil {
		return err
	}
	return handlers.Render(c, code, adminpages.AdminPayoutsPage(handlers.ViewCtx(c), vm))
}

// AdminPayoutsRun is POST /admin/payouts/run with period=YYYY-MM: the
// monthly payout run, by hand. Running a month twice pays nothing twice.
func (h *Handler) AdminPayoutsRun(c echo.Context) error {
	if h.Payouts == nil {
		return apperr.Errorf(apperr.EUNAVAILABLE, "payouts are not configured")
	}
	f := handlers.ReadForm(c, "period")
	n, err := h.Payouts.Run(c.Request().Context(), f.Get("period"))
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			if f.Errors["period"] == "" {
				f.Errors["period"] = f.Errors["_form"]
			}
			return h.renderAdminPayouts(c, http.StatusUnprocessableEntity, "", 1, f, 0)
		}
		if n == 0 && apperr.Code(err) != apperr.EUNAVAILABLE {
			return err
		}
		// Some providers were paid and some not (Stripe did not answer,
		// say: the transfers wait for the next run): say so, keep the log.
		slog.Error("payout run partly failed", "period", f.Get("period"), "created", n, "err", err)
		h.Flash(c, "admin.payouts.run_partial", n, f.Get("period"))
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminPayouts))
	}
	// The run's summary says how many providers it held for verification.
	held, herr := orgverify.HeldRows(c, h.Handler)
	if herr != nil {
		slog.Warn("payouts held for verification: not listed", "err", herr)
	}
	if len(held) > 0 {
		h.Flash(c, "orgverify.payouts.ran_held", n, f.Get("period"), len(held))
	} else {
		h.Flash(c, "admin.payouts.ran", n, f.Get("period"))
	}
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminPayouts))
}

// AdminPayoutPaid is POST /admin/payouts/{id}/paid with bank_reference:
// a bank payout was paid.
func (h *Handler) AdminPayoutPaid(c echo.Context) error {
	return h.adminPayoutMark(c, true)
}

// AdminPayoutFailed is POST /admin/payouts/{id}/failed with a reason: a
// pending payout could not be paid; its money returns to payable.
func (h *Handler) AdminPayoutFailed(c echo.Context) error {
	return h.adminPayoutMark(c, false)
}

func (h *Handler) adminPayoutMark(c echo.Context, paid bool) error {
	id, err := handlers.ParseID(c, "id", "payout")
	if err != nil {
		return err
	}
	if h.Payouts == nil {
		return apperr.Errorf(apperr.EUNAVAILABLE, "payouts are not configured")
	}
	ctx, admin := c.Request().Context(), handlers.CurrentUser(c)
	var f views.Form
	if paid {
		f = handlers.ReadForm(c, "bank_reference")
		err = h.Payouts.MarkPaid(ctx, admin, id, f.Get("bank_reference"))
	} else {
		f = handlers.ReadForm(c, "reason")
		err = h.Payouts.MarkFailed(ctx, admin, id, f.Get("reason"))
	}
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.renderAdminPayouts(c, http.StatusUnprocessableEntity, models.PayoutPending, 1, f, id)
		}
		if apperr.Code(err) == apperr.ECONFLICT {
			// Another admin (or the run) got there first: nothing changed.
			h.Flash(c, "admin.payout.not_pending", id)
			return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminPayouts))
		}
		return err
	}
	h.Flash(c, map[bool]string{true: "admin.payout.marked_paid", false: "admin.payout.marked_failed"}[paid], id)
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminPayouts)+"?status="+models.PayoutPending)
}
