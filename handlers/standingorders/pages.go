package standingorders

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/catalog"
	"suanli/handlers"
	"suanli/locales"
	"suanli/models"
	"suanli/models/orderstore"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/standingorders"
	"suanli/views"
	"suanli/views/standingorderpages"
)

// formFields are the page form's fields.
var formFields = []string{"org_id", "gpu", "gpus", "city", "from", "max_latency_ms", "max_price", "interruptible", "bid", "action", "sla",
	"image", "volume_id", "volume_gb", "ssh_public_key", "expires_hours"}

// formField is the page form's field of an API field.
var formField = map[string]string{
	standingorders.FieldGPU: "gpu", standingorders.FieldCity: "city", standingorders.FieldFrom: "from",
	standingorders.FieldMaxLatency: "max_latency_ms", standingorders.FieldMaxPrice: "max_price", standingorders.FieldBid: "bid",
	standingorders.FieldExpiresAt: "expires_hours",
}

// DefaultHours is the form's expiry, in hours from now.
const DefaultHours = 24

// endedOnPage is how many orders that ended the page lists.
const endedOnPage = 50

// Page is GET /standing-orders: the user's orders in every organisation,
// and the form that places one.
func (h *Handler) Page(c echo.Context) error {
	f := views.Form{Errors: map[string]string{},
		Values: map[string]string{"gpus": "1", "expires_hours": strconv.Itoa(DefaultHours), "action": orderstore.ActionRent, "sla": "standard"}}
	return h.render(c, http.StatusOK, f)
}

// render renders the page with the form as given.
func (h *Handler) render(c echo.Context, status int, f views.Form) error {
	ctx := c.Request().Context()
	u := handlers.CurrentUser(c)
	oms, err := h.DB.OrgsOfUser(ctx, u.ID)
	if err != nil {
		return err
	}
	lang := handlers.Lang(c)
	vm := standingorderpages.PageVM{Form: f, MultiOrg: len(oms) > 1, Tiers: tierNames(), MaxAheadDays: int(standingorders.MaxAhead / (24 * time.Hour)),
		MaxOpen: standingorders.MaxOpenPerOrg, MaxGPUs: standingorders.MaxGPUs, MaxLatencyMS: standingorders.MaxLatencyMS,
		NoticeDays: standingorders.NoticeDays, DefaultHours: DefaultHours}
	for _, m := range catalog.GPUModels() {
		vm.GPUs = append(vm.GPUs, standingorderpages.Option{Value: m.Slug, Label: m.Name})
	}
	for _, ct := range catalog.Cities() {
		vm.Cities = append(vm.Cities, standingorderpages.Option{Value: ct.Slug, Label: ct.Name(lang)})
	}
	orgIDs, names, members := orgIndex(oms)
	for _, om := range oms {
		vm.Orgs = append(vm.Orgs, standingorderpages.OrgOption{ID: om.Org.ID, Name: om.Org.Name})
		if om.Org.Personal && f.Get("org_id") == "" {
			f.Values["org_id"] = strconv.FormatInt(om.Org.ID, 10)
		}
	}
	if len(orgIDs) > 0 {
		open, _, err := h.orders().List(ctx, orgIDs, orderstore.Open, 0, standingorders.MaxOpenPerOrg*len(orgIDs))
		if err != nil {
			return err
		}
		for i := range open {
			vm.Open = append(vm.Open, row(lang, &open[i], names, u, members))
		}
		all, _, err := h.orders().List(ctx, orgIDs, "", len(open), endedOnPage)
		if err != nil {
			return err
		}
		for i := range all {
			if all[i].Status != orderstore.Open {
				vm.Ended = append(vm.Ended, row(lang, &all[i], names, u, members))
			}
		}
	}
	return handlers.Render(c, status, standingorderpages.Page(handlers.ViewCtx(c), vm))
}

func tierNames() []string {
	var out []string
	for _, t := range pricing.Tiers {
		out = append(out, t.Name)
	}
	return out
}

// row is an order as the pages show it.
func row(lang string, o *orderstore.Order, orgNames map[int64]string, u *models.User, members map[int64]*models.Membership) standingorderpages.Row {
	r := standingorderpages.Row{ID: o.ID, OrgName: orgNames[o.OrgID], GPUName: catalog.GPUName(o.GPUModel), GPUs: o.GPUs, City: o.City,
		From: o.FromCity, MaxLatencyMS: o.MaxLatencyMS, MaxPriceFen: o.MaxPriceFen, BidFen: o.BidPerGPUHourFen, Student: o.Student,
		Notify: o.Action == orderstore.ActionNotify, Image: o.Image, Status: string(o.Status), RentalID: o.RentalID, OfferID: o.OfferID,
		ExpiresAt: o.ExpiresAt, CreatedAt: o.CreatedAt, EndedAt: o.EndedAt,
		CanCancel: standingorders.CanCancel(o, u, members[o.OrgID])}
	if o.Status == orderstore.Failed {
		r.Failure = o.FailureMsg.Or(lang, o.Failure)
	}
	return r
}

