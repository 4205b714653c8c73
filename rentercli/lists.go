package rentercli

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"suanli/apiclient"
	"suanli/locales"
)

// listFlags parses a list command's flags: --org (where the list has
// one) and --json, and no positional argument.
func (a *app) listFlags(args []string, withOrg bool) (org int, asJSON bool, err error) {
	fs := a.flags()
	var orgFlag *int
	if withOrg {
		orgFlag = fs.Int("org", 0, a.T("cli.flag.org"))
	}
	j := fs.Bool("json", false, a.T("cli.flag.json"))
	if err := a.parseNoArgs(fs, args); err != nil {
		return 0, false, err
	}
	if orgFlag != nil {
		org = *orgFlag
	}
	return org, *j, nil
}

// orgList parses the flags of a list of the organisation's (listFlags,
// with --org) and logs in.
func (a *app) orgList(args []string) (c *apiclient.ClientWithResponses, org int, asJSON bool, err error) {
	if org, asJSON, err = a.listFlags(args, true); err != nil {
		return nil, 0, false, err
	}
	c, _, err = a.login()
	return c, org, asJSON, err
}

// noTable is a list command's end where no table is printed: the
// answer's body with --json, else the line none says (the list is
// empty).
func (a *app) noTable(asJSON bool, body []byte, none string) error {
	if asJSON {
		return printJSON(a.stdout, body)
	}
	fmt.Fprintln(a.stdout, a.T(none))
	return nil
}

// runVolumes lists the organisation's volumes.
func runVolumes(a *app, args []string) error {
	c, org, asJSON, err := a.orgList(args)
	if err != nil {
		return err
	}
	p := apiclient.ListVolumesParams{}
	if org > 0 {
		p.OrgId = &org
	}
	res, err := c.ListVolumesWithResponse(a.ctx, &p)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if asJSON || len(res.JSON200.Volumes) == 0 {
		return a.noTable(asJSON, res.Body, "cli.volumes.none")
	}
	t := newTable(a.T("cli.col.id"), a.T("cli.col.name"), ">"+a.T("cli.col.size"), a.T("cli.col.storage"), a.T("cli.col.status"),
		a.T("cli.col.rental"), ">"+a.T("cli.col.per_day"), ">"+a.T("cli.col.billed"), a.T("cli.col.delete_after"))
	for _, v := range res.JSON200.Volumes {
		rental := "—"
		if v.RentalId != nil {
			rental = strconv.Itoa(*v.RentalId)
		}
		name := v.Name
		if name == "" {
			name = "—"
		}
		t.add(strconv.Itoa(v.Id), name, fmt.Sprintf("%d GB", v.SizeGb), a.word("cli.storage.", string(v.Storage)), a.word("cli.volume_status.", string(v.Status)),
			rental, yuan(int64(v.FenPerDay)), yuan(int64(v.BilledFen)), shTimePtr(v.DeleteAfter))
	}
	return t.write(a.stdout)
}

// runImages lists the image catalogue (with --offer, what that offer's
// node can run and has cached).
func runImages(a *app, args []string) error {
	fs := a.flags()
	offer := fs.Int("offer", 0, a.T("cli.flag.offer"))
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	if err := a.parseNoArgs(fs, args); err != nil {
		return err
	}
	c, _, err := a.clientOrPublic()
	if err != nil {
		return err
	}
	p := apiclient.ListImagesParams{PerPage: ptr(apiclient.PerPage(100))}
	if *offer > 0 {
		p.OfferId = offer
	}
	res, err := c.ListImagesWithResponse(a.ctx, &p)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(a.stdout, res.Body)
	}
	header := []string{a.T("cli.col.slug"), a.T("cli.col.name"), a.T("cli.col.framework"), a.T("cli.col.cuda"), ">" + a.T("cli.col.size"), a.T("cli.col.jupyter")}
	if *offer > 0 {
		header = append(header, a.T("cli.col.compatible"), a.T("cli.col.cached"))
	}
	t := newTable(header...)
	for _, im := range res.JSON200.Images {
		size := "—"
		if im.SizeBytes != nil {
			size = fmt.Sprintf("%.1f GB", float64(*im.SizeBytes)/1e9)
		}
		cuda := im.CudaVersion
		if cuda == "" {
			cuda = "—"
		}
		row := []string{im.Slug, im.Name, strings.TrimSpace(im.Framework + " " + im.FrameworkVersion), cuda, size, a.yesNo(im.Jupyter)}
		if *offer > 0 {
			row = append(row, a.yesNo(im.Compatible != nil && *im.Compatible), a.yesNo(im.Cached != nil && *im.Cached))
		}
		t.add(row...)
	}
	return t.write(a.stdout)
}

