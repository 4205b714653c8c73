// Package providerpages renders the provider portal (/provider/…):
// onboarding, the profile, datacentres, nodes, offers, capacity and
// earnings, from plain view models that handlers/provider builds.
package providerpages

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"suanli/catalog"
	"suanli/locales"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/orgverifypages"
)

// ProviderShell is what every provider portal page shows: the provider,
// its organisation's verification status, the reader's role and the tab.
type ProviderShell struct {
	ProviderID int64
	// ProviderName is the provider's name in the reader's language.
	ProviderName string
	// Demo marks the demo's providers.
	Demo bool
	// Approved and Rejected are the organisation's verification (neither:
	// waiting); StatusReason is why it was refused.
	Approved, Rejected bool
	StatusReason       string
	Role               string
	// CanManage is true for the organisation's owners and admins: the
	// forms and buttons that change things are shown to them only.
	CanManage bool
	// Tab is the portal section: dashboard, datacenters, nodes, offers,
	// capacity, earnings or profile.
	Tab string
}

// PID is the provider's id as a path parameter.
func (s ProviderShell) PID() string { return views.I64(s.ProviderID) }

// ProviderAccount is one provider the user belongs to, as GET /provider
// lists them.
type ProviderAccount struct {
	ProviderID int64
	// Name is the provider's name in the reader's language.
	Name string
	// OrgStatus is its organisation's verification status (pending,
	// approved, rejected).
	OrgStatus string
	Role      string
}

// ProviderChooseVM is GET /provider: the onboarding form, and the
// providers the user belongs to when there are several.
type ProviderChooseVM struct {
	Accounts []ProviderAccount
	Form     views.Form
}

// ProviderDashboardVM is the portal's first page.
type ProviderDashboardVM struct {
	Shell ProviderShell
	// Datacenters and Offers are how many the provider has.
	Datacenters int
	Nodes       []NodeRow
	Offers      int
	Now         time.Time
}

// ProviderProfileVM is the onboarding profile form.
type ProviderProfileVM struct {
	Shell ProviderShell
	Form  views.Form
}

// Datacenter is a datacentre the provider has nodes in or created.
type Datacenter struct {
	ID int64
	// Name and District are in the reader's language.
	Name, District string
	City           string
	Tier           string
	UplinkGbps     int
	// Nodes is how many of the provider's nodes it hosts.
	Nodes int
	// Shared is true for a datacentre the provider has nodes in but did
	// not create: it is shown, not edited.
	Shared    bool
	Latencies []Latency
	// Storage is its volume storage: "local" or "shared".
	Storage string
}

// dcStorages are the storage kinds the datacentre form offers.
var dcStorages = []string{"local", "shared"}

// Latency is a round-trip time from a city to a datacentre.
type Latency struct {
	FromCity string
	RTTms    float64
	// Declared is true for the provider's own declaration; Source is
	// where any other figure came from, as recorded.
	Declared bool
	Source   string
}

// ProviderDatacentersVM lists the datacentres with the create (or edit) form.
type ProviderDatacentersVM struct {
	Shell       ProviderShell
	Datacenters []Datacenter
	Form        views.Form
	// Editing is the datacentre the form edits (nil: a new one).
	Editing *Datacenter
	// Tiers are the facility tiers the form offers.
	Tiers []string
}

// Node is a node as its list and its page show it.
type Node struct {
	ID        int64
	Name      string
	Simulated bool
	// GPUModel is the model its agent detected ("" until then).
	GPUModel string
	// Health and Status are the node's health and status keys;
	// HealthClass is the status chip's class for the health.
	Health, HealthClass, Status string
	// Active and Removed say whether Status is active or removed.
	Active, Removed bool
	LastHeartbeatAt *time.Time
	Uptime30dPct    *float64
}

// NodeRow is a node of a list: the node, its datacentre's name and its
// GPU counts.
type NodeRow struct {
	Node
	// DatacenterName is in the reader's language.
	DatacenterName                string
	GPUs, Free, Rented, Unhealthy int
}

