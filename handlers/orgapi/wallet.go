package orgapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/handlers"
	"suanli/models"
)

// Refund is one refund of a wallet's balance, against one payment.
type Refund struct {
	ID        int64  `json:"id"`
	AmountFen int64  `json:"amount_fen"`
	Method    string `json:"method"`
	// Status is pending (a bank transfer an admin has yet to pay, or a
	// card refund Stripe has yet to confirm) or done.
	Status    string     `json:"status"`
	CreatedAt time.Time  `json:"created_at"`
	DoneAt    *time.Time `json:"done_at"`
}

func refundsOut(rs []models.Refund) []Refund {
	out := make([]Refund, len(rs))
	for i, r := range rs {
		out[i] = Refund{ID: r.ID, AmountFen: r.AmountFen, Method: r.Method, Status: r.Status, CreatedAt: r.CreatedAt, DoneAt: r.DoneAt}
	}
	return out
}

// refunds answers the organisation's refunds and what is refundable now.
func (h *Handler) refunds(c echo.Context, status int, org *models.Org) error {
	ctx := c.Request().Context()
	rs, err := h.DB.RefundsOf(ctx, org.ID)
	if err != nil {
		return err
	}
	refundable, err := h.Wallet.Refundable(ctx, org.ID)
	if err != nil {
		return err
	}
	return c.JSON(status, map[string]any{"org_id": org.ID, "refundable_fen": refundable, "refunds": refundsOut(rs), "currency": "cny"})
}

// APIRefundsList is GET /api/v1/wallet/refunds (?org_id): the wallet's
// refunds and its refundable balance, as the wallet page shows them.
func (h *Handler) APIRefundsList(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewWallet, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	return h.refunds(c, http.StatusOK, org)
}

// APIRefundCreate is POST /api/v1/wallet/refunds {"org_id","amount_fen"}:
// pays unused paid-in balance back (card payments at once, bank
// transfers by an admin), for the organisation's admins.
func (h *Handler) APIRefundCreate(c echo.Context) error {
	var in struct {
		OrgID     int64 `json:"org_id"`
		AmountFen int64 `json:"amount_fen"`
	}
	if err := decode(c, &in, `{"org_id"?:N,"amount_fen":N}`); err != nil {
		return err
	}
	org, err := h.APIOrg(c, accounts.RefundWallet, orgParam(in.OrgID))
	if err != nil {
		return err
	}
	if _, err := h.Wallet.RequestRefund(c.Request().Context(), handlers.CurrentUser(c), org.ID, in.AmountFen); err != nil {
		return err
	}
	return h.refunds(c, http.StatusCreated, org)
}

// Billing is an organisation's billing details: what receipts print and
// the cap on spending per rolling hour.
type Billing struct {
	OrgID        int64  `json:"org_id"`
	InvoiceTitle string `json:"invoice_title"`
	TaxID        string `json:"tax_id"`
	HourlyCapFen *int64 `json:"hourly_cap_fen"`
}

func billingOut(o *models.Org) Billing {
	return Billing{OrgID: o.ID, InvoiceTitle: o.InvoiceTitle, TaxID: o.TaxID, HourlyCapFen: o.HourlyCapFen}
}

// APIBillingShow is GET /api/v1/wallet/billing (?org_id).
func (h *Handler) APIBillingShow(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewWallet, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, billingOut(org))
}

// APIBillingSet is PUT /api/v1/wallet/billing {"org_id","invoice_title",
// "tax_id","hourly_cap_fen"}: replaces the billing details (a field left
// out is empty, a null cap none), for the organisation's admins.
func (h *Handler) APIBillingSet(c echo.Context) error {
	var in struct {
		OrgID        int64  `json:"org_id"`
		InvoiceTitle string `json:"invoice_title"`
		TaxID        string `json:"tax_id"`
		HourlyCapFen *int64 `json:"hourly_cap_fen"`
	}
	if err := decode(c, &in, `{"org_id"?:N,"invoice_title":"…","tax_id":"…","hourly_cap_fen":N|null}`); err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	org, err := h.APIOrg(c, accounts.ManageBilling, orgParam(in.OrgID))
	if err != nil {
		return err
	}
	err = h.Accounts.SetBilling(ctx, u, org.ID, accounts.Billing{InvoiceTitle: in.InvoiceTitle, TaxID: in.TaxID, HourlyCapFen: in.HourlyCapFen})
	if err != nil {
		return renamed(err, map[string]string{"hourly_cap": "hourly_cap_fen"})
	}
	org, _, err = h.Accounts.Authorize(ctx, u, org.ID, accounts.ViewWallet)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, billingOut(org))
}
