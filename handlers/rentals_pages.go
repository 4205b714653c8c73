package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/bids"
	"suanli/catalog"
	"suanli/handlers/alertvm"
	"suanli/handlers/rentalvm"
	"suanli/idlestop"
	"suanli/images"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/rentalpages"
	"suanli/volumes"
	"suanli/workspace"
)

// rentFields are the rent form's fields.
var rentFields = append([]string{"org_id", "gpus", "term", "bid", "sla", "ssh_public_key", "auto_renew", "image", "image_custom", "volume_gb", "volume_id",
	"registry_username", "registry_password", "ports"}, idleStopFields...)

// RentNew is GET /offers/{id}/rent: the rent form, its fields taken from
// the query (the offer page's quote panel links here with its choice).
// htmx requests (a field changed) get the price alone.
func (h *Handler) RentNew(c echo.Context) error {
	row, err := h.offerFromPath(c)
	if err != nil {
		return err
	}
	f := ReadForm(c, rentFields...)
	f.Values["ssh_public_key"] = "" // a GET never carries it
	vm, err := h.rentVM(c, row, f)
	if err != nil {
		return err
	}
	if IsHTMX(c) {
		return Render(c, http.StatusOK, rentalpages.RentQuote(ViewCtx(c), vm))
	}
	return Render(c, http.StatusOK, rentalpages.RentPage(ViewCtx(c), vm))
}

// RentCreate is POST /offers/{id}/rent: rent, then go to the rental's
// page. Bad input shows the form again with the message beside its field
// (422); a conflict (no free GPUs, too little balance) is a 409 with the
// message at the top or beside the balance. Nothing is changed then.
func (h *Handler) RentCreate(c echo.Context) error {
	row, err := h.offerFromPath(c)
	if err != nil {
		return err
	}
	f := ReadForm(c, rentFields...)
	in := RentFields{OfferID: row.ID, SLA: f.Get("sla"), Term: f.Get("term"), SSHPublicKey: f.Get("ssh_public_key"), AutoRenew: f.Get("auto_renew") != "",
		Bid: rentalvm.ReadBid(f, ViewCtx(c))}
	status := http.StatusUnprocessableEntity
	var rentErr error
	if n, err := strconv.Atoi(strings.TrimSpace(f.Get("gpus"))); err == nil {
		in.GPUs = n
	}
	in.Image = f.Get("image")
	if in.Image == rentalpages.CustomImage {
		in.Image = strings.TrimSpace(f.Get("image_custom"))
		if in.Image == "" {
			f.Errors["image"] = ViewCtx(c).T("rent.err_image_custom")
		}
	}
	if u, p := strings.TrimSpace(f.Get("registry_username")), f.Get("registry_password"); u != "" || p != "" {
		in.RegistryAuth = &images.RegistryAuth{Username: u, Password: p}
	}
	f.Values["registry_password"] = "" // never shown again, not even to its author
	idle, ierr := idleStopForm(f)
	if ierr != nil { // idle goes unused: no rent with errors
		f, _ = WithErrors(c, f, ierr)
	}
	if v := strings.TrimSpace(f.Get("volume_id")); v != "" {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil && id > 0 {
			in.VolumeID = id
		} else {
			f.Errors["volume_id"] = ViewCtx(c).T("err.volume_unknown")
		}
	}
	if v := strings.TrimSpace(f.Get("volume_gb")); v != "" && in.VolumeID == 0 {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			in.VolumeGB = n
		} else {
			f.Errors["volume_gb"] = ViewCtx(c).T("err.volume_size", volumes.MaxFor(&row.Offer))
		}
	}
	// Ports come as one list ("6006, 7860") or as repeated fields.
	if all := c.Request().Form["ports"]; len(all) > 1 {
		f.Values["ports"] = strings.Join(all, ", ")
	}
	if ports, err := workspace.ParsePortList(f.Get("ports")); err != nil {
		f, _ = WithErrors(c, f, err)
	} else {
		in.Ports = ports
	}
	orgID, perr := strconv.ParseInt(strings.TrimSpace(f.Get("org_id")), 10, 64)
	switch {
	case f.Get("org_id") != "" && (perr != nil || orgID <= 0):
		f.Errors["org_id"] = ViewCtx(c).T("err.org_not_usable")
	case len(f.Errors) > 0:
	default:
		in.OrgID = orgID
		var r *models.Rental
		if r, _, rentErr = h.Rent(c, in, idle, h.IdleStop().Rent); rentErr == nil {
			h.Flash(c, "rental.requested_flash", r.ID)
			return SeeOther(c, c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(r.ID, 10)))
		}
		status, rentErr = h.rentFormError(c, &f, rentErr)
		if rentErr != nil {
			return rentErr
		}
	}
	vm, err := h.rentVM(c, row, f)
	if err != nil {
		return err
	}
	return Render(c, status, rentalpages.RentPage(ViewCtx(c), vm))
}

