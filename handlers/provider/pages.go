// Package provider holds the provider portal's handlers (/provider/…):
// onboarding, the profile, datacentres, nodes, offers, capacity and
// earnings, and the provider API (/api/v1/provider/…). Rules live in
// providers.Service; these bind, call and render.
package provider

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/handlers"
	"suanli/locales"
	"suanli/providers"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/providerpages"
)

// Handler is the provider portal's and provider API's handlers: the
// shared handlers.Handler (its database, providers.Service and payouts),
// with this area's methods; web mounts them on the route table.
type Handler struct{ *handlers.Handler }

// The portal's pages: onboarding, the profile and the datacentres here;
// nodes, offers, capacity and earnings in nodes.go, offers.go and
// earnings.go.

// providerAccount loads the provider named by :pid as the user sees it
// (ENOTFOUND for anyone outside it) and the portal frame for the tab.
func (h *Handler) providerAccount(c echo.Context, tab string) (*providers.Account, providerpages.ProviderShell, error) {
	pid, err := handlers.ParseID(c, "pid", "provider")
	if err != nil {
		return nil, providerpages.ProviderShell{}, err
	}
	acc, err := h.Providers.Account(c.Request().Context(), handlers.CurrentUser(c), pid)
	if err != nil {
		return nil, providerpages.ProviderShell{}, err
	}
	return acc, providerShell(acc, tab, handlers.Lang(c)), nil
}

// providerWriter is providerAccount for a change: anyone who may look but
// not change is refused (403) before the input is read.
func (h *Handler) providerWriter(c echo.Context, tab string) (*providers.Account, providerpages.ProviderShell, error) {
	acc, shell, err := h.providerAccount(c, tab)
	if err == nil && !shell.CanManage {
		err = apperr.Errorf(apperr.EFORBIDDEN, "only the provider's owners and admins may change this")
	}
	return acc, shell, err
}

// providerFormError puts a refusal into f beside its field (market field
// names are renamed by aliases to the form's), or at the top of the form
// when the form has no such field. It returns the status to answer with
// (422 for bad input, 409 for a conflict), or err itself when err is not
// about the input (not found, forbidden, internal: the central handler's).
func providerFormError(c echo.Context, f *views.Form, err error, aliases map[string]string) (int, error) {
	var list []*apperr.Error
	var fe apperr.Fields
	if errors.As(err, &fe) {
		list = fe
	} else if ae, ok := apperr.As(err); ok {
		list = []*apperr.Error{ae}
	} else {
		return 0, err
	}
	status := http.StatusUnprocessableEntity
	for _, ae := range list {
		switch ae.Code {
		case apperr.EINVALID:
		case apperr.ECONFLICT:
			status = http.StatusConflict
		default:
			return 0, err
		}
		field := ae.Field
		if a, ok := aliases[field]; ok {
			field = a
		}
		if _, known := f.Values[field]; !known {
			field = "_form"
		}
		if f.Errors[field] == "" {
			f.Errors[field] = errText(c, ae)
		}
	}
	return status, nil
}

// errText is an error's message in the reader's language (its English
// message when its key has no translation).
func errText(c echo.Context, ae *apperr.Error) string {
	if ae.Key != "" && locales.Has(handlers.Lang(c), ae.Key) {
		return locales.T(handlers.Lang(c), ae.Key, ae.Args...)
	}
	return ae.Message
}

// intField parses an optional whole-number field: "" is 0; anything else
// not a whole number is a message beside the field.
func intField(c echo.Context, f *views.Form, name string) int {
	s := strings.TrimSpace(f.Get(name))
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 1<<30 {
		f.Errors[name] = handlers.ViewCtx(c).T("provider.err.whole")
		return 0
	}
	return n
}

var profileFields = []string{"company_name", "contact_name", "contact_phone", "contact_email", "licence_no", "bank_name", "bank_account_name", "bank_account_no"}

func profileOf(f views.Form) providers.Profile {
	return providers.Profile{CompanyName: f.Get("company_name"), ContactName: f.Get("contact_name"), ContactPhone: f.Get("contact_phone"),
		ContactEmail: f.Get("contact_email"), LicenceNo: f.Get("licence_no"), BankName: f.Get("bank_name"),
		BankAccountName: f.Get("bank_account_name"), BankAccountNo: f.Get("bank_account_no")}
}

// ProviderHome is GET /provider: the portal of the user's provider, the
// choice among several, or the onboarding form when there is none.
func (h *Handler) ProviderHome(c echo.Context) error {
	accs, err := h.Providers.Mine(c.Request().Context(), handlers.CurrentUser(c))
	if err != nil {
		return err
	}
	if len(accs) == 1 {
		return c.Redirect(http.StatusSeeOther, c.Echo().Reverse(routenames.ProviderDashboard, strconv.FormatInt(accs[0].Provider.ID, 10)))
	}
	f := handlers.ReadForm(c)
	if u := handlers.CurrentUser(c); len(accs) == 0 {
		f.Values["contact_name"], f.Values["contact_email"] = u.Name, u.Email
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderChoosePage(handlers.ViewCtx(c), providerpages.ProviderChooseVM{Accounts: accountsVM(accs, handlers.Lang(c)), Form: f}))
}

