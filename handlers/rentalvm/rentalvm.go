// Package rentalvm maps the market's rental records and the rentals use
// case's results to the plain view models of views/rentalpages.
package rentalvm

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"suanli/agent"
	"suanli/catalog"
	"suanli/fleet"
	"suanli/idlestop"
	"suanli/interruptions"
	"suanli/models"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/sla"
	"suanli/views"
	"suanli/views/rentalpages"
)

// RentOffer maps the offer the rent page rents, named in lang.
func RentOffer(o *models.OfferRow, lang string) rentalpages.RentOffer {
	out := rentalpages.RentOffer{
		ID: o.ID, Status: o.Status, PricePerGPUHourFen: o.PricePerGPUHourFen,
		AvailableGPUs: o.AvailableGPUs, MaxGPUs: o.MaxGPUs, MinDurationS: o.MinDurationS,
	}
	if dc := o.Datacenter; dc != nil {
		out.DCName, out.DCCity, out.DCDistrict = dc.Name(lang), dc.City, dc.District(lang)
	}
	if p := o.Provider; p != nil {
		out.ProviderName = p.Name(lang)
	}
	return out
}

// RentOrg maps an organisation the renter may pay from.
func RentOrg(o *models.Org, balance int64, student bool, price int64) rentalpages.RentOrg {
	return rentalpages.RentOrg{ID: o.ID, Name: o.Name, Personal: o.Personal, BalanceFen: balance, Student: student, PricePerGPUHourFen: price}
}

// RentTerms lists the billing terms the offer prices, on demand first,
// each at its price per GPU (student: a lab member's student price).
func RentTerms(o *models.Offer, student bool) []rentalpages.RentTerm {
	ts := []pricing.Term{pricing.OnDemand}
	if o.WeeklyPricePerGPUFen != nil {
		ts = append(ts, pricing.Week)
	}
	if o.MonthlyPricePerGPUFen != nil {
		ts = append(ts, pricing.Month)
	}
	out := make([]rentalpages.RentTerm, len(ts))
	for i, t := range ts {
		out[i] = rentalpages.RentTerm{Term: t, PriceFen: offers.UnitPriceFen(o, t, student)}
	}
	return out
}

// Place names a datacentre in lang (nil for none).
func Place(dc *models.Datacenter, lang string) *rentalpages.Place {
	if dc == nil {
		return nil
	}
	return &rentalpages.Place{Name: dc.Name(lang), City: dc.City}
}

// Access maps a rental's access (nil for none).
func Access(a *agent.Access) *rentalpages.Access {
	if a == nil {
		return nil
	}
	out := &rentalpages.Access{Host: a.Host, Port: a.Port, User: a.User, Command: a.Command, Simulated: a.Simulated, Container: a.Container}
	if a.Port > 0 && (!a.Simulated || a.Container) {
		out.SCP = agent.SCPCommand(a.User, a.Host, a.Port, "/workspace/")
		out.Rsync = agent.RsyncCommand(a.User, a.Host, a.Port)
	}
	return out
}

// stopReasonKeys are the messages of the platform's stop reasons.
var stopReasonKeys = map[string]string{
	rentals.StopByUser:    "rental.stop_reason.user",
	rentals.StopBalance:   "rental.stop_reason.balance",
	rentals.StopSpendCap:  "rental.stop_reason.limit",
	rentals.StopTermEnded: "rental.stop_reason.term_ended",
	idlestop.StopReason:   "rental.stop_reason.idle",
	detailNoNode:          "rental.stop_reason.no_node",
	// An interrupted bid that was stopped instead of resumed.
	interruptions.StopNotAllowed: "rental.stop_reason.not_allowed",
	interruptions.StopVolumeGone: "rental.stop_reason.volume_gone",
}

