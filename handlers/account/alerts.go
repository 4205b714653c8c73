package account

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/billing"
	"suanli/handlers"
	"suanli/handlers/alertvm"
	"suanli/models"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/spendalerts"
	"suanli/views"
	"suanli/views/accountpages"
)

// alerts is the spending alerts' use case on the handler's services.
func (h *Handler) alerts() *spendalerts.Service {
	return &spendalerts.Service{DB: h.DB, Accounts: h.Accounts}
}

// alertsVM is the wallet page's alerts: the runway, the thresholds the
// viewer's membership lets them see crossed, the settings and the form
// filled with them.
func (h *Handler) alertsVM(c echo.Context, org *models.Org) (accountpages.AlertsVM, error) {
	ctx := c.Request().Context()
	svc := h.alerts()
	var vm accountpages.AlertsVM
	rw, err := svc.Runway(ctx, org.ID)
	if err != nil {
		return vm, err
	}
	u := handlers.CurrentUser(c)
	as, err := h.viewerAlerts(c, svc, org)
	if err != nil {
		return vm, err
	}
	set, err := svc.Settings(ctx, org.ID)
	if err != nil {
		return vm, err
	}
	lang := handlers.Lang(c)
	vm.Runway, vm.Current, vm.Settings = alertvm.Runway(rw, lang), alertvm.Alerts(org, as, u.ID, lang), alertvm.Settings(set)
	vm.Form = handlers.ReadForm(c)
	vm.Form.Values = alertvm.FormValues(set)
	return vm, nil
}

// alertsForm reads the wallet page's alerts form: thresholds as typed,
// the low balance in yuan, the runway in whole hours (empty: off). Bad
// input is apperr.Fields naming the form's fields.
func alertsForm(f views.Form) (spendalerts.Settings, error) {
	var in spendalerts.Settings
	var errs apperr.Fields
	pcts, err := spendalerts.ParsePcts(f.Get("limit_pcts"))
	if ae, ok := apperr.As(err); ok {
		errs = append(errs, ae)
	}
	in.LimitPcts = pcts
	fen, ferr := handlers.YuanField(f, "low_balance")
	if ferr != nil {
		errs = append(errs, apperr.Field("low_balance", "err.amount"))
	}
	in.LowBalanceFen = fen
	if s := strings.TrimSpace(f.Get("runway_hours")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			errs = append(errs, apperr.Field(spendalerts.FieldRunway, "err.alert_runway", spendalerts.MaxRunwayHours))
		}
		in.RunwayHours = &n
	}
	return in, errs.OrNil()
}

// WalletAlerts is POST /orgs/{id}/alerts: the organisation's alert
// thresholds, for its owner and admins. Bad input shows the wallet page
// again with the message beside the field (422).
func (h *Handler) WalletAlerts(c echo.Context) error {
	org, err := h.authorizeOrg(c, accounts.ManageBilling)
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "limit_pcts", "low_balance", "runway_hours")
	in, err := alertsForm(f)
	if err == nil {
		_, err = h.alerts().SetSettings(c.Request().Context(), handlers.CurrentUser(c), org.ID, in)
	}
	if err != nil {
		var fe apperr.Fields
		if errors.As(err, &fe) {
			for _, e := range fe {
				if e.Field == spendalerts.FieldLowBalance {
					e.Field = "low_balance" // the form's field is in yuan
				}
			}
		}
		var handled bool
		if f, handled = handlers.WithErrors(c, f, err); !handled {
			return err
		}
		return h.walletWithErrors(c, org, func(vm *accountpages.WalletVM) { vm.Alerts.Form = f })
	}
	h.Flash(c, "alerts.saved")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.WalletShow, c.Param("id"))+"#alerts")
}

// APIWalletAlerts is GET /api/v1/wallet/alerts (?org_id): the
// organisation's alert settings.
func (h *Handler) APIWalletAlerts(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewWallet, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	set, err := h.alerts().Settings(c.Request().Context(), org.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, alertvm.SettingsOut(org.ID, set))
}

// APIWalletAlertsSet is POST /api/v1/wallet/alerts {"org_id",
// "limit_pcts", "low_balance_fen", "runway_hours"}, for the
// organisation's owner and admins: the fields given replace the settings
// (null turns a wallet alert off, [] the limits' alerts), those left out
// stay. It answers the settings stored.
func (h *Handler) APIWalletAlertsSet(c echo.Context) error {
	var in struct {
		OrgID         int64           `json:"org_id"`
		LimitPcts     json.RawMessage `json:"limit_pcts"`
		LowBalanceFen json.RawMessage `json:"low_balance_fen"`
		RunwayHours   json.RawMessage `json:"runway_hours"`
	}
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: `want JSON {"limit_pcts":[50,80,100],"low_balance_fen":N|null,"runway_hours":N|null}`}
	}
	orgParam := ""
	if in.OrgID != 0 {
		orgParam = strconv.FormatInt(in.OrgID, 10)
	}
	org, err := h.APIOrg(c, accounts.ManageBilling, orgParam)
	if err != nil {
		return err
	}
	// The fields given replace those stored, read in the update's own
	// transaction: two partial updates at once both count.
	out, err := h.alerts().UpdateSettings(c.Request().Context(), handlers.CurrentUser(c), org.ID, func(set *spendalerts.Settings) error {
		var errs apperr.Fields
		decode := func(raw json.RawMessage, dst any, bad *apperr.Error) {
			if raw == nil {
				return // left out: unchanged
			}
			if err := json.Unmarshal(raw, dst); err != nil {
				errs = append(errs, bad)
			}
		}
		if in.LimitPcts != nil {
			set.LimitPcts = nil // null: no limit alerts (Check makes it empty)
		}
		decode(in.LimitPcts, &set.LimitPcts, apperr.Field(spendalerts.FieldLimitPcts, "err.alert_pcts", spendalerts.MaxLimitPcts))
		if in.LowBalanceFen != nil {
			set.LowBalanceFen = nil
		}
		decode(in.LowBalanceFen, &set.LowBalanceFen, apperr.Field(spendalerts.FieldLowBalance, "err.alert_low_balance", pricing.FenToYuanString(billing.MaxTopupFen)))
		if in.RunwayHours != nil {
			set.RunwayHours = nil
		}
		decode(in.RunwayHours, &set.RunwayHours, apperr.Field(spendalerts.FieldRunway, "err.alert_runway", spendalerts.MaxRunwayHours))
		return errs.OrNil()
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, alertvm.SettingsOut(org.ID, out))
}

// walletAlertsAPI is the wallet's runway and the thresholds crossed now
// (as the caller's membership lets them see), for GET /api/v1/wallet.
func (h *Handler) walletAlertsAPI(c echo.Context, org *models.Org) (alertvm.API, []alertvm.AlertAPI, error) {
	ctx := c.Request().Context()
	svc := h.alerts()
	rw, err := svc.Runway(ctx, org.ID)
	if err != nil {
		return alertvm.API{}, nil, err
	}
	as, err := h.viewerAlerts(c, svc, org)
	return alertvm.RunwayAPI(rw), alertvm.AlertsAPI(as), err
}

// viewerAlerts are the thresholds the organisation has crossed now, as
// the viewer's membership lets them see (a platform admin looking in,
// with none, sees all).
func (h *Handler) viewerAlerts(c echo.Context, svc *spendalerts.Service, org *models.Org) ([]spendalerts.Alert, error) {
	ctx := c.Request().Context()
	m, err := h.DB.MembershipOf(ctx, org.ID, handlers.CurrentUser(c).ID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		m, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return svc.Alerts(ctx, org, m)
}
