// Package gpu reads GPUs through NVML (github.com/NVIDIA/go-nvml): the
// inventory of a host, a health verdict per GPU with its reasons, and
// telemetry. It takes an nvml.Interface, so tests and simulated agents pass
// go-nvml's own mock servers (pkg/nvml/mock/dgx*).
package gpu

import (
	"strconv"
	"strings"
	"time"

	"suanli/locales"
)

// Host is what NVML says about one host. When NVML could not be
// initialised, InitError says why and GPUs is empty: no other NVML
// function was called (go-nvml kills the process if one is called after
// a failed Init).
type Host struct {
	// InitError says why NVML is not available: "no NVML (retrying): …"
	// while the Reader keeps trying nvml.Init with backoff.
	InitError         string `json:"init_error,omitempty"`
	DriverVersion     string `json:"driver_version,omitempty"`
	NVMLVersion       string `json:"nvml_version,omitempty"`
	CUDADriverVersion string `json:"cuda_driver_version,omitempty"` // e.g. "12.4"
	// Simulated is true when the host is a go-nvml mock server.
	Simulated bool   `json:"simulated"`
	Model     string `json:"sim_model,omitempty"` // the simulated system (dgxh100…), when simulated
	GPUs      []Info `json:"gpus"`
	// At is when the host was read.
	At time.Time `json:"at"`
}

// Info is one GPU: its inventory, telemetry and health verdict. A GPU is
// identified by its UUID; Index is where NVML enumerates it now, which
// shifts when a GPU before it stops enumerating.
type Info struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// Unreadable is set on a slot NVML enumerates but whose GPU never
	// told its UUID (GPU_IS_LOST or NO_PERMISSION since the agent
	// started): UUID is then UnreadableSlot(Index), never a GPU's, and the
	// verdict's "present" check fails.
	Unreadable        bool   `json:"unreadable,omitempty"`
	Name              string `json:"name"`
	PCIBusID          string `json:"pci_bus_id"`
	MemoryTotalMiB    uint64 `json:"memory_total_mib"`
	ComputeCapability string `json:"compute_capability"` // "9.0"
	MIGEnabled        bool   `json:"mig_enabled"`
	PCIeGen           int    `json:"pcie_gen"`
	PCIeGenMax        int    `json:"pcie_gen_max"`
	PCIeWidth         int    `json:"pcie_width"`
	PCIeWidthMax      int    `json:"pcie_width_max"`
	NVLinksUp         int    `json:"nvlinks_up"`

	Telemetry Telemetry `json:"telemetry"`
	Health    Verdict   `json:"health"`
}

// Telemetry is one sample of a GPU's sensors.
type Telemetry struct {
	TemperatureC      int     `json:"temperature_c"`
	SlowdownTempC     int     `json:"slowdown_temp_c,omitempty"`
	PowerW            float64 `json:"power_w"`
	PowerLimitW       float64 `json:"power_limit_w"`
	SMClockMHz        int     `json:"sm_clock_mhz"`
	MemClockMHz       int     `json:"mem_clock_mhz"`
	UtilizationPct    int     `json:"utilization_pct"`
	MemoryUsedMiB     uint64  `json:"memory_used_mib"`
	ClockEventReasons uint64  `json:"clock_event_reasons"`

	// PowerInstant says PowerW is NVML's instantaneous reading
	// (NVML_FI_DEV_POWER_INSTANT, taken by a benchmark's Sampler); false:
	// nvmlDeviceGetPowerUsage, a 1-s average on Ampere (except GA100) and
	// newer.
	PowerInstant bool `json:"power_instant,omitempty"`
}

// Check is one named health check and its outcome on one GPU.
type Check struct {
	Name   string `json:"name"`   // one of CheckNames()
	OK     bool   `json:"ok"`     // false: this check fails the GPU
	Detail string `json:"detail"` // what was read, e.g. "0 uncorrected volatile ECC errors"
	// Msg is Detail as a message (a "check." key and its arguments), so
	// that pages show it in the reader's language. Agents before it was
	// added send Detail only.
	Msg locales.Msg `json:"msg,omitzero"`
}

// say sets what the check read: its message, and its English detail.
func (c *Check) say(m locales.Msg) {
	c.Msg = m
	c.Detail = m.Text(locales.EN)
}

// Text is the check's detail in lang: its message when it has one the
// catalogues know (an agent is the provider's word, so only check
// messages are taken), else its detail as sent.
func (c Check) Text(lang string) string {
	if c.Msg.Valid("check.", "xid.") {
		return c.Msg.Text(lang)
	}
	return c.Detail
}

// Verdict is the health of one GPU: Healthy when every check passed.
type Verdict struct {
	Healthy bool      `json:"healthy"`
	Reasons []string  `json:"reasons,omitempty"` // one line per failing check
	Checks  []Check   `json:"checks"`
	At      time.Time `json:"at"`
}

// unreadablePrefix starts the placeholder UUID of an unreadable slot.
// NVML UUIDs start with "GPU-" (or "MIG-"), so no GPU can have it.
const unreadablePrefix = "unreadable-slot-"

// UnreadableSlot is the placeholder UUID reported for slot index when the
// GPU there never answered with its UUID.
func UnreadableSlot(index int) string {
	return unreadablePrefix + strconv.Itoa(index)
}

// IsUnreadableSlot reports whether uuid is not a GPU's UUID but an
// unreadable slot's placeholder (or empty, as agents before placeholders
// sent it).
func IsUnreadableSlot(uuid string) bool {
	return uuid == "" || strings.HasPrefix(uuid, unreadablePrefix)
}
