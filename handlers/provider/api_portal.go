package provider

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/providers"
	"suanli/routenames"
)

// The provider API's side of the portal's other actions: signing up, the
// profile, editing a datacentre, a node's status and registration token,
// Stripe Connect onboarding and the monthly statement. Each calls the use
// case its portal page calls (web/parity_test.go keeps them paired).

// APIProviderProfile is a provider's onboarding profile and verification
// status in the provider API.
type APIProviderProfile struct {
	ProviderID int64  `json:"provider_id"`
	OrgID      int64  `json:"org_id"`
	Slug       string `json:"slug"`
	// Status is the verification: pending, approved or rejected.
	Status       string `json:"status"`
	StatusReason string `json:"status_reason"`
	// Role is the caller's ("" for a platform admin looking in).
	Role            string `json:"role"`
	CompanyName     string `json:"company_name"`
	ContactName     string `json:"contact_name"`
	ContactPhone    string `json:"contact_phone"`
	ContactEmail    string `json:"contact_email"`
	LicenceNo       string `json:"licence_no"`
	BankName        string `json:"bank_name"`
	BankAccountName string `json:"bank_account_name"`
	BankAccountNo   string `json:"bank_account_no"`
	// StripeConnected: a Stripe Connect account is set up; its state.
	StripeConnected      bool `json:"stripe_connected"`
	StripeChargesEnabled bool `json:"stripe_charges_enabled"`
	StripePayoutsEnabled bool `json:"stripe_payouts_enabled"`
}

func apiProfile(a *providers.Account) APIProviderProfile {
	p := a.Provider
	return APIProviderProfile{ProviderID: p.ID, OrgID: a.Org.ID, Slug: p.Slug, Status: a.Org.Status, StatusReason: a.Org.StatusReason, Role: a.Role,
		CompanyName: a.Org.Name, ContactName: p.ContactName, ContactPhone: p.ContactPhone, ContactEmail: p.ContactEmail, LicenceNo: p.LicenceNo,
		BankName: p.BankName, BankAccountName: p.BankAccountName, BankAccountNo: p.BankAccountNo,
		StripeConnected: p.StripeAccountID != "", StripeChargesEnabled: p.StripeChargesEnabled, StripePayoutsEnabled: p.StripePayoutsEnabled}
}

// profileBody is the profile as the API takes it (the form's fields).
type profileBody struct {
	ProviderID      int64  `json:"provider_id"`
	CompanyName     string `json:"company_name"`
	ContactName     string `json:"contact_name"`
	ContactPhone    string `json:"contact_phone"`
	ContactEmail    string `json:"contact_email"`
	LicenceNo       string `json:"licence_no"`
	BankName        string `json:"bank_name"`
	BankAccountName string `json:"bank_account_name"`
	BankAccountNo   string `json:"bank_account_no"`
}

const profileShape = `{"company_name":"…","contact_name":"…","contact_phone":"…","contact_email":"…","licence_no":"…","bank_name":"…","bank_account_name":"…","bank_account_no":"…"}`

func (b profileBody) profile() providers.Profile {
	return providers.Profile{CompanyName: b.CompanyName, ContactName: b.ContactName, ContactPhone: b.ContactPhone, ContactEmail: b.ContactEmail,
		LicenceNo: b.LicenceNo, BankName: b.BankName, BankAccountName: b.BankAccountName, BankAccountNo: b.BankAccountNo}
}

// APIProviderSignup is POST /api/v1/provider/signup: a provider, pending
// until a platform admin verifies it, with the caller as its owner.
func (h *Handler) APIProviderSignup(c echo.Context) error {
	var in profileBody
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return badBody(err, profileShape)
	}
	if in.ProviderID != 0 {
		return &apperr.Error{Code: apperr.EINVALID, Field: "provider_id", Message: "a new provider has no provider_id yet"}
	}
	acc, err := h.Providers.SignUp(c.Request().Context(), handlers.CurrentUser(c), in.profile())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, apiProfile(acc))
}

// APIProviderProfileShow is GET /api/v1/provider/profile (?provider_id).
func (h *Handler) APIProviderProfileShow(c echo.Context) error {
	pid, err := h.queryProvider(c)
	if err != nil {
		return err
	}
	acc, err := h.Providers.Account(c.Request().Context(), handlers.CurrentUser(c), pid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiProfile(acc))
}

