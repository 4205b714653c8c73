// Package rentaljson is a rental as the JSON API shows it: the shapes of
// GET /api/v1/rentals/{id} and its relatives, mapped from the rentals use
// case's details (the OpenAPI document, openapi/openapi.json, is their
// contract).
package rentaljson

import (
	"context"
	"strconv"
	"time"

	"suanli/agent"
	"suanli/gpu"
	"suanli/idlestop"
	"suanli/images"
	"suanli/launch"
	"suanli/models"
	"suanli/models/launchstore"
	"suanli/rentals"
	"suanli/volumes"
)

// Rental is a rental in the JSON API.
type Rental struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
	// State is the status as a launcher's state machine follows it
	// (launch.StateOf: host_offline while its node is silent, released),
	// StatusMessage one sentence saying why it is there.
	State         string `json:"state"`
	StatusMessage string `json:"status_message"`
	// Name and Labels are what its launcher gave it ("" and {} when
	// none). EnvSet and OnstartSet say whether it holds an environment and
	// an on-start script: what they hold is never shown.
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels"`
	EnvSet     bool              `json:"env_set"`
	OnstartSet bool              `json:"onstart_set"`
	// SSH is where to reach it while it runs and its node answers (the
	// same as access.ssh); null otherwise.
	SSH                *SSH     `json:"ssh"`
	OrgID              int64    `json:"org_id"`
	OfferID            int64    `json:"offer_id"`
	GPUModel           string   `json:"gpu_model"`
	GPUs               int      `json:"gpus"`
	GPUUUIDs           []string `json:"gpu_uuids"`
	Node               *Node    `json:"node"`
	SLA                string   `json:"sla"`
	Term               string   `json:"term"`
	AutoRenew          bool     `json:"auto_renew"`
	PricePerGPUHourFen int64    `json:"price_per_gpu_hour_fen"`
	StudentDiscountPct int      `json:"student_discount_pct"`
	OffpeakDiscountPct int      `json:"offpeak_discount_pct"`
	SLASurchargePct    int      `json:"sla_surcharge_pct"`
	TermPriceFen       *int64   `json:"term_price_fen"`
	Access             *Access  `json:"access"`
	Image              string   `json:"image"`
	// RegistryAuth: the custom image's registry username, never the password.
	RegistryAuth *images.RegistryAuthShown `json:"registry_auth"`
	Volume       *Volume                   `json:"volume"`
	// NoGPU: it runs (or last ran) in no-GPU mode, billed
	// NoGPUPricePerHourFen an hour instead of its GPU price.
	NoGPU                bool  `json:"no_gpu"`
	NoGPUPricePerHourFen int64 `json:"no_gpu_price_per_hour_fen"`
	// FilesLeft is the local volume it left on another node when it moved
	// without its files (nil when none).
	FilesLeft *FilesLeft `json:"files_left"`
	// Ports are the container ports declared for the browser.
	Ports []int `json:"ports"`
	// Startable: a stopped rental that POST …/start would start again.
	Startable  bool       `json:"startable"`
	ReleasedAt *time.Time `json:"released_at"`
	Checks     *Checks    `json:"checks"`
	// CostFen is the cost so far (posted plus accrued since the last meter pass).
	CostFen        int64  `json:"cost_so_far_fen"`
	BilledFen      int64  `json:"billed_fen"`
	RateFenPerHour int64  `json:"rate_fen_per_hour"`
	Free           bool   `json:"free"`
	DowntimeSecs   int64  `json:"downtime_seconds"`
	Failure        string `json:"failure,omitempty"`
	StopReason     string `json:"stop_reason,omitempty"`
	Simulated      bool   `json:"simulated"`
	// IdleStop is the rental's own idle-stop setting, IdleStopLabPolicy
	// its lab's policy, IdleStopEffective what the watch applies (the
	// stricter of the two); nil when off or none.
	IdleStop          *IdleStop  `json:"idle_stop"`
	IdleStopLabPolicy *IdleStop  `json:"idle_stop_lab_policy"`
	IdleStopEffective *IdleStop  `json:"idle_stop_effective"`
	Events            []Event    `json:"events"`
	CreatedAt         time.Time  `json:"created_at"`
	RunningSince      *time.Time `json:"running_since"`
	EndsAt            *time.Time `json:"ends_at"`
	StoppedAt         *time.Time `json:"stopped_at"`
	Currency          string     `json:"currency"`
	// BidPerGPUHourFen is an interruptible rental's bid (term
	// "interruptible"; nil otherwise), Interruption its last interruption
	// (nil if never).
	BidPerGPUHourFen *int64        `json:"bid_per_gpu_hour_fen"`
	Interruption     *Interruption `json:"interruption"`
}

// Access is how the renter reaches a rental's container: the flat
// fields as before, and the same SSH details under ssh.
type Access struct {
	agent.Access
	SSH SSH `json:"ssh"`
	// Browser is set while a real container runs: the marketplace's
	// pages that reach it.
	Browser *Browser `json:"browser,omitempty"`
}

