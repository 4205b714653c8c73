package provider

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/images"
	"suanli/models"
	"suanli/pricing"
	"suanli/providers"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/providerpages"
)

// offerFormFields are the offer form's fields; sla_tiers and images are
// repeatable and kept comma-joined.
var offerFormFields = []string{"gpu", "node_id", "interconnect", "max_gpus", "vcpu_per_gpu", "ram_gb_per_gpu", "disk_gb",
	"price", "weekly_price", "monthly_price", "offpeak_discount_pct", "student_discount_pct", "min_duration_min", "sla_tiers", "paused",
	"images", "custom_images", "storage_price", "no_gpu_price", "interruptible_floor"}

// offerAliases rename the market's field names to the form's.
var offerAliases = map[string]string{
	"gpus": "max_gpus", "price_per_gpu_hour_fen": "price", "weekly_price_per_gpu_fen": "weekly_price",
	"monthly_price_per_gpu_fen": "monthly_price", "min_duration_s": "min_duration_min", "gpu_model": "gpu",
	"storage_price_per_gb_month_fen": "storage_price", "no_gpu_price_per_hour_fen": "no_gpu_price",
	providers.FloorField: "interruptible_floor",
}

// The form asks for the minimum duration in whole minutes; its bounds
// are the market's, which are in seconds.
const (
	minMinDurationMin = pricing.MinimumSeconds / 60
	maxMinDurationMin = providers.MaxMinDurationS / 60
)

// offerForm reads the offer form.
func offerForm(c echo.Context) views.Form {
	f := handlers.ReadForm(c, offerFormFields...)
	if fv, err := c.FormParams(); err == nil {
		f.Values["sla_tiers"] = strings.Join(fv["sla_tiers"], ",")
		f.Values["images"] = strings.Join(fv["images"], ",")
	}
	return f
}

// offerNumbers is what the offer form's number fields say; a field that
// does not parse has its message in f.
type offerNumbers struct {
	maxGPUs, vcpu, ram, disk, offpeak, student, minDurS int
	price                                               int64
	weekly, monthly                                     *int64
	tiers                                               []string
	// storage and noGPU are nil when their field is empty (the default on
	// a new offer, unchanged on an edit); floor is nil when its field is
	// empty: the offer takes no bids.
	storage, noGPU, floor *int64
	images                []string
}

func parseOfferNumbers(c echo.Context, f *views.Form) offerNumbers {
	vc := handlers.ViewCtx(c)
	n := offerNumbers{maxGPUs: intField(c, f, "max_gpus"), vcpu: intField(c, f, "vcpu_per_gpu"), ram: intField(c, f, "ram_gb_per_gpu"),
		disk: intField(c, f, "disk_gb"), offpeak: intField(c, f, "offpeak_discount_pct"), student: intField(c, f, "student_discount_pct")}
	if s := strings.TrimSpace(f.Get("min_duration_min")); s != "" {
		m, err := strconv.Atoi(s)
		if err != nil || m < minMinDurationMin || m > maxMinDurationMin {
			f.Errors["min_duration_min"] = vc.T("provider.err.minutes", minMinDurationMin, maxMinDurationMin)
		} else {
			n.minDurS = m * 60
		}
	}
	if s := strings.TrimSpace(f.Get("price")); s != "" {
		fen, ok := pricing.ParseYuan(s)
		if !ok {
			f.Errors["price"] = vc.T("provider.err.yuan")
		}
		n.price = fen
	}
	for _, p := range []struct {
		name string
		dst  **int64
	}{{"weekly_price", &n.weekly}, {"monthly_price", &n.monthly}, {"storage_price", &n.storage}, {"no_gpu_price", &n.noGPU}, {"interruptible_floor", &n.floor}} {
		v, e := handlers.YuanField(*f, p.name)
		if e != nil {
			f.Errors[p.name] = vc.T("provider.err.yuan")
		}
		*p.dst = v
	}
	for _, t := range strings.Split(f.Get("sla_tiers"), ",") {
		if t != "" {
			n.tiers = append(n.tiers, t)
		}
	}
	if len(n.tiers) == 0 {
		f.Errors["sla_tiers"] = vc.T("provider.err.sla_pick")
	}
	for _, sl := range strings.Split(f.Get("images"), ",") {
		if sl != "" {
			n.images = append(n.images, sl)
		}
	}
	return n
}