// rentFormError puts a refused rent's message into the form: beside its
// field, beside the balance (too little money, a spending limit), beside
// the organisation (one the renter may not pay from) or at the top. It
// returns the status to answer with, or the error itself when it is not
// about the request (the central handler answers those).
func (h *Handler) rentFormError(c echo.Context, f *views.Form, err error) (int, error) {
	ae, ok := apperr.As(err)
	if !ok {
		return 0, err
	}
	switch {
	case (ae.Code == apperr.ENOTFOUND || ae.Code == apperr.EFORBIDDEN) && ae.Field == "" && ae.Key == "":
		// An organisation the renter is not in (the offer itself was
		// found before), or one the renter's role may not spend from:
		// the same as one that may not rent.
		err = &apperr.Error{Code: ae.Code, Field: "org_id", Key: "err.org_not_usable", Message: ae.Message}
	case ae.Key == "err.verify_first":
		err = &apperr.Error{Code: ae.Code, Field: ae.Field, Key: "rent.verify_first", Message: ae.Message}
	}
	return formProblems(ViewCtx(c), f, err, rentFields, "balance", "registry_auth", bids.Field, "real_name")
}

// ErrorStatus is the HTTP status of an error: web.Status, the one
// mapping from application errors to HTTP (web sets it at start-up, as
// handlers cannot import web).
var ErrorStatus = func(error) int { return http.StatusInternalServerError }

// formProblems puts a refused request's problems (an *apperr.Error, or a
// form's apperr.Fields) into its form, each in the reader's language
// beside its field when it is one of the form's inputs or places (such
// as "balance"), else at the top ("_form"). It returns the status to
// answer with: that of a form's problems (422, see web.Status) when one
// of them is about an input field, else that of the error's code on a
// page (422 for other bad input, 409 for a conflict, 403, …). An error that is not
// about the request (no *apperr.Error, no message key, EINTERNAL,
// EUNAVAILABLE) is returned as it is, for the central error handler.
func formProblems(vc views.Ctx, f *views.Form, err error, inputs []string, places ...string) (int, error) {
	var problems apperr.Fields
	if fs, ok := err.(apperr.Fields); ok {
		problems = fs
	} else if ae, ok := apperr.As(err); ok {
		problems = apperr.Fields{ae}
	}
	if len(problems) == 0 {
		return 0, err
	}
	for _, p := range problems {
		if p.Key == "" || p.Code == apperr.EINTERNAL || p.Code == apperr.EUNAVAILABLE {
			return 0, err
		}
	}
	aboutInput := false
	for _, p := range problems {
		field := p.Field
		if slices.Contains(inputs, field) {
			aboutInput = true
		}
		if !slices.Contains(inputs, field) && !slices.Contains(places, field) {
			field = "_form"
		}
		if f.Errors[field] == "" {
			f.Errors[field] = vc.T(p.Key, p.Args...)
		}
	}
	if aboutInput {
		return ErrorStatus(problems), nil
	}
	return ErrorStatus(problems[0]), nil
}