// Figures maps a rental's record as its figures stand at now.
func Figures(r *models.Rental, now time.Time) rentalpages.Rental {
	return rentalpages.Rental{
		ID: r.ID, GPUs: r.GPUs, Status: string(r.Status),
		Running: r.Status == models.RentalRunning, Ended: r.Status.Ended(), Free: r.Free, Term: r.Term,
		PricePerGPUHourFen: r.PricePerGPUHourFen, OffpeakPct: r.OffpeakPct, StudentPct: r.StudentPct,
		TermPriceFen: r.TermPriceFen, AutoRenew: r.AutoRenew, SLA: r.SLA,
		EndsAt: r.EndsAt, RunningSince: r.RunningSince, StoppedAt: r.StoppedAt, CreatedAt: r.CreatedAt,
		DowntimeSecs: r.DowntimeSecs, RunningSecs: RunningSecs(r, now),
		Failure: r.Failure, FailureMsg: r.FailureMsg,
		StopReason: r.StopReason, StopReasonKey: stopReasonKeys[r.StopReason],
		MinBilledS: r.MinBilledS, Bid: r.BidPerGPUHourFen,
	}
}

// RunningSecs is how long a rental has run: from the start to its stop
// (or its interruption, while it is interrupted, or now), less the
// downtime (which is not billed).
func RunningSecs(r *models.Rental, now time.Time) int64 {
	if r.RunningSince == nil {
		return 0
	}
	end := now
	if r.StoppedAt != nil && r.StoppedAt.Before(now) {
		end = *r.StoppedAt
	}
	if r.Status == models.RentalInterrupted && r.InterruptedAt != nil && r.InterruptedAt.Before(end) {
		end = *r.InterruptedAt // it stopped running when its grace began
	}
	secs := int64(end.Sub(*r.RunningSince)/time.Second) - r.DowntimeSecs
	if r.DownSince != nil && end.After(*r.DownSince) {
		secs -= int64(end.Sub(*r.DownSince) / time.Second)
	}
	return max(secs, 0)
}

// ConsoleRow maps a rental to a console row, its figures at at.
func ConsoleRow(r models.Rental, o models.OfferRow, lang, orgName string, cost, rate int64, a *agent.Access, simulated, canStop bool, at time.Time) rentalpages.RentalRow {
	return rentalpages.RentalRow{Rental: Figures(&r, at), OrgName: orgName, GPUName: catalog.GPUName(o.GPUModel), Datacenter: Place(o.Datacenter, lang),
		CostFen: cost, RateFenPerHour: rate, Access: Access(a), Simulated: simulated, CanStop: canStop, At: at}
}

// WalletLink maps an organisation's balance on the console.
func WalletLink(o *models.Org, balance int64) rentalpages.WalletLink {
	return rentalpages.WalletLink{OrgID: o.ID, OrgName: o.Name, Personal: o.Personal, BalanceFen: balance}
}

// Detail maps a rental's detail to its page, the checks' and
// the timeline's words in vc's language. The caller adds the GPU model,
// the paying organisation and what the viewer may do.
func Detail(vc views.Ctx, d *rentals.RentalDetail) rentalpages.RentalVM {
	vm := rentalpages.RentalVM{
		Rental: Figures(&d.Rental, d.At), Datacenter: Place(d.Offer.Datacenter, vc.Lang),
		Simulated: d.Simulated(), Billing: d.Billing(), CostFen: d.CostFen, RateFenPerHour: d.RateFenPerHour, At: d.At,
		Access: Access(d.Access), Checks: Checks(d.Checks, vc.Lang), Image: d.Rental.Image, RegistryUser: d.RegistryUser, Released: d.Rental.Released(),
		Bid: Bid(vc, d),
	}
	// A released rental says so, not merely "stopped".
	vm.Rental.Status = d.PublicStatus()
	vm.PullPct = -1
	if p := d.Progress; p != nil && p.Stage == "pull" {
		vm.PullPct = p.Pct
	}
	for _, g := range d.GPUs {
		vm.GPUs = append(vm.GPUs, rentalpages.RentalGPU{Idx: g.Idx, UUID: g.UUID, Health: string(g.Health)})
	}
	for _, e := range d.Events {
		vm.Events = append(vm.Events, rentalpages.Event{At: e.At, Kind: e.Kind, Detail: EventDetail(vc, d.Node, e)})
	}
	return vm
}

