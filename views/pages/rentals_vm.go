package pages

import (
	"net/url"
	"regexp"
	"strconv"
	"time"

	"suanli/agent"
	"suanli/catalog"
	"suanli/models"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/routenames"
	"suanli/views"
)

// RentOrg is an organisation the renter may pay from, with its balance.
type RentOrg struct {
	Org        models.Org
	BalanceFen int64
	// Student is true when renting from it gets the offer's student price
	// (an approved lab in which the renter is a confirmed member).
	Student bool
	// PricePerGPUHourFen is the offer's on-demand price when paying from it.
	PricePerGPUHourFen int64
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
	Form views.Form
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
func (vm RentVM) terms() []pricing.Term {
	ts := []pricing.Term{pricing.OnDemand}
	if vm.Offer.WeeklyPricePerGPUFen != nil {
		ts = append(ts, pricing.Week)
	}
	if vm.Offer.MonthlyPricePerGPUFen != nil {
		ts = append(ts, pricing.Month)
	}
	return ts
}

// termKey is the message key naming a billing term.
func termKey(term pricing.Term) string {
	switch term {
	case pricing.Week:
		return "price.weekly"
	case pricing.Month:
		return "price.monthly"
	}
	return "price.on_demand"
}

// student reports whether the chosen organisation pays student prices.
func (vm RentVM) student() bool {
	o, ok := vm.selected()
	return ok && o.Student
}

// hourPrice is the on-demand price per GPU-hour from the chosen
// organisation (the list price when none is chosen).
func (vm RentVM) hourPrice() int64 {
	return offers.UnitPriceFen(&vm.Offer.Offer, pricing.OnDemand, vm.student())
}

// termPrice is a term's price per GPU from the chosen organisation, for
// the term's radio button.
func (vm RentVM) termPrice(vc views.Ctx, term pricing.Term) string {
	unit := "unit.per_gpu_hour"
	switch term {
	case pricing.Week:
		unit = "unit.per_gpu_week"
	case pricing.Month:
		unit = "unit.per_gpu_month"
	}
	return views.Yuan(offers.UnitPriceFen(&vm.Offer.Offer, term, vm.student())) + vc.T(unit)
}

// earlyStopKey is the message saying what stopping a rental of the term
// early refunds (nothing, for a week or month term).
func earlyStopKey(term pricing.Term) string { return offers.EarlyStopOf(term).Key }

// orgLabel names an organisation in the select, with the offer's price
// per GPU-hour when paying from it and its balance.
func orgLabel(vc views.Ctx, o RentOrg) string {
	name := o.Org.Name
	if o.Org.Personal {
		name = vc.T("rent.org_personal")
	}
	s := vc.T("rent.org_option", name, views.Yuan(o.PricePerGPUHourFen), views.Yuan(o.BalanceFen))
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
	return vc.URL(routenames.WalletShow, views.I64(o.Org.ID))
}

// rentURL is the rent page of an offer (its htmx requests fetch the price).
func rentURL(vc views.Ctx, offerID int64) string {
	return vc.URL(routenames.RentalsNew, views.I64(offerID))
}

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
	// CanChange is true when the viewer may switch or resize it now.
	CanChange bool
	At        time.Time
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
	D       *rentals.RentalDetail
	GPU     catalog.GPUModel
	OrgName string
	// StudentPrices: a change the viewer makes is at student prices
	// (rentals.StudentPrices of the rental's organisation and the viewer).
	StudentPrices bool
	// CanStop is true when the viewer may stop it and it can be stopped.
	CanStop bool
	// Change is the switch / resize section: nil unless the viewer may
	// change the rental and it can be changed (see Changeable).
	Change *ChangeVM
	// SLA is the SLA section: the tier and each month's computation (nil
	// on the live fragment, which does not show it).
	SLA *RentalSLA
}

