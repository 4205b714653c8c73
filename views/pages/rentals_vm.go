package pages

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"suanli/agent"
	"suanli/catalog"
	"suanli/locales"
	"suanli/market"
	"suanli/models"
	"suanli/pricing"
	"suanli/views"
)

// RentOrg is an organisation the renter may pay from, with its balance.
type RentOrg struct {
	Org        models.Org
	BalanceFen int64
	// Student is true when renting from it gets the offer's student price
	// (an approved lab in which the renter is a confirmed member).
	Student bool
}

// RentVM is the rent page's view model.
type RentVM struct {
	Offer models.OfferRow
	GPU   catalog.GPUModel
	// Orgs are the organisations the renter may pay from, personal first;
	// Selected indexes the chosen one (-1 when there is none).
	Orgs     []RentOrg
	Selected int
	// Form holds org_id, gpus, term, sla, ssh_public_key and auto_renew;
	// its "_form" message is shown at the top and "balance" beside the
	// balance.
	Form Form
	// Quote prices the current choice: one hour on demand from now, or
	// the whole term; nil while a field is wrong.
	Quote *pricing.Breakdown
	// NeedFen is the balance that starting needs (an hour, or the term).
	NeedFen int64
	// Simulated is true when the offer runs on simulated nodes.
	Simulated bool
	// Unverified is true when the renter must verify their email first.
	Unverified bool
}

// selected returns the chosen organisation, if any.
func (vm RentVM) selected() (RentOrg, bool) {
	if vm.Selected < 0 || vm.Selected >= len(vm.Orgs) {
		return RentOrg{}, false
	}
	return vm.Orgs[vm.Selected], true
}

// short reports whether the chosen organisation's balance is below what
// starting needs.
func (vm RentVM) short() bool {
	o, ok := vm.selected()
	return ok && vm.Quote != nil && o.BalanceFen < vm.NeedFen
}

// terms lists the billing terms the offer prices, on demand first.
func (vm RentVM) terms() []string {
	ts := []string{pricing.OnDemand}
	if vm.Offer.WeeklyPricePerGPUFen != nil {
		ts = append(ts, pricing.Week)
	}
	if vm.Offer.MonthlyPricePerGPUFen != nil {
		ts = append(ts, pricing.Month)
	}
	return ts
}

// termKey is the message key naming a billing term.
func termKey(term string) string {
	switch term {
	case pricing.Week:
		return "price.weekly"
	case pricing.Month:
		return "price.monthly"
	}
	return "price.on_demand"
}

// termPrice is a term's price per GPU, for the term's radio button.
func (vm RentVM) termPrice(vc views.Ctx, term string) string {
	o := vm.Offer
	switch term {
	case pricing.Week:
		return views.Yuan(*o.WeeklyPricePerGPUFen) + vc.T("unit.per_gpu_week")
	case pricing.Month:
		return views.Yuan(*o.MonthlyPricePerGPUFen) + vc.T("unit.per_gpu_month")
	}
	return views.Yuan(o.PricePerGPUHourFen) + vc.T("unit.per_gpu_hour")
}

// orgLabel names an organisation in the select, with its balance.
func orgLabel(vc views.Ctx, o RentOrg) string {
	name := o.Org.Name
	if o.Org.Personal {
		name = vc.T("rent.org_personal")
	}
	s := vc.T("rent.org_option", name, views.Yuan(o.BalanceFen))
	if o.Student {
		s += " · " + vc.T("badge.student_pricing")
	}
	return s
}

// orgWalletURL links to the chosen organisation's wallet ("" when none).
func (vm RentVM) orgWalletURL(vc views.Ctx) string {
	o, ok := vm.selected()
	if !ok {
		return ""
	}
	return vc.URL("wallet.show", i64(o.Org.ID))
}

// quoteQuery is the rent page's URL with the current choice, for htmx.
func rentURL(vc views.Ctx, offerID int64) string { return vc.URL("rentals.new", i64(offerID)) }

// RentalRow is one rental in the console.
type RentalRow struct {
	Rental     models.Rental
	OrgName    string
	GPUName    string
	Datacenter *models.Datacenter
	// CostFen is the cost so far; RateFenPerHour what an hour costs now
	// (0 when not billing per second).
	CostFen        int64
	RateFenPerHour int64
	Access         *agent.Access
	Simulated      bool
	CanStop        bool
	At             time.Time
}

// WalletLink is an organisation's balance on the console.
type WalletLink struct {
	Org        models.Org
	BalanceFen int64
}

// ConsoleVM is the console's view model: the renter's rentals across
// their organisations, live first, then the latest of the rest.
type ConsoleVM struct {
	Live    []RentalRow
	History []RentalRow
	Wallets []WalletLink
	// MultiOrg is true when the renter belongs to more than one
	// organisation (each row then names the one that pays).
	MultiOrg bool
}

// HistoryLimit is how many settled rentals the console lists.
const HistoryLimit = 50