// ProviderSignup is POST /provider/signup: a provider organisation,
// pending until a platform admin verifies it.
func (h *Handler) ProviderSignup(c echo.Context) error {
	ctx := c.Request().Context()
	f := handlers.ReadForm(c, profileFields...)
	acc, err := h.Providers.SignUp(ctx, handlers.CurrentUser(c), profileOf(f))
	if err == nil {
		h.Flash(c, "provider.signed_up")
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.ProviderDashboard, strconv.FormatInt(acc.Provider.ID, 10)))
	}
	status, err := providerFormError(c, &f, err, nil)
	if err != nil {
		return err
	}
	accs, err := h.Providers.Mine(ctx, handlers.CurrentUser(c))
	if err != nil {
		return err
	}
	return handlers.Render(c, status, providerpages.ProviderChoosePage(handlers.ViewCtx(c), providerpages.ProviderChooseVM{Accounts: accountsVM(accs, handlers.Lang(c)), Form: f}))
}

// ProviderDashboard is GET /provider/{pid}: status, counts and next steps.
func (h *Handler) ProviderDashboard(c echo.Context) error {
	acc, shell, err := h.providerAccount(c, "dashboard")
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	vm := providerpages.ProviderDashboardVM{Shell: shell, Now: h.DB.Now()}
	dcs, err := h.Providers.Datacenters(ctx, u, acc.Provider.ID)
	if err != nil {
		return err
	}
	vm.Datacenters = len(dcs)
	nodes, err := h.Providers.Nodes(ctx, u, acc.Provider.ID)
	if err != nil {
		return err
	}
	vm.Nodes = nodeRowsVM(nodes, handlers.Lang(c))
	offers, err := h.Providers.Offers(ctx, u, acc.Provider.ID)
	if err != nil {
		return err
	}
	vm.Offers = len(offers)
	return handlers.Render(c, http.StatusOK, providerpages.ProviderDashboardPage(handlers.ViewCtx(c), vm))
}

// ProviderProfile is GET /provider/{pid}/profile.
func (h *Handler) ProviderProfile(c echo.Context) error {
	acc, shell, err := h.providerAccount(c, "profile")
	if err != nil {
		return err
	}
	p := acc.Provider
	f := handlers.ReadForm(c)
	for k, v := range map[string]string{"company_name": acc.Org.Name, "contact_name": p.ContactName, "contact_phone": p.ContactPhone,
		"contact_email": p.ContactEmail, "licence_no": p.LicenceNo, "bank_name": p.BankName, "bank_account_name": p.BankAccountName,
		"bank_account_no": p.BankAccountNo} {
		f.Values[k] = v
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderProfilePage(handlers.ViewCtx(c), providerpages.ProviderProfileVM{Shell: shell, Form: f}))
}

// ProviderProfileSave is POST /provider/{pid}/profile.
func (h *Handler) ProviderProfileSave(c echo.Context) error {
	acc, shell, err := h.providerWriter(c, "profile")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, profileFields...)
	err = h.Providers.UpdateProfile(c.Request().Context(), handlers.CurrentUser(c), acc.Provider.ID, profileOf(f))
	if err == nil {
		h.Flash(c, "provider.saved")
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.ProviderProfile, shell.PID()))
	}
	status, err := providerFormError(c, &f, err, nil)
	if err != nil {
		return err
	}
	return handlers.Render(c, status, providerpages.ProviderProfilePage(handlers.ViewCtx(c), providerpages.ProviderProfileVM{Shell: shell, Form: f}))
}

// dcFields are the datacentre form's fields (one declared latency per city).
func dcFields() []string {
	fs := []string{"name", "name_en", "city", "district", "district_en", "tier", "uplink_gbps", "storage"}
	for _, c := range catalog.Cities() {
		fs = append(fs, "latency_"+c.Slug)
	}
	return fs
}

// datacenterInput reads the datacentre form; numbers that do not parse
// get their message in f.
func datacenterInput(c echo.Context, f *views.Form) providers.DatacenterInput {
	in := providers.DatacenterInput{NameZH: f.Get("name"), NameEN: f.Get("name_en"), City: f.Get("city"),
		DistrictZH: f.Get("district"), DistrictEN: f.Get("district_en"), Tier: f.Get("tier"), UplinkGbps: intField(c, f, "uplink_gbps"),
		Storage: f.Get("storage")}
	for _, city := range catalog.Cities() {
		name := "latency_" + city.Slug
		s := strings.TrimSpace(f.Get(name))
		if s == "" {
			continue
		}
		ms, err := strconv.ParseFloat(s, 64)
		if err != nil || ms != ms {
			f.Errors[name] = handlers.ViewCtx(c).T("provider.err.ms")
			continue
		}
		in.Latencies = append(in.Latencies, providers.DeclaredLatency{FromCity: city.Slug, RTTms: ms})
	}
	return in
}

