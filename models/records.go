package models

import (
	"slices"
	"time"

	"suanli/locales"
)

// GPUModelRecord is the catalogue row for a GPU model; the catalogue package
// is the source and SyncCatalog keeps the table equal to it.
type GPUModelRecord struct {
	Slug             string `gorm:"primaryKey"`
	Name             string
	Arch             string
	FormFactor       string
	VRAMGB           int     `gorm:"column:vram_gb"`
	MemBWGBps        int     `gorm:"column:mem_bw_gbps"`
	BF16TFLOPS       float64 `gorm:"column:bf16_tflops"`
	FP16TFLOPS       float64 `gorm:"column:fp16_tflops"`
	FP32TFLOPS       float64 `gorm:"column:fp32_tflops"`
	TDPW             int     `gorm:"column:tdp_w"`
	NVLinkGBps       float64 `gorm:"column:nvlink_gbps"`
	NVMLNameContains string  `gorm:"column:nvml_name_contains"`
	Confirmed        string
	Source           string
}

// TableName implements gorm's tabler.
func (GPUModelRecord) TableName() string { return "gpu_models" }

// Provider is a company or lab that lists GPU capacity.
type Provider struct {
	ID        int64
	Slug      string
	NameZH    string `gorm:"column:name_zh"`
	NameEN    string `gorm:"column:name_en"`
	Demo      bool
	Synthetic bool
	// Simulated is the platform's decision that the provider's nodes run
	// simulated agents (the demo's, and test providers made with `suanli
	// admin create-user … --simulated`): its nodes are simulated whatever
	// their heartbeats say, and no other provider's node is accepted as
	// simulated (migration 00022).
	Simulated bool
	CreatedAt time.Time
	// OrgID is the provider organisation (its members, its verification
	// status); nil for demo and synthetic providers.
	OrgID *int64
	// The onboarding profile: contact, business licence and the bank
	// account bank-transfer payouts go to.
	ContactName     string
	ContactPhone    string
	ContactEmail    string
	LicenceNo       string
	BankName        string
	BankAccountName string
	BankAccountNo   string
	// Stripe Connect Express account, when the provider set one up.
	StripeAccountID      string
	StripeChargesEnabled bool
	StripePayoutsEnabled bool
}

// Name returns the provider's name in the language.
func (p Provider) Name(lang string) string {
	if lang == "en" && p.NameEN != "" {
		return p.NameEN
	}
	return p.NameZH
}

// Datacenter is a facility that hosts nodes.
type Datacenter struct {
	ID         int64
	Slug       string
	NameZH     string `gorm:"column:name_zh"`
	NameEN     string `gorm:"column:name_en"`
	City       string
	DistrictZH string `gorm:"column:district_zh"`
	DistrictEN string `gorm:"column:district_en"`
	Region     string
	Tier       string
	UplinkGbps int `gorm:"column:uplink_gbps"`
	Demo       bool
	CreatedAt  time.Time
	// ProviderID is the provider that created it; nil for the shared demo ones.
	ProviderID *int64
	// Storage says where its volumes live: StorageLocal or StorageShared.
	Storage Storage `gorm:"default:local"`
}

// Storage is a datacentre's kind of volume storage.
type Storage string

// Storage kinds.
const (
	// StorageLocal: a volume lives on one node's disk; a rental whose
	// node fails restarts elsewhere without its files.
	StorageLocal Storage = "local"
	// StorageShared: the provider mounts the same path on every node of
	// the datacentre (NFS, CephFS, JuiceFS) and starts agents with
	// --volume-root PATH; a volume follows its rental to any node there.
	StorageShared Storage = "shared"
)

// Storages lists the storage kinds, local first.
var Storages = []Storage{StorageLocal, StorageShared}

// Valid reports whether s is a known storage kind.
func (s Storage) Valid() bool { return slices.Contains(Storages, s) }

// Name returns the datacentre's name in the language.
func (d Datacenter) Name(lang string) string {
	if lang == "en" && d.NameEN != "" {
		return d.NameEN
	}
	return d.NameZH
}

// District returns the district or park in the language ("" if none).
func (d Datacenter) District(lang string) string {
	if lang == "en" {
		return d.DistrictEN
	}
	return d.DistrictZH
}

// DatacenterLatency is a round-trip time from a city to a datacentre.
type DatacenterLatency struct {
	DatacenterID int64
	FromCity     string
	RTTms        float64 `gorm:"column:rtt_ms"`
	// Source says where the figure comes from (e.g. "demo: published typical RTT").
	Source string
}