// rentVM builds the rent page: the organisations the renter may pay from
// (personal first) with their balances and the offer's price from each,
// and the price of the choice. Without a valid org_id the form starts
// with the organisation whose price the offer's pages showed
// (offers.DefaultPayer).
func (h *Handler) rentVM(c echo.Context, row models.OfferRow, f views.Form) (rentalpages.RentVM, error) {
	ctx := c.Request().Context()
	u := CurrentUser(c)
	gm, _ := catalog.GPUModelBySlug(row.GPUModel)
	vm := rentalpages.RentVM{Offer: rentalvm.RentOffer(&row, Lang(c)), GPU: gm, Form: f, Selected: -1, Simulated: row.Demo || row.Synthetic, Unverified: !u.Verified(),
		EarlyStopKey: offers.EarlyStopOf(pricing.Week).Key}
	oms, err := h.DB.OrgsOfUser(ctx, u.ID)
	if err != nil {
		return vm, err
	}
	want := strings.TrimSpace(f.Get("org_id"))
	var prices []int64
	var policies []models.IdleStop // of each of vm.Orgs
	for _, om := range oms {
		if !om.Org.Usable() {
			continue
		}
		bal, err := ledger.WalletBalance(ctx, h.DB, om.Org.ID)
		if err != nil {
			return vm, err
		}
		student := offers.StudentPrices(&om.Org, &om.Membership)
		price := offers.UnitPriceFen(&row.Offer, pricing.OnDemand, student)
		vm.Orgs = append(vm.Orgs, rentalvm.RentOrg(&om.Org, bal, student, price))
		p := idlestop.Policy(&om.Org)
		policies = append(policies, p)
		if p.On() {
			vm.IdlePolicies = append(vm.IdlePolicies, rentalpages.IdlePolicy{OrgName: om.Org.Name, Policy: rentalvm.IdleSetting(p)})
		}
		prices = append(prices, price)
		if strconv.FormatInt(om.Org.ID, 10) == want {
			vm.Selected = len(vm.Orgs) - 1
		}
	}
	if vm.Selected < 0 {
		vm.Selected = offers.DefaultPayer(prices)
	}
	// Defaults: one GPU, on demand, the standard tier.
	if strings.TrimSpace(f.Get("gpus")) == "" {
		f.Values["gpus"] = "1"
	}
	if f.Get("term") == "" {
		f.Values["term"] = string(pricing.OnDemand)
	}
	if f.Get("sla") == "" {
		f.Values["sla"] = pricing.Tiers[0].Name
	}
	if vm.Selected >= 0 {
		f.Values["org_id"] = strconv.FormatInt(vm.Orgs[vm.Selected].ID, 10)
	}
	if strings.TrimSpace(f.Get("volume_gb")) == "" {
		f.Values["volume_gb"] = strconv.Itoa(min(volumes.DefaultGB, volumes.MaxFor(&row.Offer)))
	}
	policy := models.IdleStop{}
	if vm.Selected >= 0 {
		policy = policies[vm.Selected]
	}
	rentalvm.IdleStopDefaults(f, models.IdleStop{}, policy)
	vm.IdleMinMinutes, vm.IdleMaxMinutes = idlestop.MinMinutes, idlestop.MaxMinutes
	vm.Form = f
	if err := h.rentStorageVM(c, &vm, &row); err != nil {
		return vm, err
	}
	student := vm.Selected >= 0 && vm.Orgs[vm.Selected].Student
	vm.Terms, vm.Bid = rentalvm.RentTerms(&row.Offer, student), rentalvm.RentBid(&row.Offer, h.Index, f)
	vm.HourPriceFen = offers.UnitPriceFen(&row.Offer, pricing.OnDemand, student)
	now := h.DB.Now()
	priced, q, err := rentalvm.Quote(row.Offer, offers.QuoteInput{GPUs: f.Get("gpus"), Term: f.Get("term"), SLA: f.Get("sla"),
		VolumeGB: f.Get("volume_gb"), VolumeID: f.Get("volume_id")}, f.Get("bid"), student, now)
	if e, ok := apperr.As(err); ok && e.Code == apperr.EINVALID {
		if f.Errors[e.Field] == "" {
			f.Errors[e.Field] = ViewCtx(c).T(e.Key, e.Args...)
		}
		return vm, nil
	} else if err != nil {
		return vm, err
	}
	vm.Quote = &q
	vm.QuoteEarlyStopKey = offers.EarlyStopOf(q.Term).Key
	tier, _ := pricing.TierByName(f.Get("sla"))
	if vm.NeedFen, err = offers.StartNeeds(priced, q.GPUs, q.Term, tier, student, now); err != nil {
		return vm, err
	}
	return vm, nil
}