// Browser lists the paths of a rental's browser access.
type Browser struct {
	Jupyter  string `json:"jupyter,omitempty"`
	Terminal string `json:"terminal"`
	Files    string `json:"files"`
	Logs     string `json:"logs"`
	Ports    []Port `json:"ports"`
}

// Port is a declared port and its path.
type Port struct {
	Port int    `json:"port"`
	URL  string `json:"url"`
}

// browser is a running container's browser access.
func browser(r *models.Rental, a *agent.Access) *Browser {
	base := "/rentals/" + strconv.FormatInt(r.ID, 10)
	b := &Browser{Terminal: base + "/terminal", Files: base + "/files", Logs: base + "/logs", Ports: []Port{}}
	if a.Jupyter != nil {
		b.Jupyter = base + "/jupyter/"
	}
	for _, p := range r.DeclaredPorts() {
		b.Ports = append(b.Ports, Port{Port: p, URL: base + "/ports/" + strconv.Itoa(p) + "/"})
	}
	return b
}

// SSH is a rental's SSH endpoint.
type SSH struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	User    string `json:"user"`
	Command string `json:"command"`
}

// Volume is a volume in the JSON API.
type Volume struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	SizeGB  int    `json:"size_gb"`
	Storage string `json:"storage"`
	// NodeID is the node that holds its files (local storage), or the
	// node it was last mounted on (shared).
	NodeID             *int64     `json:"node_id"`
	DatacenterID       int64      `json:"datacenter_id"`
	OfferID            int64      `json:"offer_id"`
	Status             string     `json:"status"`
	PricePerGBMonthFen int64      `json:"price_per_gb_month_fen"`
	FenPerDay          int64      `json:"fen_per_day"`
	BilledFen          int64      `json:"billed_fen"`
	RentalID           *int64     `json:"rental_id"`
	DeleteAfter        *time.Time `json:"delete_after"`
	CreatedAt          time.Time  `json:"created_at"`
}

// VolumeOf maps a volume (attached to rentalID, 0 for none) to the
// API; nil for none.
func VolumeOf(v *models.Volume, rentalID int64) *Volume {
	if v == nil {
		return nil
	}
	out := &Volume{ID: v.ID, Name: v.Name, SizeGB: v.SizeGB, Storage: string(v.Storage), NodeID: v.NodeID, DatacenterID: v.DatacenterID,
		OfferID: v.OfferID, Status: string(v.Status), PricePerGBMonthFen: v.PricePerGBMonthFen, FenPerDay: volumes.FenPerDay(v),
		BilledFen: v.BilledFen, DeleteAfter: v.DeleteAfter, CreatedAt: v.CreatedAt}
	if rentalID != 0 {
		out.RentalID = &rentalID
	}
	return out
}

// FilesLeft is where a rental's earlier files are (local storage):
// POST …/start with volume_id starts it there once NodeBack.
type FilesLeft struct {
	VolumeID int64  `json:"volume_id"`
	NodeID   *int64 `json:"node_id"`
	NodeBack bool   `json:"node_back"`
}

// Node is the node a rental runs on.
type Node struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Health    string `json:"health"`
	Simulated bool   `json:"simulated"`
}

// Checks are the NVML checks that passed before the GPUs were handed over.
type Checks struct {
	NodeID int64                  `json:"node_id"`
	At     time.Time              `json:"at"`
	Passed int                    `json:"passed"`
	Total  int                    `json:"total"`
	GPUs   map[string]gpu.Verdict `json:"gpus"`
}

// Event is one line of a rental's timeline.
type Event struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Detail string    `json:"detail,omitempty"`
}

