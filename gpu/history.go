package gpu

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"suanli/gpu/evidence"
	"suanli/locales"
)

// The rules that need more than one read, and their windows. They are
// documented for operators in docs/operations.md ("GPU health checks").
const (
	// slowdownWindow and slowdownReads: a hardware slowdown reason
	// (HW slowdown, HW thermal, HW power brake) fails a GPU only once it
	// was set in every read for at least slowdownWindow and at least
	// slowdownReads reads in a row (heartbeats read every 5 s, so about
	// 12). nvml.h says the HW slowdown bit "may be also reported during
	// PState or clock change": one read is no evidence, and a tenant is
	// not moved for it.
	slowdownWindow = 60 * time.Second
	slowdownReads  = 3
	// verifySamples and verifySampleGap: the pre-rental Verify, finding a
	// hardware slowdown reason set that has not yet lasted
	// slowdownWindow, reads the reasons verifySamples more times
	// verifySampleGap apart (about a second): if any read is clear it was
	// a transient and the GPU passes; if every read shows it, the GPU is
	// refused for this rental (the renter goes to another GPU, nobody is
	// moved).
	verifySamples   = 4
	verifySampleGap = 250 * time.Millisecond

	// counterWindow is the span over which error counters are judged: a
	// counter's rise is measured from the newest read at least this old
	// (or the oldest read, while the Reader is younger), as DCGM's
	// health watch looks back one minute.
	counterWindow = time.Minute
	// pcieReplayLimit: more PCIe replays than this within counterWindow
	// fail the GPU. DCGM's limit (DCGM_LIMIT_MAX_PCIREPLAY_RATE, "8
	// replays per minute is the maximum recommended by RM").
	pcieReplayLimit = 8
	// nvlinkCRCPerSecond: NVLink CRC (flit and data) errors fail the GPU
	// from this rate on; fewer are noted, not failed. DCGM's
	// DCGM_LIMIT_MAX_NVLINK_CRC_ERROR ("CRC errors only matter at rates
	// of 100+ per second"). NVLink replay and recovery errors fail from
	// the first one in the window, as DCGM fails them.
	nvlinkCRCPerSecond = 100
)

// history is what a Reader remembers of one GPU between reads, for the
// rules that need more than one.
type history struct {
	slow slowRun
	// linksUp are the NVLinks seen up on this GPU since the Reader
	// opened: they should stay up.
	linksUp map[int]bool
	pcie    evidence.Counter
	// nvlink are the NVLink error counters, by link*4 + counter.
	nvlink map[int]*evidence.Counter
}

// hist returns the history of a GPU, made on first use. The caller holds
// r.mu.
func (r *Reader) hist(uuid string) *history {
	h := r.history[uuid]
	if h == nil {
		h = &history{linksUp: map[int]bool{}, pcie: evidence.Counter{Window: counterWindow}, nvlink: map[int]*evidence.Counter{}}
		r.history[uuid] = h
	}
	return h
}

// slowRun is the run of reads that all showed a hardware slowdown
// reason, and what Verify's extra reads found.
type slowRun struct {
	evidence.Run
	// verified: Verify read the reasons verifySamples more times and
	// every read showed it. cleared: one of them did not.
	verified, cleared bool
}

// sustained reports whether the run is long enough to fail the GPU.
func (s slowRun) sustained() bool { return s.Held(slowdownWindow, slowdownReads) }

// note adds one read of the clock-event reasons to the run.
func (s *slowRun) note(reasons uint64, at time.Time) { s.Note(reasons&hwSlowdown != 0, at) }

// pcieReplayCheck judges the PCIe replay counter (see pcieReplayLimit).
func pcieReplayCheck(h *history, v int, ret nvml.Return, at time.Time) Check {
	c := Check{Name: CheckPCIeReplay, OK: true}
	if ret != nvml.SUCCESS {
		c.readFailed("check.what.pcie_replay", ret)
		return c
	}
	rise, span := h.pcie.Add(uint64(max(v, 0)), at)
	switch {
	case span == 0:
		c.say(locales.M("check.pcie_replay.baseline", v))
	case rise > pcieReplayLimit:
		c.OK = false
		c.say(locales.M("check.pcie_replay.rising", rise, span.Round(time.Second).String(), pcieReplayLimit))
	default:
		c.say(locales.M("check.pcie_replay.ok", rise, span.Round(time.Second).String()))
	}
	return c
}

// linkState is one NVLink as NVML answered for it.
type linkState struct {
	link int
	up   bool
	ret  nvml.Return
}

// nvlinkCheck fails a GPU whose NVLinks that should be up are not: those
// seen up before on it since the Reader opened, and the first expect
// links when the operator says how many each GPU has (Options).
func nvlinkCheck(h *history, links []linkState, expect int) Check {
	c := Check{Name: CheckNVLink, OK: true}
	up := map[int]bool{}
	for _, l := range links {
		if l.up {
			up[l.link] = true
			h.linksUp[l.link] = true
		}
	}
	want := map[int]bool{}
	for l := range h.linksUp {
		want[l] = true
	}
	for l := range expect {
		want[l] = true
	}
	var down []int
	for l := range want {
		if !up[l] {
			down = append(down, l)
		}
	}
	slices.Sort(down)
	switch {
	case len(down) > 0:
		c.OK = false
		c.say(locales.M("check.nvlink.down", linkList(down), len(up), len(want)))
	case len(links) == 0:
		c.say(locales.M("check.nvlink.none"))
	default:
		c.say(locales.M("check.nvlink.ok", len(up), len(links)))
	}
	return c
}

func linkList(ls []int) string {
	s := ""
	for i, l := range ls {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(l)
	}
	return s
}