// Console is GET /console: the renter's rentals across their
// organisations, live first, then the latest settled ones.
func (h *Handler) Console(c echo.Context) error {
	ctx := c.Request().Context()
	u := CurrentUser(c)
	oms, err := h.DB.OrgsOfUser(ctx, u.ID)
	if err != nil {
		return err
	}
	vm := rentalpages.ConsoleVM{MultiOrg: len(oms) > 1}
	offers := map[int64]models.OfferRow{}
	offer := func(id int64) (models.OfferRow, error) {
		if o, ok := offers[id]; ok {
			return o, nil
		}
		o, err := h.DB.OfferByID(ctx, id)
		offers[id] = o
		return o, err
	}
	now := h.DB.Now().UTC()
	lang := Lang(c)
	for _, om := range oms {
		bal, err := ledger.WalletBalance(ctx, h.DB, om.Org.ID)
		if err != nil {
			return err
		}
		vm.Wallets = append(vm.Wallets, rentalvm.WalletLink(&om.Org, bal))
		m := om.Membership
		live, err := h.DB.RentalsOfOrg(ctx, om.Org.ID, true, 200)
		if err != nil {
			return err
		}
		past, err := h.DB.RentalsOfOrg(ctx, om.Org.ID, false, rentalpages.HistoryLimit)
		if err != nil {
			return err
		}
		live, past = rentalvm.Waiting(live, past)
		for _, r := range live {
			d, err := h.Rentals.Detail(ctx, r.ID)
			if err != nil {
				return err
			}
			row := rentalvm.ConsoleRow(d.Rental, d.Offer, lang, om.Org.Name, d.CostFen, d.RateFenPerHour, d.Access, d.Simulated(),
				rentals.Stoppable(&d.Rental, u, &m), d.At)
			row.CanChange = rentals.Changeable(&d.Rental, u, &m)
			vm.Live = append(vm.Live, row)
		}
		for _, r := range past {
			o, err := offer(r.OfferID)
			if err != nil {
				return err
			}
			a := rentals.Access(&r)
			vm.History = append(vm.History, rentalvm.ConsoleRow(r, o, lang, om.Org.Name, r.BilledFen, 0, a, o.Demo || (a != nil && a.Simulated), false, now))
		}
	}
	if vm.Alerts, err = alertvm.Console(ctx, h.DB, oms, u.ID, Lang(c)); err != nil {
		return err
	}
	newestFirst := func(a, b rentalpages.RentalRow) int { return b.Rental.CreatedAt.Compare(a.Rental.CreatedAt) }
	slices.SortStableFunc(vm.Live, newestFirst)
	slices.SortStableFunc(vm.History, newestFirst)
	if len(vm.History) > rentalpages.HistoryLimit {
		vm.History = vm.History[:rentalpages.HistoryLimit]
	}
	return Render(c, http.StatusOK, rentalpages.ConsolePage(ViewCtx(c), vm))
}

// rentalPageVM is the rental page's view model for a rental the viewer
// may see.
func (h *Handler) rentalPageVM(c echo.Context, d *rentals.RentalDetail, m *models.Membership) (rentalpages.RentalVM, error) {
	org, err := h.DB.OrgByID(c.Request().Context(), d.Rental.OrgID)
	if err != nil {
		return rentalpages.RentalVM{}, err
	}
	gm, ok := catalog.GPUModelBySlug(d.Offer.GPUModel)
	if !ok {
		gm.Name = d.Offer.GPUModel
	}
	vc := ViewCtx(c)
	name := org.Name
	if org.Personal {
		name = vc.T("rent.org_personal")
	}
	vm := rentalvm.Detail(vc, d)
	vm.GPU, vm.OrgName, vm.StudentPrices = gm, name, offers.StudentPrices(org, m)
	u := CurrentUser(c)
	vm.CanStop = rentals.Stoppable(&d.Rental, u, m)
	vm.CanStart = rentals.CanStop(&d.Rental, u, m) && d.Startable()
	vm.CanRelease = rentals.Releasable(&d.Rental, u, m, d.At)
	if d.Volume != nil {
		vm.Volume = h.volumeVM(d)
	}
	vm.NoGPU, vm.NoGPURateFen, vm.NoGPUFenPerHour = d.Rental.NoGPU, d.Rental.NoGPUPricePerHourFen, d.Offer.Offer.NoGPUPricePerHourFen
	if vm.Runway, err = alertvm.RentalRunway(c.Request().Context(), h.DB, &d.Rental, Lang(c)); err != nil {
		return rentalpages.RentalVM{}, err
	}
	if lv := d.LeftVolume; lv != nil {
		fl := &rentalpages.FilesLeft{VolumeID: lv.ID, Node: d.LeftNode, NodeID: lv.NodeID, NodeUp: d.LeftNodeUp,
			CanStartThere: rentals.CanStop(&d.Rental, u, m) && d.StartableOnLeft(),
			StopFirst:     d.LeftNodeUp && rentals.Stoppable(&d.Rental, u, m)}
		if d.Volume != nil {
			fl.CurrentVolumeID = d.Volume.ID
		}
		vm.FilesLeft = fl
	}
	return vm, nil
}