// optInt is a whole-number field for a patch: nil (unchanged) when empty.
func optInt(f views.Form, name string, v int) *int {
	if strings.TrimSpace(f.Get(name)) == "" {
		return nil
	}
	return &v
}

// ProviderOffers is GET /provider/{pid}/offers.
func (h *Handler) ProviderOffers(c echo.Context) error {
	acc, shell, err := h.providerAccount(c, "offers")
	if err != nil {
		return err
	}
	vm, err := h.offersVM(c, acc, shell)
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderOffersPage(handlers.ViewCtx(c), vm))
}

func (h *Handler) offersVM(c echo.Context, acc *providers.Account, shell providerpages.ProviderShell) (providerpages.ProviderOffersVM, error) {
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	vm := providerpages.ProviderOffersVM{Shell: shell, NodeNames: map[int64]string{}, Refusal: map[int64]string{}}
	offers, err := h.Providers.Offers(ctx, u, acc.Provider.ID)
	if err != nil {
		return vm, err
	}
	vm.Offers = offersVM(offers)
	nodes, err := h.Providers.Nodes(ctx, u, acc.Provider.ID)
	for _, n := range nodes {
		vm.NodeNames[n.Node.ID] = n.Node.Name
	}
	return vm, err
}

func (h *Handler) offerFormVM(c echo.Context, shell providerpages.ProviderShell, o *models.Offer, f views.Form) (providerpages.ProviderOfferFormVM, error) {
	nodes, err := h.Providers.Nodes(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID)
	live := nodes[:0:0]
	for _, n := range nodes {
		if n.Node.Status != models.NodeRemoved {
			live = append(live, n)
		}
	}
	vm := providerpages.ProviderOfferFormVM{Shell: shell, Nodes: nodeRowsVM(live, handlers.Lang(c)), Form: f}
	if o != nil {
		ov := offerVM(*o)
		vm.Offer = &ov
	}
	if err != nil {
		return vm, err
	}
	cat, err := images.Catalogue(c.Request().Context(), h.DB)
	for _, im := range cat {
		vm.Images = append(vm.Images, providerpages.ImageOption{Slug: im.Slug, Name: im.Name, CUDAVersion: im.CUDAVersion})
	}
	return vm, err
}

// ProviderOfferNew is GET /provider/{pid}/offers/new (?node_id= preselects a node).
func (h *Handler) ProviderOfferNew(c echo.Context) error {
	_, shell, err := h.providerAccount(c, "offers")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c)
	for k, v := range map[string]string{"vcpu_per_gpu": "8", "ram_gb_per_gpu": "64", "disk_gb": "500", "min_duration_min": "1",
		"offpeak_discount_pct": "0", "student_discount_pct": "0", "sla_tiers": "standard,premium", "node_id": c.QueryParam("node_id"),
		"storage_price": pricing.FenToYuanString(models.DefaultStoragePricePerGBMonthFen),
		"no_gpu_price":  pricing.FenToYuanString(models.DefaultNoGPUPricePerHourFen)} {
		f.Values[k] = v
	}
	vm, err := h.offerFormVM(c, shell, nil, f)
	if err != nil {
		return err
	}
	// The node's detected model and GPU count fill the form.
	for _, n := range vm.Nodes {
		if strconv.FormatInt(n.Node.ID, 10) == f.Get("node_id") || len(vm.Nodes) == 1 {
			f.Values["node_id"], f.Values["gpu"] = strconv.FormatInt(n.Node.ID, 10), n.Node.GPUModel
			if n.GPUs > 0 {
				f.Values["max_gpus"] = strconv.Itoa(n.GPUs)
			}
		}
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderOfferFormPage(handlers.ViewCtx(c), vm))
}

