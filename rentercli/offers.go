package rentercli

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"suanli/apiclient"
	"suanli/locales"
)

// runOffers searches the market (GET /api/v1/offers: the offers page's
// search) and prints a table, or the API's JSON.
func runOffers(a *app, args []string) error {
	fs := a.flags()
	var gpus multiFlag
	fs.Var(&gpus, "gpu", a.T("cli.flag.gpu"))
	city := fs.String("city", "", a.T("cli.flag.city"))
	region := fs.String("region", "", a.T("cli.flag.region"))
	maxPrice := fs.String("max-price", "", a.T("cli.flag.max_price"))
	interruptible := fs.Bool("interruptible", false, a.T("cli.flag.interruptible"))
	available := fs.Bool("available", false, a.T("cli.flag.available"))
	minGPUs := fs.Int("min-gpus", 0, a.T("cli.flag.min_gpus"))
	minVRAM := fs.Int("min-vram", 0, a.T("cli.flag.min_vram"))
	sort := fs.String("sort", "", a.T("cli.flag.sort"))
	page := fs.Int("page", 0, a.T("cli.flag.page"))
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	if err := a.parseNoArgs(fs, args); err != nil {
		return err
	}
	p := apiclient.ListOffersParams{}
	if len(gpus) > 0 {
		p.Gpu = ptr([]string(gpus))
	}
	if *city != "" {
		p.City = city
	}
	if *region != "" {
		p.Region = region
	}
	if *maxPrice != "" {
		p.MaxPrice = ptr(strings.TrimPrefix(*maxPrice, "¥"))
	}
	if *interruptible {
		p.Interruptible = interruptible
	}
	if *available {
		p.Available = available
	}
	if *minGPUs > 0 {
		p.MinGpus = minGPUs
	}
	if *minVRAM > 0 {
		p.MinVramGb = minVRAM
	}
	if *sort != "" {
		p.Sort = sort
	}
	if *page > 0 {
		p.Page = ptr(apiclient.Page(*page))
	}
	c, _, err := a.clientOrPublic()
	if err != nil {
		return err
	}
	res, err := c.ListOffersWithResponse(a.ctx, &p)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	list := res.JSON200
	if *asJSON || list == nil || len(list.Offers) == 0 {
		return a.noTable(*asJSON, res.Body, "cli.offers.none")
	}
	t := newTable(a.T("cli.col.id"), a.T("cli.col.gpu"), ">"+a.T("cli.col.gpus"), ">"+a.T("cli.col.vram"), a.T("cli.col.datacenter"),
		">"+a.T("cli.col.price"), ">"+a.T("cli.col.bid_from"), ">"+a.T("cli.col.free"), ">"+a.T("cli.col.uptime"))
	for _, o := range list.Offers {
		bid := "—"
		if o.Interruptible != nil {
			bid = yuan(int64(o.Interruptible.ClearingFen))
		}
		uptime := "—"
		if o.Uptime30dPct != nil {
			uptime = strconv.FormatFloat(float64(*o.Uptime30dPct), 'f', 2, 32) + "%"
		}
		// Demo offers (and their simulated benchmarks) say so, as on the
		// offer pages.
		gpuName := o.Gpu.Name
		if o.Demo {
			gpuName += " " + a.T("cli.offers.demo")
		}
		t.add(strconv.Itoa(o.Id), gpuName, strconv.Itoa(o.Gpus), fmt.Sprintf("%d GB", o.Gpu.VramGb), a.place(o.Datacenter),
			yuan(int64(o.YourPricePerGpuHourFen)), bid, strconv.Itoa(o.AvailableGpus), uptime)
	}
	if err := t.write(a.stdout); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, a.T("cli.offers.count", list.Total, list.Page, a.T("cli.offers.rent_hint")))
	return nil
}

// place is a datacentre as the reader reads it: its city and district
// (the Chinese names in zh-CN).
func (a *app) place(d apiclient.Datacenter) string {
	name, district := d.Name, d.District
	if a.lang == locales.ZH {
		if d.NameZh != "" {
			name = d.NameZh
		}
		if d.DistrictZh != "" {
			district = d.DistrictZh
		}
	}
	if district == "" {
		return name
	}
	return name + " · " + district
}

// clientOrPublic is the logged-in client when there is a token, else a
// client without one for the public endpoints (offers, images): the
// prices shown are then the list prices, not the caller's.
func (a *app) clientOrPublic() (*apiclient.ClientWithResponses, settings, error) {
	s, err := a.settings()
	if err != nil {
		return nil, s, err
	}
	if s.server == "" {
		return nil, s, a.errorf(ExitUnauthorised, "cli.err.not_logged_in")
	}
	c, err := a.newClient(s.server, s.token)
	return c, s, err
}

// runTypes lists the instance types the market serves now (GET
// /api/v1/instance-types): the names `suanli rent TYPE` takes.
func runTypes(a *app, args []string) error {
	_, asJSON, err := a.listFlags(args, false)
	if err != nil {
		return err
	}
	c, _, err := a.clientOrPublic()
	if err != nil {
		return err
	}
	res, err := c.ListInstanceTypesWithResponse(a.ctx)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if asJSON || len(res.JSON200.InstanceTypes) == 0 {
		return a.noTable(asJSON, res.Body, "cli.types.none")
	}
	t := newTable(a.T("cli.col.type"), a.T("cli.col.gpu"), ">"+a.T("cli.col.vram"), ">"+a.T("cli.col.offers"), ">"+a.T("cli.col.launchable"),
		">"+a.T("cli.col.price_from"), ">"+a.T("cli.col.free_from"), a.T("cli.col.cities"))
	for _, it := range res.JSON200.InstanceTypes {
		t.add(it.Name, it.GpuName, fmt.Sprintf("%d GB", it.VramGb), strconv.Itoa(it.Offers), strconv.Itoa(it.AvailableInstances),
			yuan(int64(it.MinPriceFen)), yuanPtr(int64Ptr(it.MinAvailablePriceFen)), strings.Join(it.Cities, ", "))
	}
	if err := t.write(a.stdout); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, a.T("cli.types.hint"))
	return nil
}

// int64Ptr widens an optional amount.
func int64Ptr(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}