// APIProviderProfileUpdate is PUT /api/v1/provider/profile: replaces the
// contact, licence and bank details (owners and admins; a field left out
// is empty, and the required ones are refused so).
func (h *Handler) APIProviderProfileUpdate(c echo.Context) error {
	var in profileBody
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return badBody(err, profileShape)
	}
	pid, err := h.callerProvider(c, in.ProviderID, nil)
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	if err := h.Providers.UpdateProfile(ctx, u, pid, in.profile()); err != nil {
		return err
	}
	acc, err := h.Providers.Account(ctx, u, pid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiProfile(acc))
}

// APIProviderDatacenterUpdate is PUT /api/v1/provider/datacenters/{id}:
// replaces a datacentre's details (as its edit form; storage left out
// stays as it is), for owners and admins.
func (h *Handler) APIProviderDatacenterUpdate(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "datacentre")
	if err != nil {
		return err
	}
	var in datacenterBody
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return badBody(err, `{"name":"…","name_en"?:"…","city":"chengdu","district"?:"…","tier"?:"Tier III","uplink_gbps"?:N,"storage"?:"local"|"shared"}`)
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	pid, err := h.callerProvider(c, in.ProviderID, func() (int64, error) { return h.Providers.ProviderOfDatacenter(ctx, id) })
	if err != nil {
		return err
	}
	if err := h.Providers.UpdateDatacenter(ctx, u, pid, id, in.input()); err != nil {
		return err
	}
	all, err := h.Providers.Datacenters(ctx, u, pid)
	if err != nil {
		return err
	}
	for _, d := range all {
		if d.ID == id {
			out := apiDatacenter(d.Datacenter)
			n := d.Nodes
			out.Nodes = &n
			for _, l := range d.Latencies {
				out.Latencies = append(out.Latencies, apiLatencyShown{FromCity: l.FromCity, RTTms: l.RTTms, Source: l.Source})
			}
			return c.JSON(http.StatusOK, out)
		}
	}
	return apperr.NotFound("datacentre")
}

// APIProviderNodeUpdate is PATCH /api/v1/provider/nodes/{id}
// {"status":"draining"|"active"|"removed"} (or drain, resume, remove):
// drains, resumes or removes a node, for owners and admins; a node with
// live rentals cannot be removed (409). It answers the node.
func (h *Handler) APIProviderNodeUpdate(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	var in struct {
		ProviderID int64  `json:"provider_id"`
		Status     string `json:"status"`
	}
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return badBody(err, `{"status":"draining"|"active"|"removed"}`)
	}
	ctx := c.Request().Context()
	pid, err := h.callerProvider(c, in.ProviderID, func() (int64, error) { return h.Providers.ProviderOfNode(ctx, id) })
	if err != nil {
		return err
	}
	if err := h.Providers.SetNodeStatus(ctx, handlers.CurrentUser(c), pid, id, in.Status); err != nil {
		return err
	}
	return h.APIProviderNodeShow(c)
}

// APIProviderNodeToken is POST /api/v1/provider/nodes/{id}/token: a new
// one-time registration token for the node's agent (the old one stops
// working at once) and the commands that start the agent with it, shown
// this once; for owners and admins.
func (h *Handler) APIProviderNodeToken(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	pid, err := h.callerProvider(c, 0, func() (int64, error) { return h.Providers.ProviderOfNode(ctx, id) })
	if err != nil {
		return err
	}
	tok, err := h.Providers.RenewNodeToken(ctx, u, pid, id)
	if err != nil {
		return err
	}
	d, err := h.Providers.Node(ctx, u, pid, id)
	if err != nil {
		return err
	}
	ic := h.Providers.InstallCommands(&d.Node, tok)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, map[string]any{
		"id": d.Node.ID, "name": d.Node.Name, "datacenter_id": d.Node.DatacenterID, "status": d.Node.Status, "token": tok,
		"install": map[string]string{"shell": ic.Shell, "systemd": ic.Systemd, "docker": ic.Docker},
	})
}