// Node is one GPU host running the node agent.
type Node struct {
	ID           int64
	ProviderID   int64
	DatacenterID int64
	Name         string
	// GPUModel is the catalogue model of its GPUs; "" (NULL) until the
	// agent's first inventory names one.
	GPUModel string `gorm:"column:gpu_model;default:null"`
	// Status is NodeActive, NodeDraining or NodeRemoved.
	Status    NodeStatus
	Demo      bool
	Synthetic bool
	CreatedAt time.Time
	RemovedAt *time.Time
	// RegTokenHash and CredHash are SHA-256 hashes (hex) of the one-time
	// registration token and of the node credential it was exchanged for.
	RegTokenHash *string `gorm:"column:reg_token_hash"`
	CredHash     *string `gorm:"column:cred_hash"`
	// Health is NodeUnknown until the first heartbeat, then NodeHealthy,
	// NodeSilent (no heartbeat for a while) or NodeNoNVML.
	Health          NodeHealth
	LastHeartbeatAt *time.Time
	// Simulated is its provider's Provider.Simulated, set by the server
	// at each heartbeat (never read from the agent's word).
	Simulated bool
	// AgentInfo is the agent's last self-description as JSON (version,
	// host name, driver, launcher).
	AgentInfo string
	// LatestReportID is the node's newest benchmark report.
	LatestReportID *int64
	// Uptime30dPct is the node's uptime over the last 30 days (heartbeats
	// and incidents), computed by the reliability job; nil before the first run.
	Uptime30dPct    *float64 `gorm:"column:uptime_30d_pct"`
	UptimeUpdatedAt *time.Time
	// PingURL is the public URL of the agent's latency endpoint, if any.
	PingURL string
	// VolumeRoot is the agent's --volume-root ("" when its volumes are
	// docker volumes on the node's disk).
	VolumeRoot string
	// CUDADriverVersion is the newest CUDA the node's driver supports, as
	// NVML last reported it ("12.4"); "" when it never reported one.
	CUDADriverVersion string `gorm:"column:cuda_driver_version"`
	// ImagesHash is the hash of the image list the agent last reported
	// (node_images), "" for none: an unchanged list is not written again.
	ImagesHash string
}

// NodeStatus is the provider's intent for a node (Health is what its
// agent says): active, draining (current rentals finish, no new ones) or
// removed, moved along nodeTransitions only.
type NodeStatus string

// Node statuses.
const (
	NodeActive   NodeStatus = "active"
	NodeDraining NodeStatus = "draining"
	NodeRemoved  NodeStatus = "removed"
)

// nodeTransitions lists, for each node status, the statuses it may move
// to; removed is final.
var nodeTransitions = map[NodeStatus][]NodeStatus{
	NodeActive:   {NodeDraining, NodeRemoved},
	NodeDraining: {NodeActive, NodeRemoved},
}

// CanMoveTo reports whether the table allows a move from s to next (a
// status "moving" to itself changes nothing and is always allowed).
func (s NodeStatus) CanMoveTo(next NodeStatus) bool {
	return s == next || slices.Contains(nodeTransitions[s], next)
}

// Rentable reports whether a node in this status takes new rentals.
func (s NodeStatus) Rentable() bool { return s == NodeActive }

// NodeHealth is what a node's agent last said (or did not say).
type NodeHealth string

// Node health values.
const (
	NodeUnknown NodeHealth = "unknown"
	NodeHealthy NodeHealth = "healthy"
	NodeSilent  NodeHealth = "silent"
	NodeNoNVML  NodeHealth = "no_nvml"
)

// GPUState is whether a GPU can be rented: free, busy (in a rental, or
// held by the provider) or unhealthy (failing its NVML checks while not
// rented), moved along gpuTransitions only.
type GPUState string

// GPU states.
const (
	GPUFree      GPUState = "free"
	GPUBusy      GPUState = "busy"
	GPUUnhealthy GPUState = "unhealthy"
)

// gpuTransitions lists, for each GPU state, the states it may move to: a
// rental takes a free GPU and gives it back free, or unhealthy when it
// failed meanwhile; a failing free GPU becomes unhealthy and a recovered
// one free again. An unhealthy GPU is never taken.
var gpuTransitions = map[GPUState][]GPUState{
	GPUFree:      {GPUBusy, GPUUnhealthy},
	GPUBusy:      {GPUFree, GPUUnhealthy},
	GPUUnhealthy: {GPUFree},
}

// CanMoveTo reports whether the table allows a move from s to next (a
// state "moving" to itself changes nothing and is always allowed).
func (s GPUState) CanMoveTo(next GPUState) bool {
	return s == next || slices.Contains(gpuTransitions[s], next)
}