func Of(d *rentals.RentalDetail) Rental {
	r := d.Rental
	out := Rental{ID: r.ID, Status: d.PublicStatus(), Image: r.Image, RegistryAuth: d.RegistryAuth(), Startable: d.Startable(), NoGPU: r.NoGPU, NoGPUPricePerHourFen: r.NoGPUPricePerHourFen, ReleasedAt: r.ReleasedAt, OrgID: r.OrgID, OfferID: r.OfferID, GPUModel: d.Offer.Offer.GPUModel, GPUs: r.GPUs,
		GPUUUIDs: []string{}, SLA: r.SLA, Term: r.TermName(), BidPerGPUHourFen: r.BidPerGPUHourFen, Interruption: InterruptionOf(&r), AutoRenew: r.AutoRenew, PricePerGPUHourFen: r.PricePerGPUHourFen,
		StudentDiscountPct: r.StudentPct, OffpeakDiscountPct: r.OffpeakPct, SLASurchargePct: r.SLASurchargePct, TermPriceFen: r.TermPriceFen,
		CostFen: d.CostFen, BilledFen: r.BilledFen, RateFenPerHour: d.RateFenPerHour, Free: r.Free,
		DowntimeSecs: r.DowntimeSecs, Failure: r.Failure, StopReason: r.StopReason, Simulated: d.Simulated(), Events: []Event{},
		CreatedAt: r.CreatedAt, RunningSince: r.RunningSince, EndsAt: r.EndsAt, StoppedAt: r.StoppedAt, Currency: "cny", Ports: r.DeclaredPorts()}
	if out.Ports == nil {
		out.Ports = []int{}
	}
	for _, g := range d.GPUs {
		out.GPUUUIDs = append(out.GPUUUIDs, g.UUID)
	}
	if a := d.Access; a != nil && r.Status == models.RentalRunning {
		out.Access = &Access{Access: *a, SSH: SSH{Host: a.Host, Port: a.Port, User: a.User, Command: a.Command}}
		if a.Container {
			out.Access.Browser = browser(&r, a)
		}
	}
	out.State, out.StatusMessage, out.Labels = string(launch.StateOf(d)), launch.StatusMessage(d), map[string]string{}
	if out.Access != nil && out.State == string(launch.StateRunning) {
		out.SSH = &out.Access.SSH
	}
	if lv := d.LeftVolume; lv != nil {
		out.FilesLeft = &FilesLeft{VolumeID: lv.ID, NodeID: lv.NodeID, NodeBack: d.LeftNodeUp}
	}
	if d.Volume != nil {
		out.Volume = VolumeOf(d.Volume, r.ID)
	}
	if d.Node != nil {
		out.Node = &Node{ID: d.Node.ID, Name: d.Node.Name, Health: string(d.Node.Health), Simulated: d.Node.Simulated}
	}
	if d.Checks != nil {
		p, t := d.Checks.Passed()
		out.Checks = &Checks{NodeID: d.Checks.NodeID, At: d.Checks.At, Passed: p, Total: t, GPUs: d.Checks.Verdicts}
	}
	for _, e := range d.Events {
		out.Events = append(out.Events, Event{At: e.At, Kind: e.Kind, Detail: e.Detail})
	}
	return out
}

// ChangeQuote is the preview of a switch or resize.
type ChangeQuote struct {
	FromOfferID    int64  `json:"from_offer_id"`
	ToOfferID      int64  `json:"to_offer_id"`
	FromGPUModel   string `json:"from_gpu_model"`
	ToGPUModel     string `json:"to_gpu_model"`
	FromGPUs       int    `json:"from_gpus"`
	ToGPUs         int    `json:"to_gpus"`
	FromFenPerHour int64  `json:"from_fen_per_hour"`
	ToFenPerHour   int64  `json:"to_fen_per_hour"`
	SameNode       bool   `json:"same_node"`
	Currency       string `json:"currency"`
}

// IdleStop is an idle-stop setting in the API: stop the rental when
// every GPU's utilisation stays below GPUUtilBelowPct % for Minutes
// minutes (a lab's policy: for at most Minutes).
type IdleStop struct {
	GPUUtilBelowPct int `json:"gpu_util_below_pct"`
	Minutes         int `json:"minutes"`
}

// IdleStopOf is a setting in the API (nil when off).
func IdleStopOf(s models.IdleStop) *IdleStop {
	if !s.On() {
		return nil
	}
	return &IdleStop{GPUUtilBelowPct: s.BelowPct, Minutes: s.Minutes}
}

// WithIdle adds a rental's idle stop to its API form: its own
// setting, its lab's policy and the one the watch applies.
func WithIdle(out Rental, d *rentals.RentalDetail, org *models.Org) Rental {
	if !idlestop.Applies(d.Rental.Term) {
		return out // a week or a month: none applies (null)
	}
	p := idlestop.Policy(org)
	out.IdleStop, out.IdleStopLabPolicy = IdleStopOf(d.Rental.IdleStop), IdleStopOf(p)
	out.IdleStopEffective = IdleStopOf(idlestop.Effective(d.Rental.IdleStop, p))
	return out
}

// WithSpec adds the rentals' launch specs (name, labels, whether they
// hold an environment and a script) to their API form.
func WithSpec(ctx context.Context, db *models.DB, out ...Rental) ([]Rental, error) {
	ids := make([]int64, len(out))
	for i := range out {
		ids[i] = out[i].ID
	}
	specs, err := launchstore.ShownOf(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		s, ok := specs[out[i].ID]
		if !ok {
			continue
		}
		out[i].Name, out[i].EnvSet, out[i].OnstartSet = s.Name, s.EnvSet, s.OnstartSet
		if s.Labels != nil {
			out[i].Labels = s.Labels
		}
	}
	return out, nil
}

// WithSpecOne is WithSpec for one rental.
func WithSpecOne(ctx context.Context, db *models.DB, out Rental) (Rental, error) {
	rs, err := WithSpec(ctx, db, out)
	if err != nil {
		return Rental{}, err
	}
	return rs[0], nil
}