// runWallet shows the wallet: balance, what it pays an hour now and how
// long the balance lasts.
func runWallet(a *app, args []string) error {
	c, org, asJSON, err := a.orgList(args)
	if err != nil {
		return err
	}
	p := apiclient.GetWalletParams{}
	if org > 0 {
		p.OrgId = ptr(apiclient.OrgId(org))
	}
	res, err := c.GetWalletWithResponse(a.ctx, &p)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if asJSON {
		return printJSON(a.stdout, res.Body)
	}
	w := res.JSON200
	t := newTable(a.T("cli.col.item"), ">"+a.T("cli.col.amount"))
	t.add(a.T("cli.wallet.balance"), yuan(int64(w.BalanceFen)))
	t.add(a.T("cli.wallet.refundable"), yuan(int64(w.RefundableFen)))
	t.add(a.T("cli.wallet.rate", w.Runway.RunningRentals, w.Runway.Volumes), yuan(int64(w.Runway.RateFenPerHour))+a.T("cli.unit.per_hour"))
	lasts := a.T("cli.wallet.lasts_forever")
	if w.Runway.LastsSeconds != nil {
		lasts = a.duration(time.Duration(*w.Runway.LastsSeconds) * time.Second)
	}
	t.add(a.T("cli.wallet.lasts"), lasts)
	if err := t.write(a.stdout); err != nil {
		return err
	}
	for _, al := range w.Alerts {
		limit := "—"
		if al.LimitFen != nil {
			limit = yuan(int64(*al.LimitFen))
		}
		fmt.Fprintln(a.stdout, a.T("cli.wallet.alert", a.word("cli.alert.", string(al.Kind)), yuan(int64(al.UsedFen)), limit))
	}
	return nil
}

// runOrders lists standing orders; `orders delete ID` cancels one.
func runOrders(a *app, args []string) error {
	if len(args) > 0 && (args[0] == "delete" || args[0] == "cancel") {
		return runOrderDelete(a, args[1:])
	}
	c, org, asJSON, err := a.orgList(args)
	if err != nil {
		return err
	}
	p := apiclient.ListStandingOrdersParams{PerPage: ptr(apiclient.PerPage(100))}
	if org > 0 {
		p.OrgId = ptr(apiclient.OrgId(org))
	}
	res, err := c.ListStandingOrdersWithResponse(a.ctx, &p)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if asJSON || len(res.JSON200.StandingOrders) == 0 {
		return a.noTable(asJSON, res.Body, "cli.orders.none")
	}
	t := newTable(a.T("cli.col.id"), a.T("cli.col.status"), a.T("cli.col.action"), a.T("cli.col.gpu"), ">"+a.T("cli.col.max_price"),
		a.T("cli.col.rental"), a.T("cli.col.expires"))
	for _, o := range res.JSON200.StandingOrders {
		price := "—"
		switch {
		case o.Filters.MaxPriceFen != nil:
			price = yuan(int64(*o.Filters.MaxPriceFen))
		case o.Filters.BidPerGpuHourFen != nil:
			price = a.T("cli.orders.bid", yuan(int64(*o.Filters.BidPerGpuHourFen)))
		}
		rental := "—"
		if o.RentalId != nil {
			rental = strconv.Itoa(*o.RentalId)
		}
		t.add(strconv.Itoa(o.Id), a.word("cli.order_status.", string(o.Status)), a.word("cli.order_action.", string(o.Action)),
			fmt.Sprintf("%d × %s", o.Gpus, o.Filters.Gpu), price, rental, shTime(o.ExpiresAt))
	}
	return t.write(a.stdout)
}

// runOrderDelete cancels an open standing order.
func runOrderDelete(a *app, args []string) error {
	fs := a.flags()
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	pos, _, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return a.usageErr("cli.err.order_arg")
	}
	id, err := strconv.Atoi(pos[0])
	if err != nil || id < 1 {
		return a.usageErr("cli.err.order_arg")
	}
	c, _, err := a.login()
	if err != nil {
		return err
	}
	res, err := c.DeleteStandingOrderWithResponse(a.ctx, apiclient.Id(id))
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(a.stdout, res.Body)
	}
	fmt.Fprintln(a.stdout, a.T("cli.orders.deleted", id))
	return nil
}

// word is an API enum value in the reader's language (prefix+value), or
// the value itself when the catalogue has no word for it.
func (a *app) word(prefix, value string) string {
	if value == "" {
		return "—"
	}
	key := prefix + value
	if !locales.Has(a.lang, key) {
		return value
	}
	return a.T(key)
}

// yesNo is a boolean in words.
func (a *app) yesNo(b bool) string {
	if b {
		return a.T("cli.yes")
	}
	return a.T("cli.no")
}

// duration writes a span as days and hours, or hours and minutes under a
// day.
func (a *app) duration(d time.Duration) string {
	if d >= 24*time.Hour {
		return a.T("cli.duration.days", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	}
	return a.T("cli.duration.hours", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
