// Package rentalpages renders the renter's rental pages: the rent form
// (GET/POST /offers/{id}/rent), the console (GET /console) and a
// rental's page with its live fragment, switch / resize section and SLA
// section (/rentals/{id}), from plain view models that package handlers
// builds.
package rentalpages

import (
	"net/url"
	"strconv"
	"time"

	"suanli/catalog"
	"suanli/locales"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/bidviews"
)

// RentOrg is an organisation the renter may pay from, with its balance.
type RentOrg struct {
	ID   int64
	Name string
	// Personal is true for the renter's own organisation (named
	// "personal" in the reader's language).
	Personal   bool
	BalanceFen int64
	// Student is true when renting from it gets the offer's student price
	// (an approved lab in which the renter is a confirmed member).
	Student bool
	// PricePerGPUHourFen is the offer's on-demand price when paying from it.
	PricePerGPUHourFen int64
}

// RentOffer is the offer the rent page rents, named in the reader's
// language.
type RentOffer struct {
	ID                                   int64
	DCName, DCCity, DCDistrict           string
	ProviderName                         string
	Status                               string
	PricePerGPUHourFen                   int64
	AvailableGPUs, MaxGPUs, MinDurationS int
}

// RentTerm is a billing term the offer prices, with its price per GPU
// from the chosen organisation (per hour, week or month).
type RentTerm struct {
	Term     pricing.Term
	PriceFen int64
}

// RentVM is the rent page's view model.
type RentVM struct {
	Offer RentOffer
	GPU   catalog.GPUModel
	// Orgs are the organisations the renter may pay from, personal first;
	// Selected indexes the chosen one (-1 when there is none).
	Orgs     []RentOrg
	Selected int
	// Terms are the billing terms the offer prices, on demand first.
	Terms []RentTerm
	// HourPriceFen is the on-demand price per GPU-hour from the chosen
	// organisation (the list price when none is chosen).
	HourPriceFen int64
	// EarlyStopKey is the message saying what stopping a week or month
	// term early refunds; QuoteEarlyStopKey says it of the quote's term.
	EarlyStopKey, QuoteEarlyStopKey string
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
	// Images are the offer's images; CustomImages whether renters may
	// name their own (the form's image value CustomImage).
	Images       []RentImage
	CustomImages bool
	// PrivateRegistries is whether a custom image may come with registry
	// credentials (the platform has a key to keep them with).
	PrivateRegistries bool
	// StoragePerGBMonthFen is the volume price; MaxVolumeGB the largest
	// new volume; SharedStorage whether the datacentre's volumes follow a
	// rental to any of its nodes.
	StoragePerGBMonthFen int64
	MaxVolumeGB          int
	SharedStorage        bool
	// Volumes are the chosen organisation's free volumes usable here.
	Volumes []RentVolume
	// IdlePolicies are the idle-stop policies of the labs the renter may
	// pay from; IdleMinMinutes and IdleMaxMinutes bound the window.
	IdlePolicies                   []IdlePolicy
	IdleMinMinutes, IdleMaxMinutes int
	// Bid is the interruptible term's choice (nil: the offer takes no
	// bids).
	Bid *bidviews.RentBid
}

// CustomImage is the rent form's image value for "my own image".
const CustomImage = "_custom"

// RentImage is an image on the rent form.
type RentImage struct {
	Slug, Name, CUDA string
	Jupyter          bool
	// Cached: the offer's node has it (no pull). Compatible: the node's
	// driver (DriverCUDA) can run it.
	Cached, Compatible bool
	DriverCUDA         string
}

