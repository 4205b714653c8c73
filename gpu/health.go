package gpu

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
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
	present := Check{Name: CheckPresent, OK: true, Detail: "present"}
	if s.info.PCIBusID != "" {
		present.Detail = "present at " + s.info.PCIBusID
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
// failed read would do more harm than the rare fault it might hide.
func unread(what string, ret nvml.Return) string {
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return what + " not supported on this GPU"
	}
	return what + " could not be read: " + ret.Error()
}

func eccCheck(s sample) Check {
	c := Check{Name: CheckECCUncorrected, OK: true}
	switch {
	case s.eccRet != nvml.SUCCESS:
		c.Detail = unread("ECC (or ECC is off)", s.eccRet)
	case s.eccUncorrected > 0:
		c.OK = false
		c.Detail = fmt.Sprintf("%d uncorrected volatile ECC error(s) since the last reset", s.eccUncorrected)
	default:
		c.Detail = "0 uncorrected volatile ECC errors"
	}
	return c
}

func rowRemapCheck(s sample) Check {
	c := Check{Name: CheckRowRemap, OK: true}
	switch {
	case s.remapRet != nvml.SUCCESS:
		c.Detail = unread("row remapping", s.remapRet)
	case s.remapFailed:
		c.OK = false
		c.Detail = fmt.Sprintf("row remapping failed (%d uncorrectable rows remapped): the GPU needs replacing", s.remapUncorrectable)
	case s.remapPending:
		c.OK = false
		c.Detail = fmt.Sprintf("row remap pending (%d uncorrectable rows): the GPU needs a reset", s.remapUncorrectable)
	default:
		c.Detail = fmt.Sprintf("%d correctable, %d uncorrectable rows remapped; none pending", s.remapCorrectable, s.remapUncorrectable)
	}
	return c
}

func retiredPagesCheck(s sample) Check {
	c := Check{Name: CheckRetiredPages, OK: true}
	switch {
	case s.retiredRet != nvml.SUCCESS:
		c.Detail = unread("page retirement", s.retiredRet)
	case s.retiredPending == nvml.FEATURE_ENABLED:
		c.OK = false
		c.Detail = "retired pages pending: the GPU needs a reset"
	default:
		c.Detail = "no retired pages pending"
	}
	return c
}

// temperatureCheck fails at or above the slowdown threshold: that is
// where the GPU starts slowing itself down.
func temperatureCheck(s sample) Check {
	c := Check{Name: CheckTemperature, OK: true}
	switch {
	case s.tempRet != nvml.SUCCESS:
		c.Detail = unread("temperature", s.tempRet)
	case s.slowdownRet != nvml.SUCCESS:
		c.Detail = fmt.Sprintf("%d °C (%s)", s.temp, unread("slowdown threshold", s.slowdownRet))
	case s.temp >= s.slowdown:
		c.OK = false
		c.Detail = fmt.Sprintf("%d °C, at or above the slowdown threshold of %d °C", s.temp, s.slowdown)
	default:
		c.Detail = fmt.Sprintf("%d °C, slowdown at %d °C", s.temp, s.slowdown)
	}
	return c
}

// clockReasonNames names the clock-event reasons, for details.
var clockReasonNames = []struct {
	bit  uint64
	name string
}{
	{nvml.ClocksThrottleReasonHwSlowdown, "HW slowdown"},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, "HW thermal slowdown"},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "HW power brake slowdown"},
	{nvml.ClocksEventReasonGpuIdle, "GPU idle"},
	{nvml.ClocksEventReasonApplicationsClocksSetting, "application clocks setting"},
	{nvml.ClocksEventReasonSwPowerCap, "SW power cap"},
	{nvml.ClocksEventReasonSyncBoost, "sync boost"},
	{nvml.ClocksEventReasonSwThermalSlowdown, "SW thermal slowdown"},
	{nvml.ClocksEventReasonDisplayClockSetting, "display clock setting"},
}

func reasonNames(bits uint64) string {
	var names []string
	for _, r := range clockReasonNames {
		if bits&r.bit != 0 {
			names = append(names, r.name)
		}
	}
	return strings.Join(names, ", ")
}

func clockEventsCheck(s sample) Check {
	c := Check{Name: CheckClockEvents, OK: true}
	switch {
	case s.reasonsRet != nvml.SUCCESS:
		c.Detail = unread("clock event reasons", s.reasonsRet)
	case s.reasons&hwSlowdown != 0:
		c.OK = false
		c.Detail = "hardware is slowing the clocks: " + reasonNames(s.reasons&hwSlowdown)
	case s.reasons == 0:
		c.Detail = "no clock events"
	default:
		c.Detail = "no hardware slowdown (" + reasonNames(s.reasons) + ")"
	}
	return c
}

// pcieCheck fails a link narrower than its maximum, or slower than its
// maximum generation while the GPU is busy (see pcieBusyPct).
func pcieCheck(i Info) Check {
	c := Check{Name: CheckPCIeLink, OK: true}
	link := fmt.Sprintf("PCIe Gen %d x%d (max Gen %d x%d)", i.PCIeGen, i.PCIeWidth, i.PCIeGenMax, i.PCIeWidthMax)
	switch {
	case i.PCIeGenMax == 0 || i.PCIeWidthMax == 0 || i.PCIeGen == 0 || i.PCIeWidth == 0:
		c.Detail = "PCIe link not reported"
	case i.PCIeWidth < i.PCIeWidthMax:
		c.OK = false
		c.Detail = link + ": link narrower than its maximum"
	case i.PCIeGen < i.PCIeGenMax && i.Telemetry.UtilizationPct >= pcieBusyPct:
		c.OK = false
		c.Detail = fmt.Sprintf("%s: link below its maximum generation at %d%% utilisation", link, i.Telemetry.UtilizationPct)
	case i.PCIeGen < i.PCIeGenMax:
		c.Detail = link + ": lower generation while idle (power saving)"
	default:
		c.Detail = link
	}
	return c
}

func sortInfos(infos []Info) {
	slices.SortFunc(infos, func(a, b Info) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), strings.Compare(a.UUID, b.UUID))
	})
}
