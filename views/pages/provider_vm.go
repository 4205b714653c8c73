package pages

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"suanli/catalog"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
	"suanli/providers"
	"suanli/routenames"
	"suanli/views"
)

// ProviderShell is what every provider portal page shows: the provider,
// its organisation's verification status, the reader's role and the tab.
type ProviderShell struct {
	Provider models.Provider
	Org      models.Org
	Role     string
	// CanManage is true for the organisation's owners and admins: the
	// forms and buttons that change things are shown to them only.
	CanManage bool
	// Tab is the portal section: dashboard, datacenters, nodes, offers,
	// capacity, earnings or profile.
	Tab string
}

// PID is the provider's id as a path parameter.
func (s ProviderShell) PID() string { return views.I64(s.Provider.ID) }

// ProviderChooseVM is GET /provider: the onboarding form, and the
// providers the user belongs to when there are several.
type ProviderChooseVM struct {
	Accounts []providers.Account
	Form     views.Form
}

// ProviderDashboardVM is the portal's first page.
type ProviderDashboardVM struct {
	Shell       ProviderShell
	Datacenters int
	Nodes       []providers.NodeSummary
	Offers      []models.Offer
	Now         time.Time
}

// ProviderProfileVM is the onboarding profile form.
type ProviderProfileVM struct {
	Shell ProviderShell
	Form  views.Form
}

// ProviderDatacentersVM lists the datacentres with the create (or edit) form.
type ProviderDatacentersVM struct {
	Shell       ProviderShell
	Datacenters []providers.DatacenterView
	Form        views.Form
	// Editing is the datacentre the form edits (nil: a new one).
	Editing *providers.DatacenterView
}

// ProviderNodesVM lists the nodes with the "add node" form.
type ProviderNodesVM struct {
	Shell       ProviderShell
	Nodes       []providers.NodeSummary
	Datacenters []providers.DatacenterView
	Form        views.Form
	Now         time.Time
}

// ProviderNodeVM is a node's page. Token and Install are set only right
// after the node was added or its token renewed: the token is shown once.
type ProviderNodeVM struct {
	Shell   ProviderShell
	D       providers.NodeDetail
	Token   string
	Install providers.InstallCommands
	// Now is when the page was rendered (for "12 s ago").
	Now time.Time
	// Refusal is why a status change was refused, shown beside the buttons.
	Refusal string
}

// ProviderOffersVM lists the provider's offers.
type ProviderOffersVM struct {
	Shell  ProviderShell
	Offers []models.Offer
	// NodeNames names the nodes the offers are on.
	NodeNames map[int64]string
	// Refusal is why a pause or list was refused, by offer id.
	Refusal map[int64]string
}

// ProviderOfferFormVM is the create or edit form of an offer.
type ProviderOfferFormVM struct {
	Shell ProviderShell
	// Offer is the offer edited (nil: a new one).
	Offer *models.Offer
	Nodes []providers.NodeSummary
	Form  views.Form
}

// ProviderCapacityVM is the capacity view.
type ProviderCapacityVM struct {
	Shell ProviderShell
	C     providers.Capacity
}

// ProviderEarningsVM is the earnings page and the printable statement.
type ProviderEarningsVM struct {
	Shell ProviderShell
	S     providers.Statement
	// Connect is true when Stripe Connect onboarding is available.
	Connect bool
	// Print is the printable statement alone.
	Print bool
	// MonthError is the message about a month that did not parse.
	MonthError string
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

func telemetryOf(g models.GPU) gpuTelemetry {
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

// nodeHealthClass is the status chip's class for a node's health.
func nodeHealthClass(h models.NodeHealth) string {
	switch h {
	case models.NodeHealthy:
		return "status-running"
	case models.NodeSilent, models.NodeNoNVML:
		return "status-failed"
	}
	return "status-pending"
}

func gpuHealthClass(h models.GPUHealth) string {
	switch h {
	case models.GPUHealthy:
		return "status-running"
	case models.GPUFailing, models.GPUMissing:
		return "status-failed"
	}
	return "status-pending"
}

// offerState is the offer's status as the list shows it: listed, paused,
// awaiting_node, or hidden (listed, but not in the public list: the
// provider is not verified or is suspended, or the node is not active;
// ListingNote says which).
func offerState(o models.Offer) string {
	switch {
	case o.Status == models.OfferListed && o.AwaitingNode:
		return "awaiting_node"
	case o.Status == models.OfferListed && o.ListingNote != "":
		return "hidden"
	}
	return o.Status
}

func offerStateClass(o models.Offer) string {
	switch offerState(o) {
	case "listed":
		return "status-running"
	case "awaiting_node", "hidden":
		return "status-provisioning"
	}
	return "status-stopped"
}

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

func strip(from time.Time, nc providers.NodeCapacity) []stripCell {
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

func payoutMethod(vc views.Ctx, m string) string {
	if m == models.PayoutStripe {
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

// NodeRow is a node of a list, with the time the list was made.
type NodeRow struct {
	providers.NodeSummary
	Now time.Time
}

func nodeRows(ns []providers.NodeSummary, now time.Time) []NodeRow {
	out := make([]NodeRow, len(ns))
	for i, n := range ns {
		out[i] = NodeRow{NodeSummary: n, Now: now}
	}
	return out
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
func nodeOption(vc views.Ctx, n providers.NodeSummary) string {
	s := n.Node.Name + " · " + n.Datacenter.Name(vc.Lang)
	if n.Node.GPUModel != "" {
		s += " · " + catalog.GPUName(n.Node.GPUModel) + " × " + strconv.Itoa(n.GPUs)
	} else {
		s += " · " + vc.T("provider.node.not_detected")
	}
	return s
}

func nodeNameOf(ns []providers.NodeSummary, id int64) string {
	for _, n := range ns {
		if n.Node.ID == id {
			return n.Node.Name
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
func latencySource(vc views.Ctx, src string) string {
	switch {
	case src == providers.LatencyDeclared:
		return vc.T("latency.source.declared")
	case strings.HasPrefix(src, "demo"):
		return vc.T("latency.source.demo_row")
	}
	return src
}