// datacenters loads the provider's datacentres.
func (h *Handler) datacenters(c echo.Context, acc *providers.Account) ([]providers.DatacenterView, error) {
	return h.Providers.Datacenters(c.Request().Context(), handlers.CurrentUser(c), acc.Provider.ID)
}

// datacentersPage renders the datacentres' page: the list, and the form
// for editing (nil: a new one).
func datacentersPage(c echo.Context, status int, shell providerpages.ProviderShell, dcs []providers.DatacenterView, editing *providers.DatacenterView, f views.Form) error {
	lang := handlers.Lang(c)
	vm := providerpages.ProviderDatacentersVM{Shell: shell, Datacenters: datacentersVM(dcs, lang), Form: f, Tiers: providers.DatacenterTiers}
	if editing != nil {
		d := datacenterVM(*editing, lang)
		vm.Editing = &d
	}
	return handlers.Render(c, status, providerpages.ProviderDatacentersPage(handlers.ViewCtx(c), vm))
}

// ProviderDatacenters is GET /provider/{pid}/datacenters: the list and the
// form for a new one.
func (h *Handler) ProviderDatacenters(c echo.Context) error {
	acc, shell, err := h.providerAccount(c, "datacenters")
	if err != nil {
		return err
	}
	dcs, err := h.datacenters(c, acc)
	if err != nil {
		return err
	}
	return datacentersPage(c, http.StatusOK, shell, dcs, nil, handlers.ReadForm(c))
}

// ProviderDatacenterCreate is POST /provider/{pid}/datacenters.
func (h *Handler) ProviderDatacenterCreate(c echo.Context) error {
	acc, shell, err := h.providerWriter(c, "datacenters")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, dcFields()...)
	in := datacenterInput(c, &f)
	status := http.StatusUnprocessableEntity
	if len(f.Errors) == 0 {
		_, err := h.Providers.CreateDatacenter(c.Request().Context(), handlers.CurrentUser(c), acc.Provider.ID, in)
		if err == nil {
			h.Flash(c, "provider.dc.created")
			return handlers.SeeOther(c, c.Echo().Reverse(routenames.ProviderDatacenters, shell.PID()))
		}
		if status, err = providerFormError(c, &f, err, nil); err != nil {
			return err
		}
	}
	dcs, err := h.datacenters(c, acc)
	if err != nil {
		return err
	}
	return datacentersPage(c, status, shell, dcs, nil, f)
}

// datacenterFromPath finds the datacentre :id among the provider's
// (ENOTFOUND when it is not one of them).
func datacenterFromPath(c echo.Context, dcs []providers.DatacenterView) (*providers.DatacenterView, error) {
	id, err := handlers.ParseID(c, "id", "datacentre")
	if err != nil {
		return nil, err
	}
	for i := range dcs {
		if dcs[i].ID == id {
			return &dcs[i], nil
		}
	}
	return nil, apperr.NotFound("datacentre")
}

// ProviderDatacenterEdit is GET /provider/{pid}/datacenters/{id}/edit.
func (h *Handler) ProviderDatacenterEdit(c echo.Context) error {
	acc, shell, err := h.providerAccount(c, "datacenters")
	if err != nil {
		return err
	}
	dcs, err := h.datacenters(c, acc)
	if err != nil {
		return err
	}
	d, err := datacenterFromPath(c, dcs)
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c)
	for k, v := range map[string]string{"name": d.NameZH, "name_en": d.NameEN, "city": d.City, "district": d.DistrictZH,
		"district_en": d.DistrictEN, "tier": d.Tier, "uplink_gbps": strconv.Itoa(d.UplinkGbps), "storage": string(d.Storage)} {
		f.Values[k] = v
	}
	for _, l := range d.Latencies {
		if l.Source == providers.LatencyDeclared {
			f.Values["latency_"+l.FromCity] = strconv.FormatFloat(l.RTTms, 'f', -1, 64)
		}
	}
	return datacentersPage(c, http.StatusOK, shell, dcs, d, f)
}

// ProviderDatacenterUpdate is POST /provider/{pid}/datacenters/{id}.
func (h *Handler) ProviderDatacenterUpdate(c echo.Context) error {
	acc, shell, err := h.providerWriter(c, "datacenters")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, dcFields()...)
	dcs, err := h.datacenters(c, acc)
	if err != nil {
		return err
	}
	d, err := datacenterFromPath(c, dcs)
	if err != nil {
		return err
	}
	in := datacenterInput(c, &f)
	status := http.StatusUnprocessableEntity
	if len(f.Errors) == 0 {
		err := h.Providers.UpdateDatacenter(c.Request().Context(), handlers.CurrentUser(c), acc.Provider.ID, d.ID, in)
		if err == nil {
			h.Flash(c, "provider.saved")
			return handlers.SeeOther(c, c.Echo().Reverse(routenames.ProviderDatacenters, shell.PID()))
		}
		if status, err = providerFormError(c, &f, err, nil); err != nil {
			return err
		}
	}
	return datacentersPage(c, status, shell, dcs, d, f)
}