// volumeVM maps a rental's volume to its page.
func (h *Handler) volumeVM(d *rentals.RentalDetail) *rentalpages.Volume {
	v := d.Volume
	return &rentalpages.Volume{ID: v.ID, SizeGB: v.SizeGB, Shared: v.Shared(), Deleted: v.Status == models.VolumeDeleted,
		FenPerDay: volumes.FenPerDay(v), DeleteAfter: v.DeleteAfter, KeepDays: h.Rentals.Volumes().Days(), NodeName: d.VolumeNode}
}

// RentalStart is POST /rentals/{id}/start, for the renter and the
// organisation's admins.
func (h *Handler) RentalStart(c echo.Context) error {
	in := startBody{NoGPU: c.FormValue("no_gpu") == "1"}
	if v := c.FormValue("volume_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return h.RentalActionRefused(c, apperr.Field("volume_id", "err.volume_unknown"))
		}
		in.VolumeID = id
	}
	d, err := h.startRental(c, in)
	if err != nil {
		return h.RentalActionRefused(c, err)
	}
	h.Flash(c, "rental.start_flash", d.Rental.ID)
	return SeeOther(c, c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10)))
}

// RentalRelease is POST /rentals/{id}/release (delete_volume=1 deletes
// the volume too), for the renter and the organisation's admins.
func (h *Handler) RentalRelease(c echo.Context) error {
	d, err := h.releaseRental(c, releaseBody{DeleteVolume: c.FormValue("delete_volume") == "1"})
	if err != nil {
		return h.RentalActionRefused(c, err)
	}
	h.Flash(c, "rental.release_flash", d.Rental.ID)
	return SeeOther(c, c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10)))
}

// RentalActionRefused shows a refused start, release or raised bid (no
// free GPUs where the files are, too little balance) on the rental page,
// with the reason above the actions (a bid's beside it): the code's status
// (409, 402 for too little balance, 422; for a spending limit, 403).
// Errors not about the request go to the error handler.
func (h *Handler) RentalActionRefused(c echo.Context, err error) error {
	ae, ok := apperr.As(err)
	if !ok || ae.Key == "" {
		return err
	}
	status := ErrorStatus(ae)
	switch apperr.General(ae.Code) {
	case apperr.EINVALID:
		status = http.StatusUnprocessableEntity
	case apperr.EFORBIDDEN, apperr.ECONFLICT:
	default:
		return err
	}
	d, m, derr := h.rentalFor(c)
	if derr != nil {
		return derr
	}
	vm, verr := h.rentalPageVM(c, d, m)
	if verr != nil {
		return verr
	}
	vc := ViewCtx(c)
	vm.ActionError, vm.ActionField = vc.T(ae.Key, ae.Args...), ae.Field
	if vm.SLA, verr = h.rentalSLA(c, d); verr != nil {
		return verr
	}
	if vm.Idle, verr = h.rentalIdleVM(c, d, m, nil); verr != nil {
		return verr
	}
	vc.Path = c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10))
	return Render(c, status, rentalpages.RentalPage(vc, vm))
}

