package account

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/payments"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views/accountpages"
)

// ledgerFilter reads the ledger filters (kind, from, to as dates in
// Asia/Shanghai); bad values are EINVALID naming the parameter.
func ledgerFilter(c echo.Context) (models.LedgerFilter, error) {
	f := models.LedgerFilter{Kind: c.QueryParam("kind"), Limit: 500}
	if f.Kind != "" && !slices.Contains(ledger.LedgerKinds, f.Kind) {
		return f, &apperr.Error{Code: apperr.EINVALID, Field: "kind", Message: "unknown kind", Key: "err.ledger_kind"}
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
		add  int
	}{{"from", &f.From, 0}, {"to", &f.To, 1}} {
		if s := c.QueryParam(p.name); s != "" {
			d, err := time.ParseInLocation("2006-01-02", s, pricing.Shanghai)
			if err != nil {
				return f, &apperr.Error{Code: apperr.EINVALID, Field: p.name, Message: "want YYYY-MM-DD", Key: "err.date"}
			}
			*p.dst = d.AddDate(0, 0, p.add).UTC()
		}
	}
	return f, nil
}

func (h *Handler) walletVM(c echo.Context, org *models.Org) (accountpages.WalletVM, error) {
	ctx := c.Request().Context()
	vm := accountpages.WalletVM{Org: orgVM(org), Kinds: ledger.LedgerKinds, CardConfigured: h.Wallet.Gateway != nil, Filter: handlers.ReadForm(c, "kind", "from", "to"), Bank: h.Bank}
	var err error
	if vm.BalanceFen, err = ledger.WalletBalance(ctx, h.DB, org.ID); err != nil {
		return vm, err
	}
	if vm.RefundableFen, err = h.Wallet.Refundable(ctx, org.ID); err != nil {
		return vm, err
	}
	topups, err := h.DB.TopupsOf(ctx, org.ID, 20)
	if err != nil {
		return vm, err
	}
	vm.Topups = topupRows(topups)
	refunds, err := h.DB.RefundsOf(ctx, org.ID)
	if err != nil {
		return vm, err
	}
	vm.Refunds = refundRows(refunds)
	f, ferr := ledgerFilter(c)
	if ferr != nil {
		if ff, ok := handlers.WithErrors(c, vm.Filter, ferr); ok {
			vm.Filter = ff
		}
		f = models.LedgerFilter{Limit: 500}
	}
	ledger, err := ledger.WalletLedger(ctx, h.DB, org.ID, f)
	if err != nil {
		return vm, err
	}
	vm.Ledger = ledgerRows(ledger)
	vm.Topup, vm.Refund = handlers.ReadForm(c), handlers.ReadForm(c)
	vm.Billing = handlers.ReadForm(c)
	vm.Billing.Values["invoice_title"], vm.Billing.Values["tax_id"] = org.InvoiceTitle, org.TaxID
	if org.HourlyCapFen != nil {
		vm.Billing.Values["hourly_cap"] = pricing.FenToYuanString(*org.HourlyCapFen)
	}
	_, _, berr := h.Accounts.Authorize(c.Request().Context(), handlers.CurrentUser(c), org.ID, accounts.ManageBilling)
	vm.CanManage = berr == nil
	vm.Alerts, err = h.alertsVM(c, org)
	return vm, err
}

// WalletShow is GET /orgs/{id}/wallet: balance, top-up, ledger, refunds.
func (h *Handler) WalletShow(c echo.Context) error {
	org, err := h.authorizeOrg(c, accounts.ViewWallet)
	if err != nil {
		return err
	}
	vm, err := h.walletVM(c, org)
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, accountpages.WalletPage(handlers.ViewCtx(c), vm))
}

// WalletMine is GET /wallet, the wallet in the navigation: it sends the
// user to their personal organisation's wallet (every user has one), or
// to their first organisation's if they have none; the console lists the
// others.
func (h *Handler) WalletMine(c echo.Context) error {
	oms, err := h.DB.OrgsOfUser(c.Request().Context(), handlers.CurrentUser(c).ID)
	if err != nil {
		return err
	}
	if len(oms) == 0 {
		return apperr.NotFound("organisation")
	}
	id := oms[0].Org.ID
	for _, om := range oms {
		if om.Org.Personal && om.Membership.Role == models.RoleOwner {
			id = om.Org.ID
			break
		}
	}
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.WalletShow, strconv.FormatInt(id, 10)))
}

func (h *Handler) authorizeOrg(c echo.Context, a accounts.Action) (*models.Org, error) {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return nil, err
	}
	org, _, err := h.Accounts.Authorize(c.Request().Context(), handlers.CurrentUser(c), id, a)
	return org, err
}