// APIProviderConnect is POST /api/v1/provider/connect {"provider_id"?}:
// a link to Stripe's Connect Express onboarding for the provider's
// payouts, for owners and admins (503 where Stripe Connect is not set up:
// payouts go by bank transfer). Open it in a browser; Stripe sends the
// person back to the portal's earnings.
func (h *Handler) APIProviderConnect(c echo.Context) error {
	var in struct {
		ProviderID int64 `json:"provider_id"`
	}
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil && !isEmptyBody(err) {
		return badBody(err, `{"provider_id"?:N}`)
	}
	pid, err := h.callerProvider(c, in.ProviderID, nil)
	if err != nil {
		return err
	}
	if h.Payouts == nil {
		return &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "Stripe Connect is not available; payouts go by bank transfer", Key: "err.connect_unavailable"}
	}
	// ConnectOnboard authorises first, then answers EUNAVAILABLE where
	// Stripe Connect is not set up: another provider's id is a 404 still.
	p := strconv.FormatInt(pid, 10)
	base := strings.TrimRight(h.Providers.BaseURL, "/")
	url, err := h.Payouts.ConnectOnboard(c.Request().Context(), handlers.CurrentUser(c), pid,
		base+c.Echo().Reverse(routenames.ProviderConnectReturn, p), base+c.Echo().Reverse(routenames.ProviderEarnings, p))
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string]any{"provider_id": pid, "url": url})
}

// isEmptyBody reports whether a decode failed only because there was no
// body (a POST with nothing to say).
func isEmptyBody(err error) bool { return errors.Is(err, io.EOF) }

// APIStatementLine is one rental's money in a statement month.
type APIStatementLine struct {
	RentalID      int64      `json:"rental_id"`
	GPUModel      string     `json:"gpu_model"`
	GPUs          int        `json:"gpus"`
	Start         time.Time  `json:"start"`
	End           *time.Time `json:"end"`
	GrossFen      int64      `json:"gross_fen"`
	CommissionFen int64      `json:"commission_fen"`
	NetFen        int64      `json:"net_fen"`
	SLACreditFen  int64      `json:"sla_credit_fen"`
}

// APIPayout is a payout to the provider.
type APIPayout struct {
	ID        int64      `json:"id"`
	Period    string     `json:"period"`
	AmountFen int64      `json:"amount_fen"`
	Method    string     `json:"method"`
	Status    string     `json:"status"`
	Failure   string     `json:"failure"`
	CreatedAt time.Time  `json:"created_at"`
	PaidAt    *time.Time `json:"paid_at"`
}

// APIProviderStatement is GET /api/v1/provider/statement (?provider_id,
// month=YYYY-MM, Asia/Shanghai; default this month): the month's
// statement, as the earnings page and its CSV show it.
func (h *Handler) APIProviderStatement(c echo.Context) error {
	pid, err := h.queryProvider(c)
	if err != nil {
		return err
	}
	st, err := h.Providers.Statement(c.Request().Context(), handlers.CurrentUser(c), pid, strings.TrimSpace(c.QueryParam("month")))
	if apperr.Code(err) == apperr.EINVALID {
		// One bad query parameter: the API's 400 naming it.
		return &apperr.Error{Code: apperr.EINVALID, Field: "month", Message: "month: want YYYY-MM"}
	}
	if err != nil {
		return err
	}
	lines := make([]APIStatementLine, len(st.Lines))
	for i, l := range st.Lines {
		lines[i] = APIStatementLine{RentalID: l.RentalID, GPUModel: l.GPUModel, GPUs: l.GPUs, Start: l.Start, GrossFen: l.GrossFen,
			CommissionFen: l.CommissionFen, NetFen: l.NetFen, SLACreditFen: l.SLACreditFen}
		if !l.End.IsZero() {
			end := l.End
			lines[i].End = &end
		}
	}
	payouts := make([]APIPayout, len(st.Payouts))
	for i, p := range st.Payouts {
		payouts[i] = APIPayout{ID: p.ID, Period: p.Period, AmountFen: p.AmountFen, Method: p.Method, Status: p.Status, Failure: p.Failure, CreatedAt: p.CreatedAt, PaidAt: p.PaidAt}
	}
	months := append([]string{}, st.Months...)
	return c.JSON(http.StatusOK, map[string]any{
		"provider_id": pid, "month": st.Month, "from": st.From.UTC(), "to": st.To.UTC(), "currency": "cny",
		"gross_fen": st.GrossFen, "commission_fen": st.CommissionFen, "sla_credit_fen": st.SLACreditFen, "net_fen": st.NetFen,
		"payable_balance_fen": st.PayableBalanceFen, "unearned_fen": st.UnearnedFen, "owed_fen": st.OwedFen,
		"lines": lines, "payouts": payouts, "months": months,
	})
}