// ProviderOfferCreate is POST /provider/{pid}/offers. A model that is not
// what the node's NVML reports is refused beside the GPU field.
func (h *Handler) ProviderOfferCreate(c echo.Context) error {
	_, shell, err := h.providerWriter(c, "offers")
	if err != nil {
		return err
	}
	f := offerForm(c)
	n := parseOfferNumbers(c, &f)
	nodeID, perr := strconv.ParseInt(strings.TrimSpace(f.Get("node_id")), 10, 64)
	if perr != nil && f.Get("node_id") != "" {
		nodeID = -1 // no node of this provider: the market says so beside the field
	}
	status := http.StatusUnprocessableEntity
	if len(f.Errors) == 0 {
		_, err := h.Providers.CreateOffer(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID, providers.OfferInput{
			NodeID: nodeID, GPU: f.Get("gpu"), MaxGPUs: n.maxGPUs, VCPUPerGPU: n.vcpu, RAMGBPerGPU: n.ram, DiskGB: n.disk,
			Interconnect: f.Get("interconnect"), PricePerGPUHourFen: n.price, WeeklyPricePerGPUFen: n.weekly, MonthlyPricePerGPUFen: n.monthly,
			OffpeakDiscountPct: n.offpeak, StudentDiscountPct: n.student, MinDurationS: n.minDurS, SLATiers: n.tiers, Paused: f.Get("paused") != "",
			CustomImages: f.Get("custom_images") != "", StoragePricePerGBMonthFen: n.storage, NoGPUPricePerHourFen: n.noGPU, Images: n.images,
			InterruptibleFloorPerGPUHourFen: n.floor,
		})
		if err == nil {
			h.Flash(c, "provider.offer.created")
			return handlers.SeeOther(c, c.Echo().Reverse(routenames.ProviderOffers, shell.PID()))
		}
		if status, err = providerFormError(c, &f, err, offerAliases); err != nil {
			return err
		}
	}
	vm, err := h.offerFormVM(c, shell, nil, f)
	if err != nil {
		return err
	}
	return handlers.Render(c, status, providerpages.ProviderOfferFormPage(handlers.ViewCtx(c), vm))
}

// offerFromPath loads the provider's offer :id.
func (h *Handler) providerOfferFromPath(c echo.Context, shell providerpages.ProviderShell) (*models.Offer, error) {
	id, err := handlers.ParseID(c, "id", "offer")
	if err != nil {
		return nil, err
	}
	return h.Providers.Offer(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID, id)
}

// ProviderOfferEdit is GET /provider/{pid}/offers/{id}/edit.
func (h *Handler) ProviderOfferEdit(c echo.Context) error {
	_, shell, err := h.providerAccount(c, "offers")
	if err != nil {
		return err
	}
	o, err := h.providerOfferFromPath(c, shell)
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c)
	for k, v := range map[string]string{"max_gpus": strconv.Itoa(o.MaxGPUs), "vcpu_per_gpu": strconv.Itoa(o.VCPUPerGPU),
		"ram_gb_per_gpu": strconv.Itoa(o.RAMGBPerGPU), "disk_gb": strconv.Itoa(o.DiskGB), "price": pricing.FenToYuanString(o.PricePerGPUHourFen),
		"offpeak_discount_pct": strconv.Itoa(o.OffpeakDiscountPct), "student_discount_pct": strconv.Itoa(o.StudentDiscountPct),
		"min_duration_min": strconv.Itoa((o.MinDurationS + 59) / 60), "sla_tiers": o.SLATiers,
		"images": strings.Join(o.Images, ","), "storage_price": pricing.FenToYuanString(o.StoragePricePerGBMonthFen),
		"no_gpu_price": pricing.FenToYuanString(o.NoGPUPricePerHourFen)} {
		f.Values[k] = v
	}
	if o.CustomImages {
		f.Values["custom_images"] = "1"
	}
	if o.WeeklyPricePerGPUFen != nil {
		f.Values["weekly_price"] = pricing.FenToYuanString(*o.WeeklyPricePerGPUFen)
	}
	if o.MonthlyPricePerGPUFen != nil {
		f.Values["monthly_price"] = pricing.FenToYuanString(*o.MonthlyPricePerGPUFen)
	}
	if o.InterruptibleFloorPerGPUHourFen != nil {
		f.Values["interruptible_floor"] = pricing.FenToYuanString(*o.InterruptibleFloorPerGPUHourFen)
	}
	vm, err := h.offerFormVM(c, shell, o, f)
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderOfferFormPage(handlers.ViewCtx(c), vm))
}