// ChangeOffer is an offer a rental may switch to: the rental's own, or
// one listed in the same datacentre.
type ChangeOffer struct {
	ID                 int64
	GPUName            string
	PricePerGPUHourFen int64
	// AvailableGPUs are the offer's free GPUs (the rental's own are not
	// counted); MaxGPUs the most one rental of it takes.
	AvailableGPUs, MaxGPUs int
	// Current is true for the rental's own offer.
	Current bool
	// OtherProvider names the offer's provider when it is not the
	// rental's ("" when it is).
	OtherProvider string
}

// ChangeVM is the rental page's switch / resize section: the form and,
// once previewed, the quote for the change with its Confirm button.
type ChangeVM struct {
	// Offers are the rental's own offer first, then the others listed in
	// its datacentre, cheapest first.
	Offers []ChangeOffer
	// Form holds offer_id and gpus; its "_form" message (a conflict, a
	// short balance) is shown at the top of the section.
	Form views.Form
	// TopUp is set when the message at the top is about money: the
	// section then links to the wallet.
	TopUp bool
	// WalletURL is the paying organisation's wallet.
	WalletURL string
	// Quote is the previewed change; nil until the renter asks for one.
	Quote *rentals.ChangeQuote
	// FromName and ToName are the quote's GPU models' catalogue names.
	FromName, ToName string
}

// maxGPUs is the most GPUs any offer of the form takes (the input's max).
func (c *ChangeVM) maxGPUs() int {
	n := 1
	for _, o := range c.Offers {
		n = max(n, o.MaxGPUs)
	}
	return n
}

// offerLabel names an offer in the switch form's select: model, price per
// GPU-hour and free GPUs.
func offerLabel(vc views.Ctx, o ChangeOffer) string {
	s := vc.T("change.offer_option", o.GPUName, views.Yuan(o.PricePerGPUHourFen)+vc.T("unit.per_gpu_hour"), o.AvailableGPUs, o.MaxGPUs)
	if o.OtherProvider != "" {
		s += " · " + o.OtherProvider
	}
	if o.Current {
		s += " " + vc.T("change.current")
	}
	return s
}

// perHour writes what an hour costs at a rate ("¥10.40/h").
func perHour(vc views.Ctx, fen int64) string { return vc.T("change.per_hour", views.Yuan(fen)) }

// Seen is the state the page shows: its status and the length of its
// timeline. The live fragment asks for a full reload when it changes.
func (vm RentalVM) Seen() string {
	return string(vm.D.Rental.Status) + "." + strconv.Itoa(len(vm.D.Events))
}

// Polling reports whether the page follows the rental's state: while it
// is not settled.
func (vm RentalVM) Polling() bool { return !vm.D.Rental.Status.Ended() }