// ProviderNodesVM lists the nodes with the "add node" form.
type ProviderNodesVM struct {
	Shell ProviderShell
	Nodes []NodeRow
	// Datacenters are those new nodes may go into.
	Datacenters []Datacenter
	Form        views.Form
	Now         time.Time
}

// GPU is one GPU of a node as its agent last reported it.
type GPU struct {
	Idx                  int
	Name, GPUModel, UUID string
	MemoryMiB            int64
	// Health and State are keys ("" before the first report);
	// HealthClass is the health chip's class.
	Health, HealthClass, State string
	// Reasons are the failing checks, one per line, or ReasonsMsg when
	// they were recorded as a message.
	Reasons    string
	ReasonsMsg locales.Msg
	// Telemetry is the agent's telemetry JSON ("" when none).
	Telemetry string
}

// Incident is an incident of a node or of one of its GPUs.
type Incident struct {
	Kind string
	// GPUID is 0 for the whole node.
	GPUID      int64
	Reasons    string
	ReasonsMsg locales.Msg
	OpenedAt   time.Time
	ClosedAt   *time.Time
}

// Report is a benchmark report of a node.
type Report struct {
	ID           int64
	GPUModel     string
	GPUs         int
	Simulated    bool
	PctOfNominal *float64
	MeasuredAt   time.Time
}

// Rental is a rental on a node.
type Rental struct {
	ID        int64
	GPUs      int
	SLA       string
	Status    string
	CreatedAt time.Time
}

// Offer is one of the provider's offers.
type Offer struct {
	ID, NodeID         int64
	GPUModel           string
	MaxGPUs            int
	Interconnect       string
	PricePerGPUHourFen int64
	AvailableGPUs      int
	// InterruptibleFloorFen is the floor of interruptible rentals (竞价
	// 底价) per GPU-hour, nil when the offer takes no bids.
	InterruptibleFloorFen *int64
	// Listed is true when the provider listed it (shown or not).
	Listed bool
	// State is its status as the list shows it: listed, paused,
	// awaiting_node, or hidden (listed, but not in the public list:
	// ListingNote says why); StateClass is its chip's class.
	State, StateClass, ListingNote string
}

// InstallCommands are the commands that start a node's agent.
type InstallCommands struct {
	Shell, Systemd, Docker string
}

// ProviderNodeVM is a node's page. Token and Install are set only right
// after the node was added or its token renewed: the token is shown once.
type ProviderNodeVM struct {
	Shell ProviderShell
	Node  Node
	// Datacenter is where the node is (its name, city and district).
	Datacenter Datacenter
	GPUs       []GPU
	Incidents  []Incident
	Reports    []Report
	Rentals    []Rental
	Offers     []Offer
	Token      string
	Install    InstallCommands
	// Now is when the page was rendered (for "12 s ago").
	Now time.Time
	// Refusal is why a status change was refused, shown beside the buttons.
	Refusal string
}

// ProviderOffersVM lists the provider's offers.
type ProviderOffersVM struct {
	Shell  ProviderShell
	Offers []Offer
	// NodeNames names the nodes the offers are on.
	NodeNames map[int64]string
	// Refusal is why a pause or list was refused, by offer id.
	Refusal map[int64]string
}

// ProviderOfferFormVM is the create or edit form of an offer.
type ProviderOfferFormVM struct {
	Shell ProviderShell
	// Offer is the offer edited (nil: a new one).
	Offer *Offer
	// Nodes are the nodes an offer may be on (not removed ones).
	Nodes []NodeRow
	Form  views.Form
	// Images are the platform's catalogue, for the offer's choice.
	Images []ImageOption
}

// ImageOption is a catalogue image an offer may offer.
type ImageOption struct {
	Slug, Name string
	// CUDAVersion is its CUDA runtime ("" for none).
	CUDAVersion string
}

// NodeCapacity is a node's GPUs now and over the next 30 days.
type NodeCapacity struct {
	ID                                       int64
	Name                                     string
	Total, Free, Rented, Reserved, Unhealthy int
	// Committed is the GPUs held by week or month rentals on each of the
	// next 30 days (day 0 is the capacity view's From).
	Committed         []int
	Utilisation30dPct float64
}