// ProviderOfferUpdate is POST /provider/{pid}/offers/{id}: every field but
// its node, model and interconnect.
func (h *Handler) ProviderOfferUpdate(c echo.Context) error {
	_, shell, err := h.providerWriter(c, "offers")
	if err != nil {
		return err
	}
	o, err := h.providerOfferFromPath(c, shell)
	if err != nil {
		return err
	}
	f := offerForm(c)
	n := parseOfferNumbers(c, &f)
	status := http.StatusUnprocessableEntity
	if len(f.Errors) == 0 {
		tiers, imgs, custom := n.tiers, n.images, f.Get("custom_images") != ""
		_, err := h.Providers.UpdateOffer(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID, o.ID, providers.OfferPatch{
			MaxGPUs: optInt(f, "max_gpus", n.maxGPUs), VCPUPerGPU: optInt(f, "vcpu_per_gpu", n.vcpu), RAMGBPerGPU: optInt(f, "ram_gb_per_gpu", n.ram),
			DiskGB: optInt(f, "disk_gb", n.disk), PricePerGPUHourFen: &n.price,
			WeeklyPricePerGPUFen: &n.weekly, MonthlyPricePerGPUFen: &n.monthly, OffpeakDiscountPct: optInt(f, "offpeak_discount_pct", n.offpeak),
			StudentDiscountPct: optInt(f, "student_discount_pct", n.student), MinDurationS: optInt(f, "min_duration_min", n.minDurS), SLATiers: &tiers,
			CustomImages: &custom, StoragePricePerGBMonthFen: n.storage, NoGPUPricePerHourFen: n.noGPU, Images: &imgs,
			InterruptibleFloorPerGPUHourFen: &n.floor,
		})
		if err == nil {
			h.Flash(c, "provider.offer.saved")
			return handlers.SeeOther(c, c.Echo().Reverse(routenames.ProviderOffers, shell.PID()))
		}
		if status, err = providerFormError(c, &f, err, offerAliases); err != nil {
			return err
		}
	}
	vm, err := h.offerFormVM(c, shell, o, f)
	if err != nil {
		return err
	}
	return handlers.Render(c, status, providerpages.ProviderOfferFormPage(handlers.ViewCtx(c), vm))
}

// ProviderOfferStatus is POST /provider/{pid}/offers/{id}/status: pause
// or list. A refusal is shown on the offer's row (409 or 422).
func (h *Handler) ProviderOfferStatus(c echo.Context) error {
	acc, shell, err := h.providerWriter(c, "offers")
	if err != nil {
		return err
	}
	o, err := h.providerOfferFromPath(c, shell)
	if err != nil {
		return err
	}
	st := c.FormValue("status")
	_, err = h.Providers.UpdateOffer(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID, o.ID, providers.OfferPatch{Status: &st})
	if err == nil {
		if st == models.OfferPaused {
			h.Flash(c, "provider.offer.paused")
		} else {
			h.Flash(c, "provider.offer.listed")
		}
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.ProviderOffers, shell.PID()))
	}
	f := handlers.ReadForm(c)
	code, err := providerFormError(c, &f, err, nil)
	if err != nil {
		return err
	}
	vm, err := h.offersVM(c, acc, shell)
	if err != nil {
		return err
	}
	vm.Refusal[o.ID] = f.Err("_form")
	return handlers.Render(c, code, providerpages.ProviderOffersPage(handlers.ViewCtx(c), vm))
}