// RentalShow is GET /rentals/{id}. Someone outside the rental's
// organisation gets 404, as for a rental that does not exist.
func (h *Handler) RentalShow(c echo.Context) error {
	d, m, err := h.rentalFor(c)
	if err != nil {
		return err
	}
	vm, err := h.rentalPageVM(c, d, m)
	if err != nil {
		return err
	}
	if vm.Change, err = h.changeVM(c, d, m, vm.StudentPrices, ReadForm(c), nil, false); err != nil {
		return err
	}
	if vm.SLA, err = h.rentalSLA(c, d); err != nil {
		return err
	}
	if vm.Usage, err = h.RentalUsageVM(c, d); err != nil {
		return err
	}
	if vm.Idle, err = h.rentalIdleVM(c, d, m, nil); err != nil {
		return err
	}
	if !d.Rental.Released() && d.Rental.Status != models.RentalFailed {
		shares, err := h.Workspace().Shares(c.Request().Context(), d.Rental.ID)
		if err != nil {
			return err
		}
		vm.Workspace = rentalvm.Workspace(d, workspace.CanWork(&d.Rental, CurrentUser(c), m), shares)
	}
	return Render(c, http.StatusOK, rentalpages.RentalPage(ViewCtx(c), vm))
}

// RentalUsageVM is the rental page's GPU usage section.
func (h *Handler) RentalUsageVM(c echo.Context, d *rentals.RentalDetail) (*rentalpages.UsageVM, error) {
	us, err := h.Rentals.Fleet().RentalUsage(c.Request().Context(), d.Rental.ID, d.GPUs)
	if err != nil {
		return nil, err
	}
	return rentalvm.Usage(d.Rental.ID, d.Simulated(), !d.Rental.Status.Ended(), us), nil
}

// RentalLive is GET /rentals/{id}/live: the status, cost and access block
// that the rental page polls. When the state the page shows (?seen=) is
// no longer current, htmx is told to reload the whole page, so that the
// checks, GPUs and timeline follow.
func (h *Handler) RentalLive(c echo.Context) error {
	vm, err := h.RentalLiveVM(c)
	if err != nil {
		return err
	}
	if seen := c.QueryParam("seen"); seen != "" && seen != vm.Seen() {
		show := c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(vm.Rental.ID, 10))
		if cur, err := url.Parse(c.Request().Header.Get("HX-Current-URL")); err == nil && cur.Path != "" && cur.Path != show {
			// The page is the answer to a POST (a previewed change):
			// reloading it would post again, so go to the rental's page.
			c.Response().Header().Set("HX-Redirect", show)
		} else {
			c.Response().Header().Set("HX-Refresh", "true")
		}
	}
	return Render(c, http.StatusOK, rentalpages.RentalLive(ViewCtx(c), vm))
}

// RentalLiveVM is the live block of the rental named by the path's id as
// the viewer may see it (404 outside its organisation), for RentalLive
// and the block's event stream (package rentalwatch).
func (h *Handler) RentalLiveVM(c echo.Context) (rentalpages.RentalVM, error) {
	d, m, err := h.rentalFor(c)
	if err != nil {
		return rentalpages.RentalVM{}, err
	}
	return h.rentalPageVM(c, d, m)
}

// RentalStop is POST /rentals/{id}/stop, for the renter and the
// organisation's admins (403 for other members).
func (h *Handler) RentalStop(c echo.Context) error {
	d, err := h.stopRental(c)
	if err != nil {
		return err
	}
	h.Flash(c, "rental.stop_flash", d.Rental.ID)
	return SeeOther(c, c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10)))
}

// changeFields are the switch / resize form's fields.
var changeFields = []string{"offer_id", "gpus"}