// ProviderCapacityVM is the capacity view; From is the start of today,
// Asia/Shanghai.
type ProviderCapacityVM struct {
	Shell ProviderShell
	From  time.Time
	Nodes []NodeCapacity
}

// EarningLine is a rental's line of a monthly statement.
type EarningLine struct {
	RentalID int64
	GPUModel string
	GPUs     int
	// End is zero while the rental runs.
	Start, End                                    time.Time
	GrossFen, CommissionFen, SLACreditFen, NetFen int64
}

// Payout is a payout to the provider.
type Payout struct {
	Period string
	// Stripe is true for a payout by Stripe Connect (else by bank transfer).
	Stripe                 bool
	AmountFen              int64
	Status                 string
	BankReference, Failure string
}

// Statement is a provider's monthly statement, its payouts and how it is
// paid.
type Statement struct {
	// ProviderName is in the reader's language.
	ProviderName                                                     string
	Month                                                            string
	From, To                                                         time.Time
	Lines                                                            []EarningLine
	GrossFen, CommissionFen, SLACreditFen, NetFen, PayableBalanceFen int64
	UnearnedFen, OwedFen                                             int64
	Payouts                                                          []Payout
	// Months are the months that can be asked for, newest first.
	Months                                     []string
	BankName, BankAccountName, BankAccountNo   string
	StripeAccountID                            string
	StripeChargesEnabled, StripePayoutsEnabled bool
}

// ProviderEarningsVM is the earnings page and the printable statement.
type ProviderEarningsVM struct {
	Shell ProviderShell
	S     Statement
	// Connect is true when Stripe Connect onboarding is available.
	Connect bool
	// Print is the printable statement alone.
	Print bool
	// MonthError is the message about a month that did not parse.
	MonthError string
	// PayoutHold says payouts wait for organisation verification (企业认证).
	PayoutHold orgverifypages.PayoutHold
}

// provTabs are the portal's sections in menu order, with their routes.
var provTabs = []struct{ Tab, Route string }{
	{"dashboard", routenames.ProviderDashboard},
	{"datacenters", routenames.ProviderDatacenters},
	{"nodes", routenames.ProviderNodes},
	{"offers", routenames.ProviderOffers},
	{"capacity", routenames.ProviderCapacity},
	{"earnings", routenames.ProviderEarnings},
	{"profile", routenames.ProviderProfile},
}

// ago says how long ago t was, in the reader's language.
func ago(vc views.Ctx, now time.Time, t *time.Time) string {
	if t == nil {
		return vc.T("provider.never")
	}
	d := now.Sub(*t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return vc.T("provider.ago_s", int(d/time.Second))
	case d < time.Hour:
		return vc.T("provider.ago_m", int(d/time.Minute))
	case d < 48*time.Hour:
		return vc.T("provider.ago_h", int(d/time.Hour))
	}
	return vc.T("provider.ago_d", int(d/(24*time.Hour)))
}

// gpuTelemetry is what the node page reads of a GPU's telemetry JSON.
type gpuTelemetry struct {
	TemperatureC int     `json:"temperature_c"`
	PowerW       float64 `json:"power_w"`
	PowerLimitW  float64 `json:"power_limit_w"`
	Utilization  int     `json:"utilization_pct"`
	ok           bool
}

func telemetryOf(g GPU) gpuTelemetry {
	var t gpuTelemetry
	if g.Telemetry != "" && json.Unmarshal([]byte(g.Telemetry), &t) == nil {
		t.ok = true
	}
	return t
}

func (t gpuTelemetry) temp() string {
	if !t.ok {
		return "—"
	}
	return strconv.Itoa(t.TemperatureC) + " °C"
}

func (t gpuTelemetry) power() string {
	if !t.ok {
		return "—"
	}
	s := fmt.Sprintf("%.0f W", t.PowerW)
	if t.PowerLimitW > 0 {
		s += fmt.Sprintf(" / %.0f W", t.PowerLimitW)
	}
	return s
}