// RentVolume is an existing volume the rent form offers.
type RentVolume struct {
	ID     int64
	Name   string
	SizeGB int
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

// rentalTermKey is the message key naming a rental's term: its bid's
// for an interruptible one.
func rentalTermKey(r Rental) string {
	if r.Bid != nil {
		return "bidpages.term"
	}
	return termKey(r.Term)
}

// interruptedStatus is the status of an interrupted rental: it holds no
// GPUs, so it has no access to show.
const interruptedStatus = "interrupted"

// interrupted reports whether the rental is interrupted now.
func (vm RentalVM) interrupted() bool { return vm.Bid != nil && vm.Bid.Interrupted }

// bidSection is the bid section: its raise form for a viewer who may
// stop the rental now (its renter or an admin, while it is live or
// interrupted), with a refused raise's message beside its field.
// actionError is the message shown above the actions instead.
func (vm RentalVM) bidSection() bidviews.RentalBid {
	b := *vm.Bid
	b.CanRaise = vm.CanStop
	if vm.ActionField == bidviews.Field {
		b.Error = vm.ActionError
	}
	return b
}

func (vm RentalVM) actionError() string {
	if vm.Bid != nil && vm.ActionField == bidviews.Field {
		return ""
	}
	return vm.ActionError
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

// termPrice is a term's price per GPU from the chosen organisation, for
// the term's radio button.
func termPrice(vc views.Ctx, t RentTerm) string {
	unit := "unit.per_gpu_hour"
	switch t.Term {
	case pricing.Week:
		unit = "unit.per_gpu_week"
	case pricing.Month:
		unit = "unit.per_gpu_month"
	}
	return views.Yuan(t.PriceFen) + vc.T(unit)
}

// orgLabel names an organisation in the select, with the offer's price
// per GPU-hour when paying from it and its balance.
func orgLabel(vc views.Ctx, o RentOrg) string {
	name := o.Name
	if o.Personal {
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
	return vc.URL(routenames.WalletShow, views.I64(o.ID))
}

// rentURL is the rent page of an offer (its htmx requests fetch the price).
func rentURL(vc views.Ctx, offerID int64) string {
	return vc.URL(routenames.RentalsNew, views.I64(offerID))
}

// Place is a rental's datacentre, named in the reader's language.
type Place struct {
	Name, City string
}

// Access is how the renter reaches a rental's workspace.
type Access struct {
	Host, User, Command string
	Port                int
	// Simulated is true on a simulated agent (simulated GPUs); Container
	// when a real container runs there (else nothing really runs).
	Simulated, Container bool
	// SCP and Rsync copy files in over SSH ("" where SSH reaches nothing
	// real).
	SCP, Rsync string
}

// Rental is a rental's figures as the console and its page show them.
type Rental struct {
	ID     int64
	GPUs   int
	Status string
	// Running is true in the running status; Ended once it stopped or
	// failed (settled).
	Running, Ended bool
	Free           bool
	Term           pricing.Term
	// The price agreed at the start, and its discounts.
	PricePerGPUHourFen     int64
	OffpeakPct, StudentPct int
	TermPriceFen           *int64
	AutoRenew              bool
	SLA                    string
	EndsAt                 *time.Time
	RunningSince           *time.Time
	StoppedAt              *time.Time
	CreatedAt              time.Time
	// DowntimeSecs is the downtime so far (not billed); RunningSecs how
	// long it has run, less the downtime, at the view's time.
	DowntimeSecs, RunningSecs int64
	// Failure is why it failed, FailureMsg the same as a message (zero for
	// rentals that failed before it was stored).
	Failure    string
	FailureMsg locales.Msg
	// StopReason is why it stopped; StopReasonKey the message saying it
	// when it is one of the platform's reasons ("" for the renter's own
	// words, shown as they are).
	StopReason, StopReasonKey string
	// MinBilledS is the least it is billed for, in seconds.
	MinBilledS int
	// Bid is an interruptible rental's bid per GPU-hour (nil: not
	// interruptible).
	Bid *int64
}

// stopReason says why a rental stopped, in the reader's language when it
// is one of the platform's reasons.
func stopReason(vc views.Ctx, r Rental) string {
	if r.StopReasonKey != "" {
		return vc.T(r.StopReasonKey)
	}
	return r.StopReason
}

// RentalRow is one rental in the console.
type RentalRow struct {
	Rental  Rental
	OrgName string
	GPUName string
	// Datacenter is nil when the offer has none.
	Datacenter *Place
	// CostFen is the cost so far; RateFenPerHour what an hour costs now
	// (0 when not billing per second).
	CostFen        int64
	RateFenPerHour int64
	Access         *Access
	Simulated      bool
	CanStop        bool
	// CanChange is true when the viewer may switch or resize it now.
	CanChange bool
	At        time.Time
}

// WalletLink is an organisation's balance on the console.
type WalletLink struct {
	OrgID   int64
	OrgName string
	// Personal is true for the renter's own organisation.
	Personal   bool
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
	// Alerts are the spending thresholds the organisations crossed now.
	Alerts []SpendAlert
}

// HistoryLimit is how many settled rentals the console lists.
const HistoryLimit = 50

// Check is one NVML check of a GPU, its reading in the reader's language.
type Check struct {
	Name string
	OK   bool
	Text string
}

// CheckedGPU is a GPU's checks before hand-over.
type CheckedGPU struct {
	UUID   string
	Checks []Check
}

// Checks are the NVML checks that passed before the GPUs were handed over.
type Checks struct {
	// Passed counts the checks that passed over every GPU.
	Passed int
	// GPUs are the checked GPUs in UUID order.
	GPUs []CheckedGPU
	At   time.Time
}

// RentalGPU is a GPU the rental holds.
type RentalGPU struct {
	Idx    int
	UUID   string
	Health string
}

// Event is a line of a rental's timeline.
type Event struct {
	At   time.Time
	Kind string
	// Detail is the event's detail in the reader's language ("" when its
	// label already says it all).
	Detail string
}

// RentalVM is the rental page's (and its live fragment's) view model.
type RentalVM struct {
	Rental  Rental
	GPU     catalog.GPUModel
	OrgName string
	// Datacenter is nil when the offer has none.
	Datacenter *Place
	// Simulated is true when it runs on a simulated node; Billing when it
	// accrues cost per second now.
	Simulated, Billing bool
	// CostFen is what it has cost up to now; RateFenPerHour what an hour
	// costs now (0 when not billing). At is when they were read.
	CostFen, RateFenPerHour int64
	At                      time.Time
	Access                  *Access
	// Checks are nil before any passed.
	Checks *Checks
	GPUs   []RentalGPU
	// Usage is the GPU usage section (nil on the live fragment, which
	// does not show it: it polls on its own).
	Usage  *UsageVM
	Events []Event
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
	// Image is the container image reference it runs ("" before images).
	Image string
	// RegistryUser is the username of the registry credentials its image
	// is pulled with ("" when none); the password is never shown.
	RegistryUser string
	// Volume is its volume at /workspace (nil before volumes).
	Volume *Volume
	// CanStart: the viewer may start it again, and it can start.
	// CanRelease: the viewer may release it, and it is not released.
	CanStart, CanRelease bool
	// Released is true once it was released (it never starts again).
	Released bool
	// ActionError says why a start or release was refused ("" if none).
	ActionError string
	// PullPct is how far the node has pulled the image, while it does
	// (-1 otherwise).
	PullPct int
	// NoGPU: it runs (or last ran) in no-GPU mode, at NoGPURateFen an
	// hour before discounts. NoGPUFenPerHour is the offer's no-GPU price
	// an hour now (what a no-GPU start costs).
	NoGPU                         bool
	NoGPURateFen, NoGPUFenPerHour int64
	// FilesLeft is set when the rental moved without its files (local
	// storage) and that volume still exists.
	FilesLeft *FilesLeft
	// Workspace is the browser-access section (nil on the live fragment
	// and for a released rental).
	Workspace *WorkspaceVM
	// Idle is the idle-stop section (nil on the live fragment).
	Idle *IdleStopVM
	// Runway is the paying wallet's runway, while it runs billed by the
	// second (nil otherwise).
	Runway *Runway
	// Bid is an interruptible rental's bid and interruption (nil: not
	// interruptible). ActionField is the field ActionError is about
	// (bidviews.Field: shown beside the bid, not above the actions).
	Bid         *bidviews.RentalBid
	ActionField string
}

// FilesLeft is the local volume a rental left on another node.
type FilesLeft struct {
	VolumeID int64
	Node     string
	// NodeID is its node's id (nil: none), whose health NodeUp follows.
	NodeID *int64
	// NodeUp: the node is back. CanStartThere: the viewer may start the
	// rental there with the volume now; StopFirst: they may once the
	// running rental is stopped.
	NodeUp, CanStartThere, StopFirst bool
	// CurrentVolumeID is the volume it mounts now, kept if it starts
	// with the left one (0 when none).
	CurrentVolumeID int64
}

// Volume is a rental's volume as its page shows it.
type Volume struct {
	ID     int64
	SizeGB int
	// Shared: it follows the rental to any node of the datacentre; else
	// its files are on the disk of the node NodeName.
	Shared   bool
	NodeName string
	Deleted  bool
	// FenPerDay is what it costs a day as storage.
	FenPerDay int64
	// DeleteAfter is set while its rental is stopped: deleted then unless
	// it starts; KeepDays is the platform's number of days.
	DeleteAfter *time.Time
	KeepDays    int
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

// ChangeQuote is a previewed switch / resize: the rental now and after.
type ChangeQuote struct {
	ToOfferID        int64
	FromGPUs, ToGPUs int
	// FromFenPerHour is what an hour costs now (0 when stopped);
	// ToFenPerHour what it costs after the change, from now.
	FromFenPerHour, ToFenPerHour int64
	// FromPerGPUHour and ToPerGPU are the per-GPU-hour prices paid.
	FromPerGPUHour, ToPerGPU int64
	SameNode                 bool
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
	Quote *ChangeQuote
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
	return vm.Rental.Status + "." + strconv.Itoa(len(vm.Events))
}

// Polling reports whether the page follows the rental's state: while it
// is not settled.
func (vm RentalVM) Polling() bool { return !vm.Rental.Ended }

func (vm RentalVM) liveURL(vc views.Ctx) string {
	return vc.URL(routenames.RentalsLive, views.I64(vm.Rental.ID)) + "?seen=" + url.QueryEscape(vm.Seen())
}

// eventsURL is the live block's event stream (static/rental-events.js),
// with the state the page shows, as liveURL.
func (vm RentalVM) eventsURL(vc views.Ctx) string {
	return vc.URL(routenames.RentalsEvents, views.I64(vm.Rental.ID)) + "?seen=" + url.QueryEscape(vm.Seen())
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

// checksLine sums up the checks that passed before hand-over.
func checksLine(vc views.Ctx, c *Checks) string {
	on := vc.N("rental.checks_gpus", len(c.GPUs))
	if len(c.GPUs) == 1 {
		on = shortUUID(c.GPUs[0].UUID)
	}
	return vc.T("rental.checks_passed", c.Passed, on, c.At.In(pricing.Shanghai).Format("15:04:05"))
}

// agreedLines lists the discounts agreed for a rental.
func agreedLines(vc views.Ctx, r Rental) []string {
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
func walletName(vc views.Ctx, w WalletLink) string {
	if w.Personal {
		return vc.T("rent.org_personal")
	}
	return w.OrgName
}

func yesNo(b bool) string {
	if b {
		return "rental.yes"
	}
	return "rental.no"
}