// WalletTopup is POST /orgs/{id}/wallet/topups: card (Stripe Checkout:
// redirect there) or bank transfer (the reference and bank details).
func (h *Handler) WalletTopup(c echo.Context) error {
	org, err := h.authorizeOrg(c, accounts.TopUp)
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "amount", "method")
	fen, e := handlers.YuanField(f, "amount")
	if e != nil || fen == nil {
		f.Errors["amount"] = handlers.ViewCtx(c).T("err.amount")
	} else {
		t, url, err := h.Wallet.StartTopup(c.Request().Context(), handlers.CurrentUser(c), org.ID, *fen, f.Get("method"), handlers.Lang(c))
		if err == nil {
			if url != "" {
				return c.Redirect(http.StatusSeeOther, url)
			}
			return handlers.SeeOther(c, c.Echo().Reverse(routenames.TopupsShow, strconv.FormatInt(t.ID, 10)))
		}
		if ae, ok := apperr.As(err); ok && ae.Field == "amount_fen" {
			ae.Field = "amount"
		}
		var handled bool
		if f, handled = handlers.WithErrors(c, f, err); !handled {
			if ae, ok := apperr.As(err); ok && ae.Key != "" && ae.Code != apperr.EINTERNAL {
				f.Errors["method"] = handlers.ViewCtx(c).T(ae.Key, ae.Args...)
			} else {
				return err
			}
		}
	}
	return h.walletWithErrors(c, org, func(vm *accountpages.WalletVM) { vm.Topup = f })
}

// walletWithErrors renders the wallet page again, 422, with one form's
// values and messages.
func (h *Handler) walletWithErrors(c echo.Context, org *models.Org, set func(vm *accountpages.WalletVM)) error {
	vm, err := h.walletVM(c, org)
	if err != nil {
		return err
	}
	set(&vm)
	return handlers.Render(c, http.StatusUnprocessableEntity, accountpages.WalletPage(handlers.ViewCtx(c), vm))
}

// WalletRefund is POST /orgs/{id}/wallet/refunds.
func (h *Handler) WalletRefund(c echo.Context) error {
	org, err := h.authorizeOrg(c, accounts.RefundWallet)
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "refund_amount")
	fen, e := handlers.YuanField(f, "refund_amount")
	if e != nil || fen == nil || *fen == 0 {
		f.Errors["refund_amount"] = handlers.ViewCtx(c).T("err.amount")
	} else if _, err := h.Wallet.RequestRefund(c.Request().Context(), handlers.CurrentUser(c), org.ID, *fen); err != nil {
		if ae, ok := apperr.As(err); ok && ae.Field == "amount_fen" {
			ae.Field = "refund_amount"
		}
		var handled bool
		if f, handled = handlers.WithErrors(c, f, err); !handled {
			return err
		}
	} else {
		h.Flash(c, "wallet.refund_requested")
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.WalletShow, c.Param("id")))
	}
	return h.walletWithErrors(c, org, func(vm *accountpages.WalletVM) { vm.Refund = f })
}

// WalletBilling is POST /orgs/{id}/billing: invoice details and the
// hourly spending cap.
func (h *Handler) WalletBilling(c echo.Context) error {
	org, err := h.authorizeOrg(c, accounts.ManageBilling)
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "invoice_title", "tax_id", "hourly_cap")
	capFen, e := handlers.YuanField(f, "hourly_cap")
	if e != nil {
		f.Errors["hourly_cap"] = handlers.ViewCtx(c).T("err.amount")
	} else if err := h.Accounts.SetBilling(c.Request().Context(), handlers.CurrentUser(c), org.ID, accounts.Billing{
		InvoiceTitle: f.Get("invoice_title"), TaxID: f.Get("tax_id"), HourlyCapFen: capFen,
	}); err != nil {
		var handled bool
		if f, handled = handlers.WithErrors(c, f, err); !handled {
			return err
		}
	} else {
		h.Flash(c, "wallet.billing_saved")
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.WalletShow, c.Param("id")))
	}
	return h.walletWithErrors(c, org, func(vm *accountpages.WalletVM) { vm.Billing = f })
}

// WalletCSV is GET /orgs/{id}/wallet/ledger.csv: the filtered ledger.
func (h *Handler) WalletCSV(c echo.Context) error {
	org, err := h.authorizeOrg(c, accounts.ViewWallet)
	if err != nil {
		return err
	}
	f, err := ledgerFilter(c)
	if err != nil {
		return err
	}
	lines, err := ledger.WalletLedger(c.Request().Context(), h.DB, org.ID, f)
	if err != nil {
		return err
	}
	w, err := handlers.CSVAttachment(c, "suanli-ledger-"+strconv.FormatInt(org.ID, 10)+".csv",
		"entry_id", "time_asia_shanghai", "kind", "memo", "amount_cny", "topup_id")
	if err != nil {
		return err
	}
	for _, l := range lines {
		topup := ""
		if l.TopupID != nil {
			topup = strconv.FormatInt(*l.TopupID, 10)
		}
		_ = w.Write([]string{strconv.FormatInt(l.EntryID, 10), handlers.CSVTime(l.CreatedAt), l.Kind, handlers.CSVText(l.Memo), handlers.CSVYuan(l.AmountFen), topup})
	}
	w.Flush()
	return w.Error()
}