// Create is POST /standing-orders: places an order from the form, then
// back to the page (which shows what it came to); a refused form is
// shown again with each problem beside its field (422).
func (h *Handler) Create(c echo.Context) error {
	f := handlers.ReadForm(c, formFields...)
	vc := handlers.ViewCtx(c)
	in := standingorders.Input{Filters: standingorders.Filters{GPU: f.Get("gpu"), City: f.Get("city"), From: f.Get("from"),
		Interruptible: f.Get("interruptible") != ""}, Action: f.Get("action"), SLA: f.Get("sla"), Image: f.Get("image"),
		SSHPublicKey: f.Get("ssh_public_key")}
	num := func(name string, dst *int) {
		if s := strings.TrimSpace(f.Get(name)); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				f.Errors[name] = vc.T("so.err.number")
				return
			}
			*dst = n
		}
	}
	num("gpus", &in.GPUs)
	num("max_latency_ms", &in.Filters.MaxLatencyMS)
	num("volume_gb", &in.VolumeGB)
	var volumeID int
	num("volume_id", &volumeID)
	in.VolumeID = int64(volumeID)
	yuan := func(name string, dst *int64) {
		v, e := handlers.YuanField(f, name)
		if e != nil {
			f.Errors[name] = vc.T(e.Key)
		} else if v != nil {
			*dst = *v
		}
	}
	if in.Filters.Interruptible {
		yuan("bid", &in.Filters.BidPerGPUHourFen)
	} else {
		yuan("max_price", &in.Filters.MaxPriceFen)
	}
	var hours int
	num("expires_hours", &hours)
	if hours > 0 {
		// Bounded before the multiplication (which would wrap): anything
		// past the service's 30 days is refused beside the field all the same.
		in.ExpiresAt = h.DB.Now().UTC().Add(time.Duration(min(hours, int(standingorders.MaxAhead/time.Hour)+1)) * time.Hour)
	}
	if len(f.Errors) > 0 {
		return h.render(c, http.StatusUnprocessableEntity, f)
	}
	org, err := h.APIOrg(c, accounts.Rent, strings.TrimSpace(f.Get("org_id")))
	if err != nil {
		return h.refused(c, f, err)
	}
	u := handlers.CurrentUser(c)
	ctx := c.Request().Context()
	m, err := h.DB.MembershipOf(ctx, org.ID, u.ID)
	if err != nil {
		return h.refused(c, f, err)
	}
	in.OrgID = org.ID
	o, err := h.orders().Place(ctx, u, org, m, in)
	if err != nil {
		return h.refused(c, f, err)
	}
	h.Flash(c, "so.flash.placed."+string(o.Status), o.ID)
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.StandingOrders))
}

// refused shows the form again with err: each field's problem beside
// it, any other refusal (the organisation may not rent, say) above it.
func (h *Handler) refused(c echo.Context, f views.Form, err error) error {
	ae, ok := apperr.As(err)
	if !ok || ae.Code == apperr.ENOTFOUND && ae.Field == "" {
		return err
	}
	lang := handlers.Lang(c)
	var problems []*apperr.Error
	if fs, isFields := err.(apperr.Fields); isFields {
		problems = fs
	} else {
		problems = []*apperr.Error{ae}
	}
	for _, p := range problems {
		name := p.Field
		if n, ok := formField[name]; ok {
			name = n
		}
		if name == "" || name == "body" || name == "org_id" && len(f.Get("org_id")) == 0 {
			name = "_form"
		}
		msg := p.Message
		if p.Key != "" {
			msg = locales.T(lang, p.Key, p.Args...)
		}
		if _, taken := f.Errors[name]; !taken {
			f.Errors[name] = msg
		}
	}
	status := handlers.ErrorStatus(err)
	if apperr.General(ae.Code) == apperr.EINVALID {
		status = http.StatusUnprocessableEntity
	}
	return h.render(c, status, f)
}

// Cancel is POST /standing-orders/{id}/cancel: deletes the order (an open
// one never fires), then back to the page.
func (h *Handler) Cancel(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "standing order")
	if err != nil {
		return err
	}
	o, err := h.orders().Cancel(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	h.Flash(c, "so.flash.cancelled."+string(o.Status), o.ID)
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.StandingOrders))
}

// Notices is GET /standing-orders/notices: the console's card of the
// user's orders (how many are open, those that ended lately).
func (h *Handler) Notices(c echo.Context) error {
	ctx := c.Request().Context()
	u := handlers.CurrentUser(c)
	oms, err := h.DB.OrgsOfUser(ctx, u.ID)
	if err != nil {
		return err
	}
	vm := standingorderpages.NoticesVM{Days: standingorders.NoticeDays}
	orgIDs, names, members := orgIndex(oms)
	if len(orgIDs) > 0 {
		open, ended, err := h.orders().Notices(ctx, orgIDs)
		if err != nil {
			return err
		}
		vm.Open = open
		for i := range ended {
			vm.Ended = append(vm.Ended, row(handlers.Lang(c), &ended[i], names, u, members))
		}
	}
	return handlers.Render(c, http.StatusOK, standingorderpages.Notices(handlers.ViewCtx(c), vm))
}

// orgIndex is the user's organisations by id: their ids, names and the
// user's membership in each.
func orgIndex(oms []models.OrgMembership) (ids []int64, names map[int64]string, members map[int64]*models.Membership) {
	names, members = map[int64]string{}, map[int64]*models.Membership{}
	for _, om := range oms {
		ids = append(ids, om.Org.ID)
		names[om.Org.ID] = om.Org.Name
		members[om.Org.ID] = &om.Membership
	}
	return ids, names, members
}
