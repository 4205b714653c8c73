package gpu

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"suanli/gpu/nvmlcode"
	"suanli/locales"
)

// The names of the health checks, in the order a Verdict lists them.
const (
	CheckPresent        = "present"
	CheckXID            = "xid"
	CheckECCUncorrected = "ecc_uncorrected"
	CheckRowRemap       = "row_remap"
	CheckRetiredPages   = "retired_pages"
	CheckTemperature    = "temperature"
	CheckClockEvents    = "clock_events"
	CheckPCIeLink       = "pcie_link"
	// CheckPCIeReplay judges the PCIe replay counter's rise (see
	// pcieReplayLimit).
	CheckPCIeReplay = "pcie_replay"
	// CheckNVLink fails a GPU whose NVLinks that should be up are down.
	CheckNVLink = "nvlink"
	// CheckNVLinkErrors judges the NVLink replay, recovery and CRC error
	// counters' rise, as DCGM's NVLink health watch does.
	CheckNVLinkErrors = "nvlink_errors"
	// CheckMIG fails a GPU in MIG mode: it is rented whole, and MIG
	// hides faults and the GPU's own UUID from CUDA.
	CheckMIG = "mig"
	// CheckRecovery is NVIDIA's own verdict: the driver's GPU recovery
	// action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), where it has one.
	CheckRecovery = "recovery_action"
)

// CheckNames lists every check a GPU that NVML answers for gets, in the
// order a Verdict lists them. A GPU reported missing has only "present"
// and "xid".
func CheckNames() []string {
	return []string{CheckPresent, CheckXID, CheckECCUncorrected, CheckRowRemap, CheckRetiredPages, CheckTemperature,
		CheckClockEvents, CheckPCIeLink, CheckPCIeReplay, CheckNVLink, CheckNVLinkErrors, CheckMIG, CheckRecovery}
}

// pcieBusyPct is the utilisation from which a PCIe link running below its
// maximum generation fails the GPU. An idle GPU lowers its link generation
// to save power (an H100 at rest reports Gen 1 of Gen 5), so a lower
// generation at rest is normal; a busy GPU that stays below its maximum has
// a bad link. Light background use (a monitoring context, a process that
// sleeps) reads as a few percent without leaving the low-power state, so
// the rule waits for real work. A link narrower than its maximum width is
// never a power-saving state and fails whatever the load.
const pcieBusyPct = 10

// hwSlowdown are the clock-event reasons that mean the hardware itself is
// holding the clocks down: an external slowdown signal, overheating, or
// the power brake. The software reasons (power cap, idle, app clocks) are
// normal operation.
const hwSlowdown = nvml.ClocksThrottleReasonHwSlowdown |
	nvml.ClocksThrottleReasonHwThermalSlowdown |
	nvml.ClocksThrottleReasonHwPowerBrakeSlowdown

// sample is what one read of a GPU returned that the checks judge.
type sample struct {
	info Info

	temp, slowdown       uint32
	tempRet, slowdownRet nvml.Return

	reasons    uint64
	reasonsRet nvml.Return
	// slow is how long the hardware slowdown reasons have held (see
	// slowdownWindow).
	slow slowRun

	eccUncorrected uint64
	eccRet         nvml.Return

	remapCorrectable, remapUncorrectable int
	remapPending, remapFailed            bool
	remapRet                             nvml.Return

	retiredPending nvml.EnableState
	retiredRet     nvml.Return

	migCurrent, migPending int
	migRet                 nvml.Return

	// The checks judged from the Reader's history of this GPU.
	xid, pcieReplay, nvlink, nvlinkErrors, recovery Check
}

// verdict runs every check on a GPU that NVML answered for.
func verdict(s sample, at time.Time) Verdict {
	present := Check{Name: CheckPresent, OK: true}
	present.say(locales.M("check.present.ok"))
	if s.info.PCIBusID != "" {
		present.say(locales.M("check.present.at", s.info.PCIBusID))
	}
	return verdictOf([]Check{
		present,
		s.xid,
		eccCheck(s),
		rowRemapCheck(s),
		retiredPagesCheck(s),
		temperatureCheck(s),
		clockEventsCheck(s),
		pcieCheck(s.info),
		s.pcieReplay,
		s.nvlink,
		s.nvlinkErrors,
		migCheck(s),
		s.recovery,
	}, at)
}