// RentalVM is the rental page's (and its live fragment's) view model.
type RentalVM struct {
	D       *market.RentalDetail
	GPU     catalog.GPUModel
	OrgName string
	// CanStop is true when the viewer may stop it and it can be stopped.
	CanStop bool
}

// Seen is the state the page shows: its status and the length of its
// timeline. The live fragment asks for a full reload when it changes.
func (vm RentalVM) Seen() string {
	return vm.D.Rental.Status + "." + strconv.Itoa(len(vm.D.Events))
}

// Polling reports whether the page follows the rental's state: while it
// is not settled.
func Polling(status string) bool {
	switch status {
	case models.RentalStopped, models.RentalFailed:
		return false
	}
	return true
}

func (vm RentalVM) liveURL(vc views.Ctx) string {
	return vc.URL("rentals.live", i64(vm.D.Rental.ID)) + "?seen=" + url.QueryEscape(vm.Seen())
}

// Stoppable reports whether a rental in this status can be stopped.
func Stoppable(status string) bool {
	switch status {
	case models.RentalPending, models.RentalProvisioning, models.RentalRunning, models.RentalMigrating:
		return true
	}
	return false
}

// runningSecs is how long a rental has run: from the start to its stop
// (or now), less the downtime (which is not billed).
func runningSecs(r *models.Rental, now time.Time) int64 {
	if r.RunningSince == nil {
		return 0
	}
	end := now
	if r.StoppedAt != nil && r.StoppedAt.Before(now) {
		end = *r.StoppedAt
	}
	secs := int64(end.Sub(*r.RunningSince)/time.Second) - r.DowntimeSecs
	if r.DownSince != nil && end.After(*r.DownSince) {
		secs -= int64(end.Sub(*r.DownSince) / time.Second)
	}
	return max(secs, 0)
}

// clock writes seconds as h:mm:ss (the ticker writes the same).
func clock(secs int64) string {
	return fmt.Sprintf("%d:%02d:%02d", secs/3600, secs/60%60, secs%60)
}

// unixMS is a time for the ticker's data attributes.
func unixMS(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// shTime formats a time in Asia/Shanghai, to the second.
func shTime(t time.Time) string { return t.In(pricing.Shanghai).Format("2006-01-02 15:04:05") }

// shTimePtr is shTime for an optional time.
func shTimePtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return shTime(*t)
}

// shortUUID shortens a GPU UUID for a sentence: "GPU-3f2a1b2c…".
func shortUUID(u string) string {
	if len(u) <= 13 {
		return u
	}
	return u[:12] + "…"
}

// labelOr translates key when the catalogue has it, else shows raw: for
// names that come from agents and market code (check names, event kinds).
func labelOr(vc views.Ctx, key, raw string) string {
	if locales.Has(vc.Lang, key) {
		return vc.T(key)
	}
	return raw
}

// stopReason says why a rental stopped, in the reader's language when it
// is one of the platform's reasons.
func stopReason(vc views.Ctx, reason string) string {
	switch reason {
	case market.StopByUser:
		return vc.T("rental.stop_reason.user")
	case market.StopBalance:
		return vc.T("rental.stop_reason.balance")
	case market.StopSpendCap:
		return vc.T("rental.stop_reason.limit")
	}
	return reason
}

// checksLine sums up the checks that passed before hand-over.
func (vm RentalVM) checksLine(vc views.Ctx) string {
	c := vm.D.Checks
	passed, _ := c.Passed()
	on := vc.N("rental.checks_gpus", len(c.Verdicts))
	if us := c.UUIDs(); len(us) == 1 {
		on = shortUUID(us[0])
	}
	return vc.T("rental.checks_passed", passed, on, c.At.In(pricing.Shanghai).Format("15:04:05"))
}

// rowRunning is runningSecs for a console row.
func (r RentalRow) runningSecs() int64 { return runningSecs(&r.Rental, r.At) }

// discounts lists the discounts and surcharge agreed for a rental.
func agreedLines(vc views.Ctx, r *models.Rental) []string {
	var out []string
	if r.OffpeakPct > 0 {
		out = append(out, vc.T("quote.discount.offpeak", r.OffpeakPct))
	}
	if r.StudentPct > 0 {
		out = append(out, vc.T("quote.discount.student", r.StudentPct))
	}
	return out
}

// slaLabel names a rental's SLA tier with its uptime and surcharge.
func slaLabel(vc views.Ctx, name string) string {
	t, ok := pricing.TierByName(name)
	if !ok {
		return name
	}
	return vc.T("sla."+t.Name, views.Num(t.UptimePct), t.SurchargePct)
}

func tableID(live bool) string {
	if live {
		return "console-live"
	}
	return "console-history"
}

// walletName names an organisation on the console ("personal" for the
// renter's own).
func walletName(vc views.Ctx, o models.Org) string {
	if o.Personal {
		return vc.T("rent.org_personal")
	}
	return o.Name
}

func yesNo(b bool) string {
	if b {
		return "rental.yes"
	}
	return "rental.no"
}
