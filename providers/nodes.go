package providers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/fleet"
	"suanli/models"
	"suanli/models/supply"
	"suanli/rentals"
)

// NodeInput is the "Add node" form.
type NodeInput struct {
	DatacenterID int64
	Name         string
}

// InstallCommands are the exact ways to install and start a node's agent
// with its registration token: a shell command, a systemd unit and the
// Docker form.
type InstallCommands struct {
	Shell, Systemd, Docker string
}

// agentStateFile is where the install commands keep the node credential
// the registration token is exchanged for.
const agentStateFile = "/var/lib/suanli/agent-state.json"

// InstallCommands returns the commands that start the node's agent with
// the token, pointing at the marketplace's public address.
func (p *Service) InstallCommands(n *models.Node, token string) InstallCommands {
	server := shellQuote(strings.TrimRight(p.BaseURL, "/"))
	tok := shellQuote(token)
	args := fmt.Sprintf("agent --server %s --token %s --state-file %s", server, tok, agentStateFile)
	unit := fmt.Sprintf(`# /etc/systemd/system/suanli-agent.service  (node %s)
[Unit]
Description=suanli node agent
After=network-online.target docker.service
Wants=network-online.target

[Service]
ExecStart=/usr/local/bin/suanli %s
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
# then: systemctl daemon-reload && systemctl enable --now suanli-agent`, n.Name, args)
	docker := fmt.Sprintf("docker run -d --name suanli-agent --restart unless-stopped --gpus all --network host "+
		"-v /var/lib/suanli:/var/lib/suanli -v /var/run/docker.sock:/var/run/docker.sock suanli/suanli %s", args)
	return InstallCommands{Shell: "suanli " + args, Systemd: unit, Docker: docker}
}

// shellQuote quotes a value for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxNodeName is the longest node name, in characters.
const maxNodeName = 64