// verdictOf makes a Verdict of checks: healthy when all passed, with one
// reason per check that failed.
func verdictOf(checks []Check, at time.Time) Verdict {
	v := Verdict{Healthy: true, Checks: checks, At: at}
	for _, c := range checks {
		if !c.OK {
			v.Healthy = false
			v.Reasons = append(v.Reasons, c.Detail)
		}
	}
	return v
}

// failed is a verdict made of a single failing check.
func failed(c Check, at time.Time) Verdict {
	c.OK = false
	return verdictOf([]Check{c}, at)
}

// unread is the detail of a check whose reading NVML did not give (see
// readFailed for whether it fails the GPU): not supported passes silently
// on parts without the feature.
func unread(what string, ret nvml.Return) locales.Msg {
	switch {
	case unsupported(ret):
		return locales.M("check.unsupported", locales.M(what))
	case hardError(ret):
		return locales.M("check.read_failed", locales.M(what), ret.Error())
	}
	return locales.M("check.unreadable", locales.M(what), ret.Error())
}

// unsupported and hardError classify NVML's errors (see nvmlcode).
var unsupported, hardError = nvmlcode.Unsupported, nvmlcode.Hard

// readFailed sets a check whose reading NVML did not give: it fails on
// a hard error (hardError), passes otherwise, and says which.
func (c *Check) readFailed(what string, ret nvml.Return) {
	c.OK = !hardError(ret)
	c.say(unread(what, ret))
}

func eccCheck(s sample) Check {
	c := Check{Name: CheckECCUncorrected, OK: true}
	switch {
	case s.eccRet != nvml.SUCCESS:
		c.readFailed("check.what.ecc", s.eccRet)
	case s.eccUncorrected > 0:
		c.OK = false
		c.say(locales.M("check.ecc.errors", s.eccUncorrected))
	default:
		c.say(locales.M("check.ecc.ok"))
	}
	return c
}

func rowRemapCheck(s sample) Check {
	c := Check{Name: CheckRowRemap, OK: true}
	switch {
	case s.remapRet != nvml.SUCCESS:
		c.readFailed("check.what.row_remap", s.remapRet)
	case s.remapFailed:
		c.OK = false
		c.say(locales.M("check.row_remap.failed", s.remapUncorrectable))
	case s.remapPending:
		c.OK = false
		c.say(locales.M("check.row_remap.pending", s.remapUncorrectable))
	default:
		c.say(locales.M("check.row_remap.ok", s.remapCorrectable, s.remapUncorrectable))
	}
	return c
}

func retiredPagesCheck(s sample) Check {
	c := Check{Name: CheckRetiredPages, OK: true}
	switch {
	case s.retiredRet != nvml.SUCCESS:
		c.readFailed("check.what.retired_pages", s.retiredRet)
	case s.retiredPending == nvml.FEATURE_ENABLED:
		c.OK = false
		c.say(locales.M("check.retired_pages.pending"))
	default:
		c.say(locales.M("check.retired_pages.ok"))
	}
	return c
}

// temperatureCheck fails at or above the slowdown threshold: that is
// where the GPU starts slowing itself down.
func temperatureCheck(s sample) Check {
	c := Check{Name: CheckTemperature, OK: true}
	switch {
	case s.tempRet != nvml.SUCCESS:
		c.readFailed("check.what.temperature", s.tempRet)
	case s.slowdownRet != nvml.SUCCESS:
		c.OK = !hardError(s.slowdownRet)
		c.say(locales.M("check.temperature.no_threshold", s.temp, unread("check.what.slowdown", s.slowdownRet)))
	case s.temp >= s.slowdown:
		c.OK = false
		c.say(locales.M("check.temperature.hot", s.temp, s.slowdown))
	default:
		c.say(locales.M("check.temperature.ok", s.temp, s.slowdown))
	}
	return c
}

