package provider

import (
	"suanli/models"
	"suanli/providers"
	"suanli/views/providerpages"
)

// The mapping from the market's records and results to the portal's
// view models: names in the reader's language (lang), and what the pages
// decide from a record's status (chip classes, the offer's shown state)
// decided here, where the statuses are known.

// providerShell is the portal frame of the account for the tab.
func providerShell(acc *providers.Account, tab, lang string) providerpages.ProviderShell {
	return providerpages.ProviderShell{ProviderID: acc.Provider.ID, ProviderName: acc.Provider.Name(lang), Demo: acc.Provider.Demo,
		Approved: acc.Org.Status == models.OrgApproved, Rejected: acc.Org.Status == models.OrgRejected, StatusReason: acc.Org.StatusReason,
		Role: acc.Role, Tab: tab,
		CanManage: acc.CanWrite() && acc.Org.Status != models.OrgRejected && acc.Org.SuspendedAt == nil}
}

func accountsVM(accs []providers.Account, lang string) []providerpages.ProviderAccount {
	out := make([]providerpages.ProviderAccount, len(accs))
	for i, a := range accs {
		out[i] = providerpages.ProviderAccount{ProviderID: a.Provider.ID, Name: a.Provider.Name(lang), OrgStatus: a.Org.Status, Role: a.Role}
	}
	return out
}

func datacenterVM(d providers.DatacenterView, lang string) providerpages.Datacenter {
	out := providerpages.Datacenter{ID: d.ID, Name: d.Name(lang), District: d.District(lang), City: d.City, Tier: d.Tier,
		UplinkGbps: d.UplinkGbps, Nodes: d.Nodes, Shared: d.Shared, Storage: string(d.Storage)}
	for _, l := range d.Latencies {
		out.Latencies = append(out.Latencies, providerpages.Latency{FromCity: l.FromCity, RTTms: l.RTTms,
			Declared: l.Source == providers.LatencyDeclared, Source: l.Source})
	}
	return out
}

func datacentersVM(dcs []providers.DatacenterView, lang string) []providerpages.Datacenter {
	out := make([]providerpages.Datacenter, len(dcs))
	for i, d := range dcs {
		out[i] = datacenterVM(d, lang)
	}
	return out
}

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

func nodeVM(n models.Node) providerpages.Node {
	return providerpages.Node{ID: n.ID, Name: n.Name, Simulated: n.Simulated, GPUModel: n.GPUModel,
		Health: string(n.Health), HealthClass: nodeHealthClass(n.Health), Status: string(n.Status),
		Active: n.Status == models.NodeActive, Removed: n.Status == models.NodeRemoved,
		LastHeartbeatAt: n.LastHeartbeatAt, Uptime30dPct: n.Uptime30dPct}
}