// changeVM builds the rental page's switch / resize section, or nil when
// the viewer may not change the rental (only its renter and the
// organisation's admins may) or, unless always, it cannot be changed now
// (a refused change shows its message even so). The offers are the
// rental's own, then the others listed in its datacentre; the form
// defaults to the rental as it is.
func (h *Handler) changeVM(c echo.Context, d *rentals.RentalDetail, m *models.Membership, student bool, f views.Form, q *rentals.ChangeQuote, always bool) (*rentalpages.ChangeVM, error) {
	r := &d.Rental
	if !rentals.CanStop(r, CurrentUser(c), m) || !(always || r.CanChange()) {
		return nil, nil
	}
	vc := ViewCtx(c)
	cur := d.Offer
	// The offers are listed at the price the change would be at (student:
	// a lab member's student price), as its quote is.
	ch := &rentalpages.ChangeVM{Form: f, Quote: rentalvm.ChangeQuote(q), WalletURL: vc.URL(routenames.WalletShow, strconv.FormatInt(r.OrgID, 10))}
	ch.Offers = append(ch.Offers, rentalpages.ChangeOffer{ID: cur.ID, GPUName: gpuName(cur.GPUModel), PricePerGPUHourFen: offers.UnitPriceFen(&cur.Offer, pricing.OnDemand, student),
		AvailableGPUs: cur.AvailableGPUs, MaxGPUs: cur.MaxGPUs, Current: true})
	res, err := h.Index.Search(offers.Query{DatacenterID: cur.DatacenterID, Sort: offers.SortPrice, Page: 1, PerPage: offers.MaxPerPage})
	if err != nil {
		return nil, err
	}
	for _, o := range res.Offers {
		if o.ID == cur.ID || o.DatacenterID() != cur.DatacenterID {
			continue
		}
		other := ""
		if o.ProviderID() != cur.ProviderID && o.Provider != nil {
			other = o.Provider.Name(vc.Lang)
		}
		ch.Offers = append(ch.Offers, rentalpages.ChangeOffer{ID: o.ID, GPUName: gpuName(o.GPUModel()), PricePerGPUHourFen: o.UnitPriceFen(pricing.OnDemand, student),
			AvailableGPUs: o.AvailableGPUs(), MaxGPUs: o.MaxGPUs(), OtherProvider: other})
	}
	if ch.Form.Values == nil {
		ch.Form = views.Form{Values: map[string]string{}, Errors: map[string]string{}}
	}
	if strings.TrimSpace(ch.Form.Get("offer_id")) == "" {
		ch.Form.Values["offer_id"] = strconv.FormatInt(cur.ID, 10)
	}
	if strings.TrimSpace(ch.Form.Get("gpus")) == "" {
		ch.Form.Values["gpus"] = strconv.Itoa(r.GPUs)
	}
	if q != nil {
		ch.FromName, ch.ToName = gpuName(q.FromModel), gpuName(q.ToModel)
	}
	return ch, nil
}

// gpuName is a catalogue model's name, or the slug when it is unknown.
func gpuName(slug string) string { return catalog.GPUName(slug) }

// RentalChange is POST /rentals/{id}/change: switch the rental to another
// offer of its datacentre and/or resize it, for its renter and the
// organisation's admins (403 for other members). Without confirm=1 it
// shows the rental's page with the quote for the change and a Confirm
// button; with it, it changes the rental and goes back to its page. A
// refused change shows the form again with the message beside its field
// (422) or at the top (409: no free GPUs, too little balance, a rental
// that is no longer running), and changes nothing.
func (h *Handler) RentalChange(c echo.Context) error {
	vc := ViewCtx(c)
	f := ReadForm(c, changeFields...)
	confirm := c.FormValue("confirm") == "1"
	var in rentals.ChangeInput
	if s := strings.TrimSpace(f.Get("offer_id")); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			in.OfferID = n
		} else {
			f.Errors["offer_id"] = vc.T("err.change_offer")
		}
	}
	if s := strings.TrimSpace(f.Get("gpus")); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			in.GPUs = n
		} else {
			f.Errors["gpus"] = vc.T("err.change_gpus")
		}
	}
	if len(f.Errors) > 0 {
		// Who may change the rental is checked before anything is said
		// about the form.
		d, m, err := h.rentalFor(c)
		if err != nil {
			return err
		}
		if !rentals.CanStop(&d.Rental, CurrentUser(c), m) {
			return apperr.Errorf(apperr.EFORBIDDEN, "only the renter or an admin of the organisation may change this rental")
		}
		return h.renderChange(c, d, m, f, nil, false, http.StatusUnprocessableEntity)
	}
	q, d, err := h.changeRental(c, in, confirm)
	if d == nil {
		return err // not found, or not theirs to change
	}
	if err == nil && confirm {
		h.Flash(c, "change.flash", d.Rental.ID)
		return SeeOther(c, c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10)))
	}
	// The viewer's membership, for the section (the renter or an admin).
	m, err2 := h.DB.MembershipOf(c.Request().Context(), d.Rental.OrgID, CurrentUser(c).ID)
	if err2 != nil && apperr.Code(err2) != apperr.ENOTFOUND {
		return err2
	}
	if err == nil {
		return h.renderChange(c, d, m, f, q, false, http.StatusOK)
	}
	status, topUp, ferr := changeFormError(vc, &f, err)
	if ferr != nil {
		return ferr
	}
	if q != nil && q.ToOfferID == 0 {
		q = nil // the quote itself was refused
	}
	return h.renderChange(c, d, m, f, q, topUp, status)
}