// GPU is one physical GPU in a node.
type GPU struct {
	ID       int64
	NodeID   int64
	Idx      int
	UUID     string `gorm:"column:uuid"`
	GPUModel string `gorm:"column:gpu_model"`
	// State is GPUFree, GPUBusy (in a rental, or held by the provider) or
	// GPUUnhealthy; rentals and the agent's verdicts keep it current.
	State GPUState
	// What NVML reported for it last.
	Name      string
	PCIBusID  string `gorm:"column:pci_bus_id"`
	MemoryMiB int64  `gorm:"column:memory_mib"`
	// Health is GPUHealthUnknown, GPUHealthy, GPUFailing or GPUMissing.
	Health  GPUHealth
	Reasons string // failing checks, one per line
	// ReasonsMsg is Reasons as a message (a list of the failing checks'),
	// for the reader's language; zero when none was stored.
	ReasonsMsg locales.Msg `gorm:"column:reasons_msg"`
	Telemetry  string      // JSON gpu.Telemetry
	CheckedAt  *time.Time
}

// GPUHealth is the agent's last NVML verdict on a GPU.
type GPUHealth string

// GPU health values.
const (
	GPUHealthUnknown GPUHealth = "unknown"
	GPUHealthy       GPUHealth = "healthy"
	GPUFailing       GPUHealth = "failing"
	GPUMissing       GPUHealth = "missing"
)

// Offer statuses.
const (
	OfferListed = "listed"
	OfferPaused = "paused"
)

// The prices an offer has unless its provider sets others (the columns'
// defaults): ¥0.30 per GB-month of volume, ¥0.10 per hour without GPUs.
const (
	DefaultStoragePricePerGBMonthFen = 30
	DefaultNoGPUPricePerHourFen      = 10
)

// Offer is a provider's price for renting GPUs of one node.
type Offer struct {
	ID           int64
	ProviderID   int64
	NodeID       int64
	DatacenterID int64
	GPUModel     string `gorm:"column:gpu_model"`
	// MaxGPUs is the most GPUs one rental may take, all on the offer's node.
	MaxGPUs               int `gorm:"column:max_gpus"`
	VCPUPerGPU            int `gorm:"column:vcpu_per_gpu"`
	RAMGBPerGPU           int `gorm:"column:ram_gb_per_gpu"`
	DiskGB                int `gorm:"column:disk_gb"`
	Interconnect          string
	PricePerGPUHourFen    int64  `gorm:"column:price_per_gpu_hour_fen"`
	WeeklyPricePerGPUFen  *int64 `gorm:"column:weekly_price_per_gpu_fen"`
	MonthlyPricePerGPUFen *int64 `gorm:"column:monthly_price_per_gpu_fen"`
	OffpeakDiscountPct    int    `gorm:"column:offpeak_discount_pct"`
	StudentDiscountPct    int    `gorm:"column:student_discount_pct"`
	AvailableGPUs         int    `gorm:"column:available_gpus"`
	Status                string
	Demo                  bool
	Synthetic             bool
	CreatedAt, UpdatedAt  time.Time
	// MinDurationS is the least a rental is billed for, in seconds (≥ 60).
	MinDurationS int `gorm:"column:min_duration_s;default:60"`
	// SLATiers lists the SLA tiers sold, comma-separated pricing.Tiers names.
	SLATiers string `gorm:"column:sla_tiers;default:standard,premium"`
	// AwaitingNode is true while a listed offer's node has not shown
	// healthy GPUs of its model; ListingNote says what is missing.
	AwaitingNode bool
	ListingNote  string
	// CustomImages allows renters to run their own image (a registry
	// reference) besides the catalogue images the offer offers.
	CustomImages bool
	// StoragePricePerGBMonthFen is the price of a GB of volume for a
	// month (30 days), billed per second; NoGPUPricePerHourFen the hourly
	// price of the rental's container without GPUs (无卡模式).
	StoragePricePerGBMonthFen int64 `gorm:"column:storage_price_per_gb_month_fen;default:30"`
	NoGPUPricePerHourFen      int64 `gorm:"column:no_gpu_price_per_hour_fen;default:10"`
	// InterruptibleFloorPerGPUHourFen opts the offer into interruptible
	// rentals (竞价实例): the lowest bid per GPU-hour it accepts, in the
	// units of PricePerGPUHourFen (the off-peak discount applies to bids as
	// to that price). nil: not interruptible.
	InterruptibleFloorPerGPUHourFen *int64 `gorm:"column:interruptible_floor_per_gpu_hour_fen"`
	// Images are the slugs of the catalogue images the offer offers
	// (offer_images; none: every catalogue image). Only the stores that
	// say so fill it in; it is not a column.
	Images []string `gorm:"-"`
}
