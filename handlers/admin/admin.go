package admin

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/handlers/orgverify"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/platform"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views/adminpages"
)

// AdminHome is GET /admin: the console's hub, every queue with its size
// (providers and labs to verify, bank transfers to confirm, refunds,
// flagged payment events, open incidents, bank payouts to mark paid).
func (h *Handler) AdminHome(c echo.Context) error {
	ctx := c.Request().Context()
	pending, err := h.DB.OrgsByStatus(ctx, models.OrgPending, models.OrgLab, models.OrgProvider)
	if err != nil {
		return err
	}
	lang := handlers.Lang(c)
	vm := adminpages.AdminVM{Pending: orgVMs(pending)}
	var providerOrgs, pendingOrgs []int64
	for _, o := range pending {
		pendingOrgs = append(pendingOrgs, o.ID)
		if o.Kind == models.OrgProvider {
			providerOrgs = append(providerOrgs, o.ID)
		}
	}
	applicants, err := platform.ApplicantsOfOrgs(ctx, h.DB, pendingOrgs)
	if err != nil {
		return err
	}
	vm.Applicants = applicantVMs(applicants)
	providers, err := platform.ProvidersOfOrgs(ctx, h.DB, providerOrgs)
	if err != nil {
		return err
	}
	vm.Providers = providerVMs(providers)
	topups, err := h.DB.PendingBankTopups(ctx)
	if err != nil {
		return err
	}
	vm.BankTopups = topupVMs(topups)
	refunds, err := h.DB.PendingRefunds(ctx)
	if err != nil {
		return err
	}
	vm.BankRefunds = refundVMs(refunds)
	flagged, err := h.DB.FlaggedStripeEvents(ctx)
	if err != nil {
		return err
	}
	vm.Flagged = stripeEventVMs(flagged)
	incidents, err := platform.OpenIncidents(ctx, h.DB, adminQueueLimit)
	if err != nil {
		return err
	}
	vm.Incidents = incidentVMs(incidents, lang)
	if vm.Counts.Incidents, err = platform.CountOpenIncidents(ctx, h.DB); err != nil {
		return err
	}
	// Stripe transfers finish on their own; bank ones wait for an admin.
	payouts, n, err := ledger.Payouts(ctx, h.DB, ledger.PayoutFilter{Status: models.PayoutPending, Method: models.PayoutBank, PerPage: adminQueueLimit})
	if err != nil {
		return err
	}
	vm.Payouts, vm.Counts.Payouts = payoutVMs(payouts, lang), n
	vm.Counts.Verify, vm.Counts.BankTopups, vm.Counts.Refunds, vm.Counts.Flagged = len(vm.Pending), len(vm.BankTopups), len(vm.BankRefunds), len(vm.Flagged)
	if vm.OrgNames, err = platform.OrgNames(ctx, h.DB, orgIDs(vm)); err != nil {
		return err
	}
	// Organisation verifications (企业认证) waiting for review.
	if vm.OrgVerify, err = orgverify.Queue(c, h.Handler, adminQueueLimit); err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, adminpages.AdminPage(handlers.ViewCtx(c), vm))
}

// adminQueueLimit is the most rows of one queue the hub shows.
const adminQueueLimit = 100

func orgIDs(vm adminpages.AdminVM) []int64 {
	var ids []int64
	for _, t := range vm.BankTopups {
		ids = append(ids, t.OrgID)
	}
	for _, r := range vm.BankRefunds {
		ids = append(ids, r.OrgID)
	}
	return ids
}

// AdminConfirmTopup is POST /admin/topups/{id}/confirm with received=¥ amount.
func (h *Handler) AdminConfirmTopup(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "top-up")
	if err != nil {
		return err
	}
	fen, ok := pricing.ParseYuan(strings.TrimSpace(c.FormValue("received")))
	if !ok || fen == 0 {
		h.Flash(c, "err.amount")
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminHome))
	}
	if err := h.Wallet.ConfirmBankTransfer(c.Request().Context(), handlers.CurrentUser(c), id, fen); err != nil {
		return err
	}
	h.Flash(c, "admin.topup_confirmed")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminHome))
}

// AdminRefundPaid is POST /admin/refunds/{id}/paid: a bank refund paid
// out, or a failed Stripe refund retried.
func (h *Handler) AdminRefundPaid(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "refund")
	if err != nil {
		return err
	}
	if err := h.Wallet.SettleRefund(c.Request().Context(), handlers.CurrentUser(c), id); err != nil {
		return err
	}
	h.Flash(c, "admin.refund_paid")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminHome))
}

// AdminReview is POST /admin/orgs/{id}/review with decision=approve|reject.
func (h *Handler) AdminReview(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "application")
	if err != nil {
		return err
	}
	approve := c.FormValue("decision") == "approve"
	if err := h.Accounts.Review(c.Request().Context(), handlers.CurrentUser(c), id, approve, c.FormValue("reason")); err != nil {
		if _, ok := handlers.WithErrors(c, handlers.ReadForm(c), err); ok {
			h.Flash(c, "admin.reason_required")
			return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminHome))
		}
		return err
	}
	h.Flash(c, "admin.reviewed")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminHome))
}
