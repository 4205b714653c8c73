package gpu

import (
	"slices"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"suanli/locales"
)

// DefaultIgnoredXIDs returns the XIDs a Reader ignores unless told
// otherwise. Each is raised by a faulty application and ends with it, the
// GPU being fine: 13 graphics engine exception, 31 GPU memory page fault,
// 43 GPU stopped processing, 45 preemptive cleanup, 68 video processor
// exception, 109 context switch timeout.
func DefaultIgnoredXIDs() []int {
	return []int{13, 31, 43, 45, 68, 109}
}

// namedXIDs are the common XIDs, described for a person by the messages
// "xid.N" (e.g. 79: "GPU has fallen off the bus").
var namedXIDs = []int{13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 74, 79, 92, 94, 95, 109, 119, 120}

// xidName is an XID as a message: its number with what it means where
// known.
func xidName(x int) locales.Msg {
	if slices.Contains(namedXIDs, x) {
		return locales.M("xid." + strconv.Itoa(x))
	}
	return locales.M("xid.other", x)
}

// xidWatch is the XID event set of one GPU and the XIDs seen on it. Seen
// critical XIDs are sticky: a GPU that raised one stays unhealthy until
// ClearXIDs, however well it reads afterwards, and across restarts of
// the agent (RestoreXIDs).
type xidWatch struct {
	set nvml.EventSet // nil until registered, or when it cannot be
	// noEvents is set when the GPU or driver has no XID events
	// (NOT_SUPPORTED): the check passes, saying so (unsupported).
	noEvents    bool
	unsupported locales.Msg
	// regErr is the last registration's error while it is retried on
	// every read: the check fails meanwhile, as NVIDIA's device plugin
	// marks a device whose events cannot be watched unhealthy.
	regErr   nvml.Return
	critical []int // in the order first seen
	ignored  []int
}

// drainLimit bounds how many events one read takes from a set, so that a
// GPU raising XIDs in a storm cannot hold a read forever.
const drainLimit = 256

// drain takes every event waiting in the set, without waiting for more.
func (w *xidWatch) drain(ignore map[int]bool) {
	if w.set == nil {
		return
	}
	for range drainLimit {
		ev, ret := w.set.Wait(0)
		if ret != nvml.SUCCESS {
			return // ERROR_TIMEOUT: none left
		}
		if ev.EventType&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		x := int(ev.EventData)
		if ignore[x] {
			if !slices.Contains(w.ignored, x) {
				w.ignored = append(w.ignored, x)
			}
		} else if !slices.Contains(w.critical, x) {
			w.critical = append(w.critical, x)
		}
	}
}

func (w *xidWatch) check() Check {
	c := Check{Name: CheckXID, OK: true}
	var m locales.Msg
	switch {
	case len(w.critical) > 0:
		c.OK = false
		m = locales.M("check.xid.critical", xidList(w.critical))
	case w.noEvents:
		m = w.unsupported
	case w.set == nil && w.regErr != nvml.SUCCESS:
		c.OK = false
		m = locales.M("check.xid.watch_failed", w.regErr.Error())
	case w.set == nil:
		m = locales.M("check.xid.not_registered")
	default:
		m = locales.M("check.xid.ok")
	}
	if len(w.ignored) > 0 {
		m = locales.M("check.xid.with_ignored", m, xidList(w.ignored))
	}
	c.say(m)
	return c
}

func xidList(xs []int) []locales.Msg {
	s := make([]locales.Msg, len(xs))
	for i, x := range xs {
		s[i] = xidName(x)
	}
	return s
}

// xidCheck drains the GPU's XID events, registering for them until that
// succeeds (or the GPU says it has none), and judges what was seen. It
// returns the registration's error, so that GPU_IS_LOST counts as the
// GPU's.
func (r *Reader) xidCheck(uuid string, dev nvml.Device) (Check, nvml.Return) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.watches[uuid]
	if w == nil {
		w = &xidWatch{}
		r.watches[uuid] = w
	}
	ret := nvml.SUCCESS
	if w.set == nil && !w.noEvents {
		ret = r.register(w, dev)
	}
	w.drain(r.ignore)
	return w.check(), ret
}

// xidCheckKnown judges the XIDs seen on a GPU NVML no longer answers for.
func (r *Reader) xidCheckKnown(uuid string) (Check, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.watches[uuid]
	if w == nil {
		return Check{}, false
	}
	w.drain(r.ignore)
	return w.check(), true
}

// register tries to register a GPU's XID events into w. NOT_SUPPORTED
// (from creating the set or registering) means the GPU or driver has no
// XID events: w says so and its check passes. Any other error is kept in
// w.regErr and the registration is tried again on the next read; the
// check fails meanwhile. The caller holds r.mu.
func (r *Reader) register(w *xidWatch, dev nvml.Device) nvml.Return {
	set, ret := r.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		if unsupported(ret) {
			w.noEvents, w.unsupported = true, locales.M("check.xid.no_events", ret.Error())
		}
		w.regErr = ret
		return ret
	}
	ret = dev.RegisterEvents(nvml.EventTypeXidCriticalError, set)
	if ret == nvml.SUCCESS {
		w.set, w.regErr = set, nvml.SUCCESS
		return ret
	}
	set.Free()
	if unsupported(ret) {
		w.noEvents, w.unsupported = true, locales.M("check.xid.unsupported", ret.Error())
	}
	w.regErr = ret
	return ret
}

// CriticalXIDs returns the critical XIDs seen on each GPU (by UUID) and
// not yet cleared, for the agent to keep in its state file: they stay
// until an operator clears them, across restarts too.
func (r *Reader) CriticalXIDs() map[string][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]int{}
	for u, w := range r.watches {
		if len(w.critical) > 0 {
			out[u] = slices.Clone(w.critical)
		}
	}
	return out
}

// RestoreXIDs adds critical XIDs kept from before a restart (by GPU
// UUID): the GPUs stay unhealthy until ClearXIDs, as if they had just
// raised them.
func (r *Reader) RestoreXIDs(xids map[string][]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for u, xs := range xids {
		if IsUnreadableSlot(u) {
			continue
		}
		w := r.watches[u]
		if w == nil {
			w = &xidWatch{}
			r.watches[u] = w
		}
		for _, x := range xs {
			if x > 0 && !r.ignore[x] && !slices.Contains(w.critical, x) {
				w.critical = append(w.critical, x)
			}
		}
	}
}