func (vm RentalVM) liveURL(vc views.Ctx) string {
	return vc.URL(routenames.RentalsLive, views.I64(vm.D.Rental.ID)) + "?seen=" + url.QueryEscape(vm.Seen())
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

// unixMS is a time for the ticker's data attributes.
func unixMS(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// shTimePtr is shTime for an optional time.
func shTimePtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return views.ShTime(*t)
}

// shortUUID shortens a GPU UUID for a sentence: "GPU-3f2a1b2c…".
func shortUUID(u string) string {
	if len(u) <= 13 {
		return u
	}
	return u[:12] + "…"
}

// stopReason says why a rental stopped, in the reader's language when it
// is one of the platform's reasons.
func stopReason(vc views.Ctx, reason string) string {
	switch reason {
	case rentals.StopByUser:
		return vc.T("rental.stop_reason.user")
	case rentals.StopBalance:
		return vc.T("rental.stop_reason.balance")
	case rentals.StopSpendCap:
		return vc.T("rental.stop_reason.limit")
	case rentals.StopTermEnded:
		return vc.T("rental.stop_reason.term_ended")
	case detailNoNode:
		return vc.T("rental.stop_reason.no_node")
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

// runningSecs is how long a console row's rental has run.
func (r RentalRow) runningSecs() int64 { return runningSecs(&r.Rental, r.At) }

// agreedLines lists the discounts agreed for a rental.
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

// rentLink is the offer page's Rent button: the rent page with the quote
// panel's choice of GPUs, term and tier.
func rentLink(vc views.Ctx, vm OfferVM) string {
	v := url.Values{}
	for _, k := range []string{"gpus", "term", "sla"} {
		if s := vm.QuoteForm.Get(k); s != "" && vm.QuoteErrors[k] == "" {
			v.Set(k, s)
		}
	}
	u := rentURL(vc, vm.Offer.ID)
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

// The details market writes for some events, in English (market/
// provision.go, rentals.go, change.go, health.go). The timeline reads them
// back to show them in the reader's language; a detail that does not
// match is shown as it is.
var (
	detailChecks     = regexp.MustCompile(`^node (\d+); (\d+) of (\d+) NVML checks passed$`)
	detailNodeFailed = regexp.MustCompile(`^NVML checks failed on node (\d+): (.+)$`)
	detailRequested  = regexp.MustCompile(`^(\d+) × ([a-z0-9-]+)$`)
	detailSwitch     = regexp.MustCompile(`^([a-z0-9-]+) × (\d+) → ([a-z0-9-]+) × (\d+)$`)
)

// Fixed details market writes.
const (
	detailNoNode      = "no healthy node to move to"
	detailNonePassed  = "no node passed the NVML checks; nothing was charged"
	detailUnconfirmed = "the node's agent did not confirm the stop; GPUs released"
)

// nodeName names a node of the timeline: by its name when it is the node
// the page shows, else by its number.
func (vm RentalVM) nodeName(id string) string {
	if n := vm.D.Node; n != nil && views.I64(n.ID) == id {
		return n.Name
	}
	return "#" + id
}

// eventDetail is a timeline line's detail in the reader's language where
// it is one market writes (checks passed, a node that failed them, sizes,
// the platform's stop reasons); agents' and nodes' own words as they are.
// It returns "" when the event's label already says it all.
func (vm RentalVM) eventDetail(vc views.Ctx, e models.RentalEvent) string {
	if !e.DetailMsg.IsZero() {
		return e.DetailMsg.Text(vc.Lang)
	}
	d := e.Detail
	switch e.Kind {
	case "stop_requested":
		return stopReason(vc, d)
	case "running", "migrated":
		if m := detailChecks.FindStringSubmatch(d); m != nil {
			p, _ := strconv.Atoi(m[2])
			t, _ := strconv.Atoi(m[3])
			return vc.T("rental.detail.checks", vm.nodeName(m[1]), p, t)
		}
	case "node_failed":
		if m := detailNodeFailed.FindStringSubmatch(d); m != nil {
			return vc.T("rental.detail.node_failed", vm.nodeName(m[1]), m[2])
		}
	case "requested":
		if m := detailRequested.FindStringSubmatch(d); m != nil {
			return catalog.GPUName(m[2]) + " × " + m[1]
		}
	case "switch_requested":
		if m := detailSwitch.FindStringSubmatch(d); m != nil {
			return catalog.GPUName(m[1]) + " × " + m[2] + " → " + catalog.GPUName(m[3]) + " × " + m[4]
		}
	case "stopped":
		if d == detailNoNode {
			return vc.T("rental.stop_reason.no_node")
		}
	case "failed":
		if d == detailNonePassed {
			return vc.T("rental.detail.none_passed")
		}
	case "stop_unconfirmed":
		if d == detailUnconfirmed {
			return ""
		}
	case "not_renewed":
		if d == rentals.DetailNodeRetiring {
			return vc.T("rental.detail.not_renewed")
		}
	case "renewed":
		if t, err := time.Parse(time.RFC3339, d); err == nil {
			return vc.T("rental.detail.renewed", views.ShTime(t))
		}
	}
	return d
}