// reasonLines splits a GPU's or incident's reasons (one per line).
func reasonLines(vc views.Ctx, s string, m locales.Msg) []string {
	if !m.IsZero() {
		return m.LinesOf(vc.Lang)
	}
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func memGiB(mib int64) string {
	return fmt.Sprintf("%.0f GiB", float64(mib)/1024)
}

func shMinute(t time.Time) string { return t.In(pricing.Shanghai).Format("2006-01-02 15:04") }

func shDate(t time.Time) string { return t.In(pricing.Shanghai).Format("2006-01-02") }

// checked reports whether a repeatable field's values (joined by commas
// in the form) contain v.
func checked(f views.Form, name, v string) bool {
	return slices.Contains(strings.Split(f.Get(name), ","), v)
}

// latencyField is the form field of the declared latency from a city.
func latencyField(city string) string { return "latency_" + city }

// stripCell is one day of the 30-day strip of committed GPUs.
type stripCell struct {
	Day   string
	N     int
	Level int // 0 (none) … 4 (all)
}

func strip(from time.Time, nc NodeCapacity) []stripCell {
	out := make([]stripCell, len(nc.Committed))
	for i, n := range nc.Committed {
		lvl := 0
		if n > 0 && nc.Total > 0 {
			lvl = 1 + (n*3)/nc.Total
			if lvl > 4 {
				lvl = 4
			}
		}
		out[i] = stripCell{Day: shDate(from.AddDate(0, 0, i)), N: n, Level: lvl}
	}
	return out
}

func payoutMethod(vc views.Ctx, stripe bool) string {
	if stripe {
		return "Stripe Connect"
	}
	return vc.T("wallet.method.bank")
}

func provYesNo(vc views.Ctx, b bool) string {
	if b {
		return vc.T("provider.yes")
	}
	return vc.T("provider.no")
}

// monthURL is the earnings page (or statement, or CSV) of a month.
func monthURL(vc views.Ctx, route, pid, month string) string {
	u := vc.URL(route, pid)
	if month != "" {
		u += "?month=" + month
	}
	return u
}

// roleLabel names the reader's role in a provider ("" is a platform
// admin looking on).
func roleLabel(vc views.Ctx, role string) string {
	if role == "" {
		return vc.T("provider.platform_view")
	}
	return vc.T("role." + role)
}

// offerInterconnects are the interconnects an offer may name.
var offerInterconnects = []string{"pcie", "nvlink", "nvlink-ib"}

func offerFormTitle(vc views.Ctx, vm ProviderOfferFormVM) string {
	if vm.Offer == nil {
		return vc.T("provider.offer.new")
	}
	return vc.T("provider.offer.edit", catalog.GPUName(vm.Offer.GPUModel), vm.Offer.ID)
}

// nodeOption names a node in the offer form: its name, datacentre and
// the GPU model its agent detected.
func nodeOption(vc views.Ctx, n NodeRow) string {
	s := n.Name + " · " + n.DatacenterName
	if n.GPUModel != "" {
		s += " · " + catalog.GPUName(n.GPUModel) + " × " + strconv.Itoa(n.GPUs)
	} else {
		s += " · " + vc.T("provider.node.not_detected")
	}
	return s
}

func nodeNameOf(ns []NodeRow, id int64) string {
	for _, n := range ns {
		if n.ID == id {
			return n.Name
		}
	}
	return "#" + views.I64(id)
}

// negYuan shows a deduction as a negative amount ("−¥12.00"; "¥0.00" when none).
func negYuan(fen int64) string {
	if fen == 0 {
		return views.Yuan(0)
	}
	if fen < 0 {
		fen = -fen
	}
	return "−" + views.Yuan(fen)
}

// lineEnd is when a statement line's rental ended ("running" while it runs).
func lineEnd(vc views.Ctx, t time.Time) string {
	if t.IsZero() {
		return vc.T("provider.earn.running")
	}
	return shMinute(t)
}

// latencySource says where a datacentre's latency figure came from: the
// sources the platform records in the reader's language (a provider's
// declaration; the demo's published figures, whose source begins
// "demo"), any other as it was recorded.
func latencySource(vc views.Ctx, l Latency) string {
	switch {
	case l.Declared:
		return vc.T("latency.source.declared")
	case strings.HasPrefix(l.Source, "demo"):
		return vc.T("latency.source.demo_row")
	}
	return l.Source
}