func nodeRowsVM(ns []providers.NodeSummary, lang string) []providerpages.NodeRow {
	out := make([]providerpages.NodeRow, len(ns))
	for i, n := range ns {
		out[i] = providerpages.NodeRow{Node: nodeVM(n.Node), DatacenterName: n.Datacenter.Name(lang),
			GPUs: n.GPUs, Free: n.Free, Rented: n.Rented, Unhealthy: n.Unhealthy}
	}
	return out
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

func offerStateClass(state string) string {
	switch state {
	case "listed":
		return "status-running"
	case "awaiting_node", "hidden":
		return "status-provisioning"
	}
	return "status-stopped"
}

func offerVM(o models.Offer) providerpages.Offer {
	st := offerState(o)
	return providerpages.Offer{ID: o.ID, NodeID: o.NodeID, GPUModel: o.GPUModel, MaxGPUs: o.MaxGPUs, Interconnect: o.Interconnect,
		PricePerGPUHourFen: o.PricePerGPUHourFen, AvailableGPUs: o.AvailableGPUs, Listed: o.Status == models.OfferListed,
		State: st, StateClass: offerStateClass(st), ListingNote: o.ListingNote, InterruptibleFloorFen: o.InterruptibleFloorPerGPUHourFen}
}

func offersVM(os []models.Offer) []providerpages.Offer {
	out := make([]providerpages.Offer, len(os))
	for i, o := range os {
		out[i] = offerVM(o)
	}
	return out
}

// nodeDetailVM fills the node page's view model from the node's detail.
func nodeDetailVM(vm *providerpages.ProviderNodeVM, d *providers.NodeDetail, lang string) {
	vm.Node = nodeVM(d.Node)
	vm.Datacenter = providerpages.Datacenter{ID: d.Datacenter.ID, Name: d.Datacenter.Name(lang), District: d.Datacenter.District(lang),
		City: d.Datacenter.City, Tier: d.Datacenter.Tier, UplinkGbps: d.Datacenter.UplinkGbps, Storage: string(d.Datacenter.Storage)}
	for _, g := range d.GPUs {
		vm.GPUs = append(vm.GPUs, providerpages.GPU{Idx: g.Idx, Name: g.Name, GPUModel: g.GPUModel, UUID: g.UUID, MemoryMiB: g.MemoryMiB,
			Health: string(g.Health), HealthClass: gpuHealthClass(g.Health), State: string(g.State),
			Reasons: g.Reasons, ReasonsMsg: g.ReasonsMsg, Telemetry: g.Telemetry})
	}
	for _, in := range d.Incidents {
		vm.Incidents = append(vm.Incidents, providerpages.Incident{Kind: in.Kind, GPUID: in.GPUID, Reasons: in.Reasons,
			ReasonsMsg: in.ReasonsMsg, OpenedAt: in.OpenedAt, ClosedAt: in.ClosedAt})
	}
	for _, r := range d.Reports {
		vm.Reports = append(vm.Reports, providerpages.Report{ID: r.ID, GPUModel: r.GPUModel, GPUs: r.GPUs, Simulated: r.Simulated,
			PctOfNominal: r.PctOfNominal, MeasuredAt: r.MeasuredAt})
	}
	for _, r := range d.Rentals {
		vm.Rentals = append(vm.Rentals, providerpages.Rental{ID: r.ID, GPUs: r.GPUs, SLA: r.SLA,
			Status: string(r.Status), CreatedAt: r.CreatedAt})
	}
	vm.Offers = offersVM(d.Offers)
}

func capacityVM(c *providers.Capacity) []providerpages.NodeCapacity {
	out := make([]providerpages.NodeCapacity, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = providerpages.NodeCapacity{ID: n.Node.ID, Name: n.Node.Name, Total: n.Total, Free: n.Free, Rented: n.Rented,
			Reserved: n.Reserved, Unhealthy: n.Unhealthy, Committed: n.Committed[:], Utilisation30dPct: n.Utilisation30dPct}
	}
	return out
}

func statementVM(st *providers.Statement, lang string) providerpages.Statement {
	p := st.Provider
	out := providerpages.Statement{ProviderName: p.Name(lang), Month: st.Month, From: st.From, To: st.To,
		GrossFen: st.GrossFen, CommissionFen: st.CommissionFen, SLACreditFen: st.SLACreditFen, NetFen: st.NetFen,
		PayableBalanceFen: st.PayableBalanceFen, UnearnedFen: st.UnearnedFen, OwedFen: st.OwedFen, Months: st.Months,
		BankName: p.BankName, BankAccountName: p.BankAccountName, BankAccountNo: p.BankAccountNo, StripeAccountID: p.StripeAccountID,
		StripeChargesEnabled: p.StripeChargesEnabled, StripePayoutsEnabled: p.StripePayoutsEnabled}
	for _, l := range st.Lines {
		out.Lines = append(out.Lines, providerpages.EarningLine{RentalID: l.RentalID, GPUModel: l.GPUModel, GPUs: l.GPUs, Start: l.Start, End: l.End,
			GrossFen: l.GrossFen, CommissionFen: l.CommissionFen, SLACreditFen: l.SLACreditFen, NetFen: l.NetFen})
	}
	for _, py := range st.Payouts {
		out.Payouts = append(out.Payouts, providerpages.Payout{Period: py.Period, Stripe: py.Method == models.PayoutStripe, AmountFen: py.AmountFen,
			Status: py.Status, BankReference: py.BankReference, Failure: py.Failure})
	}
	return out
}