// TopupShow is GET /topups/{id}: the status of a top-up, the bank details
// for a transfer, and the printable receipt once paid.
func (h *Handler) TopupShow(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "top-up")
	if err != nil {
		return err
	}
	t, org, err := h.Accounts.Topup(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, accountpages.TopupPage(handlers.ViewCtx(c), accountpages.TopupVM{Topup: topupVM(t), Org: orgVM(org), Returned: c.QueryParam("return"), Bank: h.Bank}))
}

// MaxWebhookBytes is the most a webhook body may be (Stripe's events are
// a few KiB).
const MaxWebhookBytes = 1 << 20

// StripeWebhook is POST /webhooks/stripe: a size-limited body, a verified
// signature (400 when bad, stale or dated ahead), then the event applied
// idempotently.
func (h *Handler) StripeWebhook(c echo.Context) error {
	if h.StripeWebhookSecret == "" {
		return apperr.NotFound("webhook")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, MaxWebhookBytes+1))
	if err != nil {
		// A body cut short or refused on the way in (web's input guard
		// answers for a body too large or not UTF-8): bad input, not ours.
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "could not read the request body"}
	}
	if len(body) > MaxWebhookBytes {
		return &apperr.Error{Code: apperr.ETOOLARGE, Field: "body", Message: "payload too large"}
	}
	ev, err := payments.VerifyWebhook(body, c.Request().Header.Get("Stripe-Signature"), h.StripeWebhookSecret)
	if err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "Stripe-Signature", Message: "signature verification failed: " + err.Error()}
	}
	// A bad payload is a 400; anything else a 500, which Stripe retries.
	if err := h.Wallet.HandleStripeEvent(c.Request().Context(), ev); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"received": true})
}

// APIWallet is GET /api/v1/wallet.
func (h *Handler) APIWallet(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewWallet, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	bal, err := ledger.WalletBalance(ctx, h.DB, org.ID)
	if err != nil {
		return err
	}
	refundable, err := h.Wallet.Refundable(ctx, org.ID)
	if err != nil {
		return err
	}
	rw, as, err := h.walletAlertsAPI(c, org)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"org_id": org.ID, "balance_fen": bal, "refundable_fen": refundable, "currency": "cny", "runway": rw, "alerts": as})
}

// APIWalletLedger is GET /api/v1/wallet/ledger (?kind, from, to, page, per_page).
func (h *Handler) APIWalletLedger(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewWallet, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	f, err := ledgerFilter(c)
	if err != nil {
		return err
	}
	pg, err := handlers.PageParams(c)
	if err != nil {
		return err
	}
	f.Limit, f.Offset = pg.PerPage, pg.Offset()
	ctx := c.Request().Context()
	lines, err := ledger.WalletLedger(ctx, h.DB, org.ID, f)
	if err != nil {
		return err
	}
	total, err := ledger.CountWalletLedger(ctx, h.DB, org.ID, f)
	if err != nil {
		return err
	}
	if err := pg.Within(total); err != nil {
		return err
	}
	if lines == nil {
		lines = []ledger.LedgerLine{}
	}
	return c.JSON(http.StatusOK, map[string]any{"org_id": org.ID, "entries": lines, "currency": "cny", "total": total, "page": pg.Page, "per_page": pg.PerPage})
}

// APITopupCreate is POST /api/v1/wallet/topups {"amount_fen":N,"method":…,"org_id":…}.
func (h *Handler) APITopupCreate(c echo.Context) error {
	var in struct {
		AmountFen int64  `json:"amount_fen"`
		Method    string `json:"method"`
		OrgID     int64  `json:"org_id"`
	}
	dec := handlers.JSONDecoder(c)
	if err := dec.Decode(&in); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "want JSON {\"amount_fen\":N,\"method\":\"stripe\"|\"bank_transfer\"}"}
	}
	orgParam := ""
	if in.OrgID != 0 {
		orgParam = strconv.FormatInt(in.OrgID, 10)
	}
	org, err := h.APIOrg(c, accounts.TopUp, orgParam)
	if err != nil {
		return err
	}
	t, url, err := h.Wallet.StartTopup(c.Request().Context(), handlers.CurrentUser(c), org.ID, in.AmountFen, in.Method, handlers.Lang(c))
	if err != nil {
		return err
	}
	out := map[string]any{"id": t.ID, "status": t.Status, "amount_fen": t.AmountFen, "method": t.Method, "reference": t.Reference, "currency": "cny"}
	if t.CheckoutSessionID != nil {
		out["checkout_url"], out["checkout_session_id"] = url, *t.CheckoutSessionID
	} else {
		out["bank"] = h.Bank
	}
	return c.JSON(http.StatusCreated, out)
}