// Checks maps the checks that passed before hand-over, their readings
// in lang (nil before any passed).
func Checks(c *rentals.Checks, lang string) *rentalpages.Checks {
	if c == nil {
		return nil
	}
	passed, _ := c.Passed()
	out := &rentalpages.Checks{Passed: passed, At: c.At}
	for _, u := range c.UUIDs() {
		g := rentalpages.CheckedGPU{UUID: u}
		for _, ch := range c.Verdicts[u].Checks {
			g.Checks = append(g.Checks, rentalpages.Check{Name: ch.Name, OK: ch.OK, Text: ch.Text(lang)})
		}
		out.GPUs = append(out.GPUs, g)
	}
	return out
}

// ChangeQuote maps a previewed change (nil for none).
func ChangeQuote(q *rentals.ChangeQuote) *rentalpages.ChangeQuote {
	if q == nil {
		return nil
	}
	return &rentalpages.ChangeQuote{
		ToOfferID: q.ToOfferID, FromGPUs: q.FromGPUs, ToGPUs: q.ToGPUs,
		FromFenPerHour: q.FromFenPerHour, ToFenPerHour: q.ToFenPerHour,
		FromPerGPUHour: q.FromPerGPUHour, ToPerGPU: q.ToPerGPU, SameNode: q.SameNode,
	}
}

