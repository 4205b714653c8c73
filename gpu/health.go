package gpu

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

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
)

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

	eccUncorrected uint64
	eccRet         nvml.Return

	remapCorrectable, remapUncorrectable int
	remapPending, remapFailed            bool
	remapRet                             nvml.Return

	retiredPending nvml.EnableState
	retiredRet     nvml.Return

	xid Check
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

// unread is the detail of a check whose reading NVML did not give: not
// supported passes silently on parts without the feature; any other error
// passes too, saying so, because taking a GPU off the market for one
// failed read would do more harm than the rare fault it might hide. what
// names the reading ("check.what.…").
func unread(what string, ret nvml.Return) locales.Msg {
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return locales.M("check.unsupported", locales.M(what))
	}
	return locales.M("check.unreadable", locales.M(what), ret.Error())
}

func eccCheck(s sample) Check {
	c := Check{Name: CheckECCUncorrected, OK: true}
	switch {
	case s.eccRet != nvml.SUCCESS:
		c.say(unread("check.what.ecc", s.eccRet))
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
		c.say(unread("check.what.row_remap", s.remapRet))
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
		c.say(unread("check.what.retired_pages", s.retiredRet))
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
		c.say(unread("check.what.temperature", s.tempRet))
	case s.slowdownRet != nvml.SUCCESS:
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

func clockEventsCheck(s sample) Check {
	c := Check{Name: CheckClockEvents, OK: true}
	switch {
	case s.reasonsRet != nvml.SUCCESS:
		c.say(unread("check.what.clock_events", s.reasonsRet))
	case s.reasons&hwSlowdown != 0:
		c.OK = false
		c.say(locales.M("check.clock_events.slowdown", reasonNames(s.reasons&hwSlowdown)))
	case s.reasons == 0:
		c.say(locales.M("check.clock_events.none"))
	default:
		c.say(locales.M("check.clock_events.ok", reasonNames(s.reasons)))
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