// clockReasonNames names the clock-event reasons, for details (message
// keys check.clock.…).
var clockReasonNames = []struct {
	bit  uint64
	name string
}{
	{nvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal"},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake"},
	{nvml.ClocksEventReasonGpuIdle, "idle"},
	{nvml.ClocksEventReasonApplicationsClocksSetting, "app_clocks"},
	{nvml.ClocksEventReasonSwPowerCap, "sw_power_cap"},
	{nvml.ClocksEventReasonSyncBoost, "sync_boost"},
	{nvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal"},
	{nvml.ClocksEventReasonDisplayClockSetting, "display_clock"},
}

// reasonNames lists the reasons set in bits, as messages.
func reasonNames(bits uint64) []locales.Msg {
	var names []locales.Msg
	for _, r := range clockReasonNames {
		if bits&r.bit != 0 {
			names = append(names, locales.M("check.clock."+r.name))
		}
	}
	return names
}

// clockEventsCheck fails a GPU whose hardware holds its clocks down
// with sustained evidence (see slowdownWindow): nvml.h says the HW
// slowdown reason "may be also reported during PState or clock change",
// so one read proves nothing. HW thermal slowdown with the temperature at
// or above the slowdown threshold is judged at once: the thermometer
// confirms what the reason says.
func clockEventsCheck(s sample) Check {
	c := Check{Name: CheckClockEvents, OK: true}
	hw := s.reasons & hwSlowdown
	switch {
	case s.reasonsRet != nvml.SUCCESS:
		c.readFailed("check.what.clock_events", s.reasonsRet)
	case s.thermalContext():
		c.OK = false
		c.say(locales.M("check.clock_events.slowdown", reasonNames(hw)))
	case hw != 0 && s.slow.sustained():
		c.OK = false
		c.say(locales.M("check.clock_events.sustained", reasonNames(hw), s.slow.Reads, s.slow.Span().Round(time.Second).String()))
	case hw != 0 && s.slow.verified:
		// Verify read it again and again and it did not clear.
		c.OK = false
		c.say(locales.M("check.clock_events.persists", reasonNames(hw), s.slow.Reads))
	case hw != 0:
		c.say(locales.M("check.clock_events.transient", reasonNames(hw), s.slow.Reads, slowdownWindow.String()))
	case s.slow.cleared:
		c.say(locales.M("check.clock_events.cleared"))
	case s.reasons == 0:
		c.say(locales.M("check.clock_events.none"))
	default:
		c.say(locales.M("check.clock_events.ok", reasonNames(s.reasons)))
	}
	return c
}

// thermalContext reports whether the GPU's HW thermal slowdown is
// confirmed by its temperature, at or above the slowdown threshold.
func (s sample) thermalContext() bool {
	return s.reasons&nvml.ClocksThrottleReasonHwThermalSlowdown != 0 && s.tempRet == nvml.SUCCESS &&
		s.slowdownRet == nvml.SUCCESS && s.slowdown > 0 && s.temp >= s.slowdown
}

// migCheck fails a GPU in MIG mode: Suanli rents whole GPUs, and under
// MIG the row-remap and utilisation readings are not supported, memory
// needs privileges, and CUDA sees no device by the parent's UUID. A
// pending change is named; it takes effect at the next GPU reset.
func migCheck(s sample) Check {
	c := Check{Name: CheckMIG, OK: true}
	switch {
	case s.migRet != nvml.SUCCESS:
		c.readFailed("check.what.mig", s.migRet)
	case s.migCurrent == nvml.DEVICE_MIG_ENABLE:
		c.OK = false
		c.say(locales.M("check.mig.enabled"))
	case s.migPending == nvml.DEVICE_MIG_ENABLE:
		c.say(locales.M("check.mig.pending"))
	default:
		c.say(locales.M("check.mig.off"))
	}
	return c
}

// pcieCheck fails a link narrower than its maximum, or slower than its
// maximum generation while the GPU is busy (see pcieBusyPct).
func pcieCheck(i Info) Check {
	c := Check{Name: CheckPCIeLink, OK: true}
	link := locales.M("check.pcie.link", i.PCIeGen, i.PCIeWidth, i.PCIeGenMax, i.PCIeWidthMax)
	switch {
	case i.PCIeGenMax == 0 || i.PCIeWidthMax == 0 || i.PCIeGen == 0 || i.PCIeWidth == 0:
		c.say(locales.M("check.pcie.unreported"))
	case i.PCIeWidth < i.PCIeWidthMax:
		c.OK = false
		c.say(locales.M("check.pcie.narrow", link))
	case i.PCIeGen < i.PCIeGenMax && i.Telemetry.UtilizationPct >= pcieBusyPct:
		c.OK = false
		c.say(locales.M("check.pcie.slow", link, i.Telemetry.UtilizationPct))
	case i.PCIeGen < i.PCIeGenMax:
		c.say(locales.M("check.pcie.idle", link))
	default:
		c.say(link)
	}
	return c
}

func sortInfos(infos []Info) {
	slices.SortFunc(infos, func(a, b Info) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), strings.Compare(a.UUID, b.UUID))
	})
}