// AddNode creates a node in one of the provider's datacentres and returns
// it with its one-time registration token, which is shown once and only
// its hash kept (owners and admins).
func (p *Service) AddNode(ctx context.Context, u *models.User, providerID int64, in NodeInput) (*models.Node, string, error) {
	acc, err := p.access(ctx, u, providerID, true)
	if err != nil {
		return nil, "", err
	}
	var errs apperr.Fields
	name := cleanText(&errs, "name", in.Name, true)
	if len(errs) == 0 && (len([]rune(name)) > maxNodeName || strings.ContainsAny(name, " \t/\\")) {
		errs = append(errs, apperr.Field("name", "providers.err.node_name", maxNodeName))
	}
	if in.DatacenterID == 0 {
		errs = append(errs, apperr.Field("datacenter_id", "providers.err.required"))
	} else if _, err := supply.DatacenterOf(p.DB.R.WithContext(ctx), acc.Provider.ID, in.DatacenterID); err != nil {
		if apperr.Code(err) != apperr.ENOTFOUND {
			return nil, "", err
		}
		errs = append(errs, apperr.Field("datacenter_id", "providers.err.datacenter"))
	}
	if err := errs.OrNil(); err != nil {
		return nil, "", err
	}
	tok := fleet.NewNodeToken("snr_")
	h := fleet.HashNodeToken(tok)
	now := p.DB.Now().UTC()
	n := &models.Node{ProviderID: acc.Provider.ID, DatacenterID: in.DatacenterID, Name: name, Status: models.NodeActive,
		CreatedAt: now, RegTokenHash: &h, Health: models.NodeUnknown, AgentInfo: "{}"}
	err = p.DB.Tx(ctx, func(tx *gorm.DB) error {
		// A name taken, also by a node added at the same time (a double
		// click), is refused.
		created, err := supply.InsertNode(tx, n)
		if err != nil {
			return err
		}
		if !created {
			return apperr.Fields{apperr.Field("name", "providers.err.node_name_taken", name)}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	slog.Info("node added", "provider", acc.Provider.ID, "node", n.ID, "user", u.ID)
	return n, tok, nil
}

// RenewNodeToken replaces the node's registration token with a new one and
// returns it: for an agent that lost its state file or a replaced host
// (owners and admins). The old token stops working at once.
func (p *Service) RenewNodeToken(ctx context.Context, u *models.User, providerID, nodeID int64) (string, error) {
	acc, err := p.access(ctx, u, providerID, true)
	if err != nil {
		return "", err
	}
	n, err := supply.NodeOf(p.DB.R.WithContext(ctx), acc.Provider.ID, nodeID)
	if err != nil {
		return "", err
	}
	if n.Status == models.NodeRemoved {
		return "", apperr.Errorf(apperr.ECONFLICT, "node %s is removed", n.Name)
	}
	return p.rentals().Fleet().IssueRegistrationToken(ctx, n.ID)
}

func (p *Service) rentals() *rentals.Service {
	if p.Rentals != nil {
		return p.Rentals
	}
	return &rentals.Service{DB: p.DB}
}

// Node status changes a provider may ask for.
const (
	NodeDrain  = "drain"
	NodeResume = "resume"
	NodeRemove = "remove"
)

// SetNodeStatus drains a node (current rentals finish, no new ones; its
// offers leave the list), resumes a drained one, or removes it (only with
// no live rentals; otherwise ECONFLICT). status is drain, resume or
// remove (or the resulting status: draining, active, removed).
func (p *Service) SetNodeStatus(ctx context.Context, u *models.User, providerID, nodeID int64, status string) error {
	acc, err := p.access(ctx, u, providerID, true)
	if err != nil {
		return err
	}
	to := map[string]models.NodeStatus{NodeDrain: models.NodeDraining, string(models.NodeDraining): models.NodeDraining,
		NodeResume: models.NodeActive, string(models.NodeActive): models.NodeActive,
		NodeRemove: models.NodeRemoved, string(models.NodeRemoved): models.NodeRemoved}[status]
	if to == "" {
		return apperr.Fields{apperr.Field("status", "providers.err.node_status")}
	}
	now := p.DB.Now().UTC()
	return p.DB.Tx(ctx, func(tx *gorm.DB) error {
		n, err := supply.NodeOf(tx, acc.Provider.ID, nodeID)
		if err != nil {
			return err
		}
		if n.Status == to {
			return nil
		}
		if !n.Status.CanMoveTo(to) { // only a removed node is stuck
			return apperr.Errorf(apperr.ECONFLICT, "node %s is removed; add it again as a new node", n.Name)
		}
		if to == models.NodeRemoved {
			live, err := supply.LiveRentalsOnNode(tx, n.ID)
			if err != nil {
				return err
			}
			if live > 0 {
				return &apperr.Error{Code: apperr.ECONFLICT, Key: "providers.err.node_busy", Args: []any{n.Name, live},
					Message: fmt.Sprintf("node %s still has %d live rental(s): drain it and remove it once they have ended", n.Name, live)}
			}
			// A removed node's agent is turned away, its offers end and its
			// open incidents close (the admin console's queue would list
			// them for ever); its GPUs free their UUIDs for the same host
			// added again.
			if err := supply.RemoveNode(tx, n.ID, now); err != nil {
				return err
			}
		} else if err := supply.SetNodeStatus(tx, n.ID, to); err != nil {
			return err
		}
		slog.Info("node status", "provider", acc.Provider.ID, "node", n.ID, "from", n.Status, "to", to, "user", u.ID)
		// The public list hides offers on nodes that are not active.
		return models.OffersChanged(tx, models.OfferScope{Nodes: []int64{n.ID}})
	})
}

// NodeSummary is one line of the provider's node list.
type NodeSummary struct {
	Node                                       models.Node
	Datacenter                                 models.Datacenter
	GPUs, Free, Rented, Unhealthy, LiveRentals int
}

// Nodes returns the provider's nodes (removed ones last) with GPU counts.
func (p *Service) Nodes(ctx context.Context, u *models.User, providerID int64) ([]NodeSummary, error) {
	acc, err := p.access(ctx, u, providerID, false)
	if err != nil {
		return nil, err
	}
	nodes, err := supply.NodesOfProvider(ctx, p.DB, acc.Provider.ID)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	// One query each for the datacentres, the GPU counts and the live
	// rentals of all the nodes (the list is polled every few seconds).
	ids, dcIDs := make([]int64, len(nodes)), make([]int64, len(nodes))
	for i, n := range nodes {
		ids[i], dcIDs[i] = n.ID, n.DatacenterID
	}
	dcs, err := supply.DatacentersByIDs(ctx, p.DB, dcIDs)
	if err != nil {
		return nil, err
	}
	dcByID := make(map[int64]models.Datacenter, len(dcs))
	for _, dc := range dcs {
		dcByID[dc.ID] = dc
	}
	states, err := supply.NodeGPUStateCounts(ctx, p.DB, ids)
	if err != nil {
		return nil, err
	}
	live, err := supply.LiveRentalCounts(ctx, p.DB, ids)
	if err != nil {
		return nil, err
	}
	out := make([]NodeSummary, len(nodes))
	at := make(map[int64]*NodeSummary, len(nodes))
	for i, n := range nodes {
		out[i] = NodeSummary{Node: n, Datacenter: dcByID[n.DatacenterID]}
		at[n.ID] = &out[i]
	}
	for _, c := range states {
		s := at[c.NodeID]
		s.GPUs += c.N
		switch c.State {
		case models.GPUFree:
			s.Free += c.N
		case models.GPUBusy:
			s.Rented += c.N
		case models.GPUUnhealthy:
			s.Unhealthy += c.N
		}
	}
	for nodeID, n := range live {
		at[nodeID].LiveRentals = n
	}
	return out, nil
}

// NodeDetail is the node page: live status, GPUs, incidents, benchmark
// reports, rentals and offers on it.
type NodeDetail struct {
	Node       models.Node
	Datacenter models.Datacenter
	GPUs       []models.GPU
	Incidents  []models.Incident
	Reports    []models.BenchmarkReport
	Rentals    []models.Rental
	Offers     []models.Offer
}

// Node returns one of the provider's nodes in full.
func (p *Service) Node(ctx context.Context, u *models.User, providerID, nodeID int64) (*NodeDetail, error) {
	acc, err := p.access(ctx, u, providerID, false)
	if err != nil {
		return nil, err
	}
	n, err := supply.NodeOf(p.DB.R.WithContext(ctx), acc.Provider.ID, nodeID)
	if err != nil {
		return nil, err
	}
	d := &NodeDetail{Node: *n}
	dc, err := supply.DatacenterByID(ctx, p.DB, n.DatacenterID)
	if err != nil {
		return nil, err
	}
	d.Datacenter = *dc
	if d.GPUs, err = supply.NodeGPUs(ctx, p.DB, n.ID); err != nil {
		return nil, err
	}
	if d.Incidents, err = supply.IncidentsOfNode(ctx, p.DB, n.ID, 50); err != nil {
		return nil, err
	}
	if d.Reports, err = supply.BenchmarkReportsOfNode(ctx, p.DB, n.ID, 20); err != nil {
		return nil, err
	}
	if d.Rentals, err = supply.RentalsOfNode(ctx, p.DB, n.ID, 100); err != nil {
		return nil, err
	}
	if d.Offers, err = supply.OffersOfNode(ctx, p.DB, n.ID); err != nil {
		return nil, err
	}
	if err := withImages(p.DB.R.WithContext(ctx), ptrsOf(d.Offers)...); err != nil {
		return nil, err
	}
	return d, nil
}