// nvlinkCounters are the NVLink error counters read, in order.
var nvlinkCounters = []nvml.NvLinkErrorCounter{
	nvml.NVLINK_ERROR_DL_REPLAY, nvml.NVLINK_ERROR_DL_RECOVERY, nvml.NVLINK_ERROR_DL_CRC_FLIT, nvml.NVLINK_ERROR_DL_CRC_DATA,
}

// nvlinkErrorsCheck reads the error counters of the links that are up
// and judges their rise over counterWindow, as DCGM's NVLink health
// watch does: any replay or recovery error fails, CRC errors fail from
// nvlinkCRCPerSecond.
func nvlinkErrorsCheck(dev nvml.Device, p *probe, h *history, links []linkState, at time.Time) Check {
	c := Check{Name: CheckNVLinkErrors, OK: true}
	var replay, recovery, crc uint64
	var span time.Duration
	var bad []int
	read := 0
	for _, l := range links {
		if !l.up {
			continue
		}
		var rises [4]uint64
		for i, kind := range nvlinkCounters {
			v, ret := dev.GetNvLinkErrorCounter(l.link, kind)
			if !p.ok(ret) {
				if unsupported(ret) && read == 0 {
					c.say(locales.M("check.unsupported", locales.M("check.what.nvlink_errors")))
					return c
				}
				if hardError(ret) {
					c.readFailed("check.what.nvlink_errors", ret)
					return c
				}
				continue
			}
			read++
			k := l.link*len(nvlinkCounters) + i
			ctr := h.nvlink[k]
			if ctr == nil {
				ctr = &evidence.Counter{Window: counterWindow}
				h.nvlink[k] = ctr
			}
			var s time.Duration
			rises[i], s = ctr.Add(v, at)
			span = max(span, s)
		}
		replay += rises[0]
		recovery += rises[1]
		crc += rises[2] + rises[3]
		if rises[0] > 0 || rises[1] > 0 {
			bad = append(bad, l.link)
		}
	}
	crcLimit := uint64(math.Max(1, nvlinkCRCPerSecond*span.Seconds()))
	win := span.Round(time.Second).String()
	switch {
	case read == 0:
		c.say(locales.M("check.nvlink_errors.none"))
	case span == 0:
		c.say(locales.M("check.nvlink_errors.baseline"))
	case len(bad) > 0:
		c.OK = false
		c.say(locales.M("check.nvlink_errors.replay", replay, recovery, linkList(bad), win))
	case crc >= crcLimit && span >= time.Second:
		c.OK = false
		c.say(locales.M("check.nvlink_errors.crc", crc, win, nvlinkCRCPerSecond))
	default:
		c.say(locales.M("check.nvlink_errors.ok", crc, win))
	}
	return c
}

// recoveryAction names one of NVIDIA's recovery actions
// (nvmlDeviceGpuRecoveryAction_t).
func recoveryAction(a uint64) locales.Msg {
	switch nvml.DeviceGpuRecoveryAction(a) {
	case nvml.GPU_RECOVERY_ACTION_GPU_RESET:
		return locales.M("check.recovery.action.1")
	case nvml.GPU_RECOVERY_ACTION_NODE_REBOOT:
		return locales.M("check.recovery.action.2")
	case nvml.GPU_RECOVERY_ACTION_DRAIN_P2P:
		return locales.M("check.recovery.action.3")
	case nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET:
		return locales.M("check.recovery.action.4")
	case nvml.GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN:
		return locales.M("check.recovery.action.5")
	case nvml.GPU_RECOVERY_ACTION_BUS_RESET:
		return locales.M("check.recovery.action.6")
	case nvml.GPU_RECOVERY_ACTION_SYSTEM_REBOOT:
		return locales.M("check.recovery.action.7")
	}
	return locales.M("check.recovery.action.other", a)
}

// recoveryCheck reads the driver's own verdict, the GPU recovery action
// (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, R570 and later): anything but
// NONE fails, naming the action. Drivers without the field pass, saying
// so.
func recoveryCheck(dev nvml.Device, p *probe) Check {
	c := Check{Name: CheckRecovery, OK: true}
	vals := []nvml.FieldValue{{FieldId: nvml.FI_DEV_GET_GPU_RECOVERY_ACTION}}
	ret := dev.GetFieldValues(vals)
	if ret == nvml.SUCCESS {
		ret = nvml.Return(vals[0].NvmlReturn)
	}
	switch {
	case !p.ok(ret) && (unsupported(ret) || ret == nvml.ERROR_INVALID_ARGUMENT):
		// Drivers before the field answer it as unknown.
		c.say(locales.M("check.recovery.unsupported"))
		return c
	case ret != nvml.SUCCESS:
		c.readFailed("check.what.recovery", ret)
		return c
	}
	action := fieldUint(vals[0])
	if action == uint64(nvml.GPU_RECOVERY_ACTION_NONE) {
		c.say(locales.M("check.recovery.none"))
		return c
	}
	c.OK = false
	c.say(locales.M("check.recovery.needed", recoveryAction(action)))
	return c
}

// fieldUint reads a field value as an unsigned integer, whatever its
// type (NVML fills the union in host byte order, little-endian on every
// platform NVIDIA ships the datacentre driver for).
func fieldUint(v nvml.FieldValue) uint64 {
	b := v.Value[:]
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT, nvml.VALUE_TYPE_SIGNED_INT:
		return uint64(binary.LittleEndian.Uint32(b))
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.LittleEndian.Uint16(b))
	case nvml.VALUE_TYPE_DOUBLE:
		return uint64(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	return binary.LittleEndian.Uint64(b)
}