// SLA maps a rental's SLA terms to the page's section at now.
func SLA(s *sla.RentalTerms, r *models.Rental, now time.Time) *rentalpages.RentalSLA {
	out := &rentalpages.RentalSLA{Tier: s.Tier, Free: s.Free, Periods: make([]rentalpages.SLAPeriod, 0, len(s.Periods))}
	for i := range s.Periods {
		p := &s.Periods[i]
		out.Periods = append(out.Periods, rentalpages.SLAPeriod{
			Period: p.Period, From: p.From, To: p.To, Tier: p.Tier,
			PeriodSecs: p.PeriodSecs, DowntimeSecs: p.DowntimeSecs, UptimePct: p.UptimePct,
			CreditPct: p.CreditPct, BilledFen: p.BilledFen, DowntimeCostFen: p.DowntimeCostFen, CreditFen: p.CreditFen,
			Final: p.Final, Recorded: p.Recorded, Credited: p.TxnID != nil, Open: p.Open(r, now),
		})
	}
	return out
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

// NodeName names a node of the timeline: by its name when it is the node
// the page shows, else by its number.
func NodeName(n *models.Node, id string) string {
	if n != nil && views.I64(n.ID) == id {
		return n.Name
	}
	return "#" + id
}

// EventDetail is a timeline line's detail in the reader's language where
// it is one market writes (checks passed, a node that failed them, sizes,
// the platform's stop reasons); agents' and nodes' own words as they are.
// It returns "" when the event's label already says it all. node is the
// node the page shows (nil for none).
func EventDetail(vc views.Ctx, node *models.Node, e models.RentalEvent) string {
	if !e.DetailMsg.IsZero() {
		return e.DetailMsg.Text(vc.Lang)
	}
	d := e.Detail
	switch e.Kind {
	case "stop_requested":
		if k := stopReasonKeys[d]; k != "" {
			return vc.T(k)
		}
		return d
	case "running", "migrated":
		if m := detailChecks.FindStringSubmatch(d); m != nil {
			p, _ := strconv.Atoi(m[2])
			t, _ := strconv.Atoi(m[3])
			return vc.T("rental.detail.checks", NodeName(node, m[1]), p, t)
		}
	case "node_failed":
		if m := detailNodeFailed.FindStringSubmatch(d); m != nil {
			return vc.T("rental.detail.node_failed", NodeName(node, m[1]), m[2])
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

// Usage maps a rental's GPU telemetry history to its page's section;
// polling while the rental is not settled.
func Usage(rentalID int64, simulated, polling bool, us []fleet.GPUUsage) *rentalpages.UsageVM {
	vm := &rentalpages.UsageVM{RentalID: rentalID, Simulated: simulated, Polling: polling}
	for _, u := range us {
		g := rentalpages.UsageGPU{Idx: u.GPU.Idx, UUID: u.GPU.UUID}
		for _, s := range u.Samples {
			g.Samples = append(g.Samples, rentalpages.UsageSample{At: s.At, UtilPct: s.UtilPct, MemUsedMiB: s.MemUsedMiB,
				PowerW: s.PowerW, TempC: s.TempC, SMClockMHz: s.SMClockMHz})
		}
		vm.GPUs = append(vm.GPUs, g)
	}
	return vm
}

// Workspace maps the rental page's browser-access section: canWork is
// workspace.CanWork for the viewer; shares are the rental's live share
// links.
func Workspace(d *rentals.RentalDetail, canWork bool, shares []models.PortShare) *rentalpages.WorkspaceVM {
	r := &d.Rental
	vm := &rentalpages.WorkspaceVM{RentalID: r.ID, CanWork: canWork, Ports: r.DeclaredPorts()}
	acc := d.Access
	switch {
	case !canWork:
		vm.Why = "workspace.why_forbidden"
	case r.Status != models.RentalRunning:
		vm.Why = "workspace.why_not_running"
	case acc == nil || !acc.Container:
		vm.Why = "workspace.why_no_container"
	default:
		vm.Open = true
		if acc.Jupyter != nil {
			vm.JupyterKind = acc.Jupyter.Kind
		}
	}
	for _, s := range shares {
		vm.Shares = append(vm.Shares, rentalpages.Share{ID: s.ID, Port: s.Port, ExpiresAt: s.ExpiresAt})
	}
	return vm
}

// IdleSetting maps an idle-stop setting or policy to the pages'.
func IdleSetting(s models.IdleStop) rentalpages.IdleSetting {
	return rentalpages.IdleSetting{BelowPct: s.BelowPct, Minutes: s.Minutes}
}

// IdleStop maps a rental's idle stop to its page's section: its own
// setting, the policy of org (the lab that pays for it) and what applies;
// st is its GPUs' idle streak at at (zero unless it runs), f the form.
func IdleStop(r *models.Rental, org *models.Org, st idlestop.Streak, at time.Time, simulated, canChange bool, f views.Form) *rentalpages.IdleStopVM {
	p := idlestop.Policy(org)
	eff := idlestop.Effective(r.IdleStop, p)
	vm := &rentalpages.IdleStopVM{RentalID: r.ID, Own: IdleSetting(r.IdleStop), Policy: IdleSetting(p), Effective: IdleSetting(eff),
		PolicyOrg: org.Name, Running: r.Status == models.RentalRunning && !r.NoGPU, IdleMinutes: -1, Simulated: simulated,
		CanChange: canChange, Form: f, MinMinutes: idlestop.MinMinutes, MaxMinutes: idlestop.MaxMinutes}
	if st.Idle && eff.On() {
		stops := idlestop.StopsAt(st, eff, r.IdleWarnedAt, at)
		vm.IdleMinutes, vm.StopsAt = int(st.For(at)/time.Minute), &stops
	}
	return vm
}

// IdleStopDefaults fills the idle-stop inputs a form left empty with a
// setting (own, the rental's; ticked when on) or, when it is off, a
// suggestion: the lab's policy when it has one (a setting it accepts),
// below 10 % for an hour otherwise.
func IdleStopDefaults(f views.Form, own, policy models.IdleStop) {
	s := own
	if s.On() && f.Get("idle_stop_minutes") == "" && f.Get("idle_stop_below_pct") == "" {
		f.Values["idle_stop"] = "1"
	}
	if !s.On() {
		s = policy
	}
	if !s.On() {
		s = models.IdleStop{BelowPct: 10, Minutes: 60}
	}
	if strings.TrimSpace(f.Get("idle_stop_below_pct")) == "" {
		f.Values["idle_stop_below_pct"] = strconv.Itoa(s.BelowPct)
	}
	if strings.TrimSpace(f.Get("idle_stop_minutes")) == "" {
		f.Values["idle_stop_minutes"] = strconv.Itoa(s.Minutes)
	}
}
