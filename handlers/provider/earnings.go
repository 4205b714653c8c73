package provider

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/handlers/orgverify"
	"suanli/providers"
	"suanli/routenames"
	"suanli/views/providerpages"
)

// ProviderCapacity is GET /provider/{pid}/capacity.
func (h *Handler) ProviderCapacity(c echo.Context) error {
	acc, shell, err := h.providerAccount(c, "capacity")
	if err != nil {
		return err
	}
	capa, err := h.Providers.Capacity(c.Request().Context(), handlers.CurrentUser(c), acc.Provider.ID)
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderCapacityPage(handlers.ViewCtx(c), providerpages.ProviderCapacityVM{Shell: shell, From: capa.From, Nodes: capacityVM(capa)}))
}

// statement loads the month's statement (?month=YYYY-MM). A month that
// does not parse gives the current one and its message, with 422.
func (h *Handler) statement(c echo.Context, acc *providers.Account) (*providers.Statement, string, error) {
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	st, err := h.Providers.Statement(ctx, u, acc.Provider.ID, strings.TrimSpace(c.QueryParam("month")))
	if code := apperr.Code(err); code == apperr.EINVALID {
		msg := handlers.ViewCtx(c).T("provider.err.month")
		st, err = h.Providers.Statement(ctx, u, acc.Provider.ID, "")
		return st, msg, err
	}
	return st, "", err
}

// connectAvailable reports whether Stripe Connect onboarding can be offered.
func (h *Handler) connectAvailable() bool { return h.Payouts != nil && h.Payouts.Connect != nil }

func (h *Handler) earnings(c echo.Context, print bool) error {
	acc, shell, err := h.providerAccount(c, "earnings")
	if err != nil {
		return err
	}
	st, monthErr, err := h.statement(c, acc)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if monthErr != "" {
		status = http.StatusUnprocessableEntity
	}
	// Payouts wait for the organisation's verification (--real-name required).
	hold, err := orgverify.PayoutHold(c, h.Handler, &acc.Provider)
	if err != nil {
		return err
	}
	return handlers.Render(c, status, providerpages.ProviderEarningsPage(handlers.ViewCtx(c), providerpages.ProviderEarningsVM{Shell: shell, S: statementVM(st, handlers.Lang(c)),
		Connect: h.connectAvailable(), Print: print, MonthError: monthErr, PayoutHold: hold}))
}

// ProviderEarnings is GET /provider/{pid}/earnings?month=YYYY-MM: the
// month's statement, the payable balance, payouts and how the provider
// is paid.
func (h *Handler) ProviderEarnings(c echo.Context) error { return h.earnings(c, false) }

// ProviderStatement is GET /provider/{pid}/earnings/statement?month=: the
// statement alone, for printing.
func (h *Handler) ProviderStatement(c echo.Context) error { return h.earnings(c, true) }

// ProviderStatementCSV is GET /provider/{pid}/earnings/statement.csv?month=:
// the statement's lines and totals as CSV, with a UTF-8 byte order mark
// so that Excel reads Chinese correctly.
func (h *Handler) ProviderStatementCSV(c echo.Context) error {
	acc, _, err := h.providerAccount(c, "earnings")
	if err != nil {
		return err
	}
	st, monthErr, err := h.statement(c, acc)
	if err != nil {
		return err
	}
	if monthErr != "" {
		return &apperr.Error{Code: apperr.EINVALID, Field: "month", Message: "want YYYY-MM", Key: "provider.err.month"}
	}
	w, err := handlers.CSVAttachment(c, "suanli-statement-"+st.Provider.Slug+"-"+st.Month+".csv",
		"month", "rental_id", "gpu_model", "gpus", "start_asia_shanghai", "end_asia_shanghai",
		"gross_cny", "commission_cny", "sla_credit_cny", "net_cny")
	if err != nil {
		return err
	}
	for _, l := range st.Lines {
		end := ""
		if !l.End.IsZero() {
			end = handlers.CSVTime(l.End)
		}
		_ = w.Write([]string{st.Month, strconv.FormatInt(l.RentalID, 10), handlers.CSVText(l.GPUModel), strconv.Itoa(l.GPUs),
			handlers.CSVTime(l.Start), end, handlers.CSVYuan(l.GrossFen), handlers.CSVYuan(l.CommissionFen), handlers.CSVYuan(l.SLACreditFen), handlers.CSVYuan(l.NetFen - l.SLACreditFen)})
	}
	_ = w.Write([]string{st.Month, "total", "", "", "", "", handlers.CSVYuan(st.GrossFen), handlers.CSVYuan(st.CommissionFen), handlers.CSVYuan(st.SLACreditFen), handlers.CSVYuan(st.NetFen)})
	_ = w.Write([]string{st.Month, "payable_balance_now", "", "", "", "", "", "", "", handlers.CSVYuan(st.PayableBalanceFen)})
	w.Flush()
	return w.Error()
}

// ProviderConnect is POST /provider/{pid}/connect: to Stripe's Connect
// Express onboarding (owners and admins), coming back to
// provider.connect.return.
func (h *Handler) ProviderConnect(c echo.Context) error {
	_, shell, err := h.providerWriter(c, "earnings")
	if err != nil {
		return err
	}
	if !h.connectAvailable() {
		return &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "Stripe Connect is not available; payouts go by bank transfer", Key: "err.connect_unavailable"}
	}
	base := strings.TrimRight(h.Providers.BaseURL, "/")
	url, err := h.Payouts.ConnectOnboard(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID,
		base+c.Echo().Reverse(routenames.ProviderConnectReturn, shell.PID()), base+c.Echo().Reverse(routenames.ProviderEarnings, shell.PID()))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, url)
}

// ProviderConnectReturn is GET /provider/{pid}/connect/return: back from
// Stripe, the account's charges_enabled and payouts_enabled are read
// again.
func (h *Handler) ProviderConnectReturn(c echo.Context) error {
	_, shell, err := h.providerAccount(c, "earnings")
	if err != nil {
		return err
	}
	if h.connectAvailable() {
		if _, err := h.Payouts.RefreshConnect(c.Request().Context(), shell.ProviderID); err != nil {
			return err
		}
		h.Flash(c, "provider.connect.updated")
	}
	return c.Redirect(http.StatusSeeOther, c.Echo().Reverse(routenames.ProviderEarnings, shell.PID()))
}