// renderChange shows the rental's page with the switch / resize section
// as the form left it (topUp: its message is about money, so it links to
// the wallet). The language switch goes to the rental's page: this URL
// answers POST only.
func (h *Handler) renderChange(c echo.Context, d *rentals.RentalDetail, m *models.Membership, f views.Form, q *rentals.ChangeQuote, topUp bool, status int) error {
	vm, err := h.rentalPageVM(c, d, m)
	if err != nil {
		return err
	}
	if vm.Change, err = h.changeVM(c, d, m, vm.StudentPrices, f, q, true); err != nil {
		return err
	}
	if vm.Change == nil {
		return apperr.Errorf(apperr.EFORBIDDEN, "only the renter or an admin of the organisation may change this rental")
	}
	vm.Change.TopUp = topUp
	if vm.SLA, err = h.rentalSLA(c, d); err != nil {
		return err
	}
	if vm.Idle, err = h.rentalIdleVM(c, d, m, nil); err != nil {
		return err
	}
	vc := ViewCtx(c)
	vc.Path = c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10))
	return Render(c, status, rentalpages.RentalPage(vc, vm))
}

// changeFormError puts a refused change's message into the form: beside
// the offer or the GPUs (422), or at the top (409: a conflict; 402: too
// little balance; 403: a spending limit; topUp set when it is about the
// balance). It returns the status to answer with, or the error itself
// when it is not about the request.
func changeFormError(vc views.Ctx, f *views.Form, err error) (status int, topUp bool, _ error) {
	ae, ok := apperr.As(err)
	if !ok || ae.Key == "" || !(apperr.General(ae.Code) == apperr.EINVALID || apperr.General(ae.Code) == apperr.ECONFLICT || ae.Field == "balance") {
		return 0, false, err
	}
	if ae.Key == "err.rent_balance" {
		// The same figures, said of the change.
		err = &apperr.Error{Code: ae.Code, Field: ae.Field, Key: "err.change_balance", Args: ae.Args, Message: ae.Message}
	}
	status, err = formProblems(vc, f, err, changeFields)
	return status, err == nil && ae.Field == "balance", err
}

// rentStorageVM fills the rent form's image and volume choices: the
// offer's images (with whether its node has each and can run it), custom
// images where allowed, the storage price and kind, and the chosen
// organisation's free volumes in the offer's datacentre.
func (h *Handler) rentStorageVM(c echo.Context, vm *rentalpages.RentVM, row *models.OfferRow) error {
	ctx := c.Request().Context()
	imgs, err := images.ForOffer(ctx, h.DB, row.ID)
	if err != nil {
		return err
	}
	for _, im := range imgs {
		vm.Images = append(vm.Images, rentalpages.RentImage{Slug: im.Slug, Name: im.Name, CUDA: im.CUDAVersion, Jupyter: im.Jupyter,
			Cached: im.Cached, Compatible: im.Compatible, DriverCUDA: im.DriverCUDA})
	}
	vm.CustomImages = row.CustomImages
	vm.PrivateRegistries = h.Rentals.Credentials != nil
	vm.StoragePerGBMonthFen = row.StoragePricePerGBMonthFen
	vm.MaxVolumeGB = volumes.MaxFor(&row.Offer)
	if row.Datacenter != nil {
		vm.SharedStorage = row.Datacenter.Storage == models.StorageShared
	}
	if vm.Selected < 0 {
		return nil
	}
	vs, err := h.Rentals.Volumes().Usable(ctx, vm.Orgs[vm.Selected].ID, &row.Offer)
	if err != nil {
		return err
	}
	for _, v := range vs {
		vm.Volumes = append(vm.Volumes, rentalpages.RentVolume{ID: v.ID, Name: v.Name, SizeGB: v.SizeGB})
	}
	return nil
}
