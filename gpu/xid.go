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
// XIDs are sticky: a GPU that raised a critical XID stays unhealthy until
// ClearXIDs, however well it reads afterwards.
type xidWatch struct {
	set nvml.EventSet // nil when the GPU cannot report XID events
	// unsupported says why set is nil.
	unsupported locales.Msg
	critical    []int // in the order first seen
	ignored     []int
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
	case w.set == nil:
		m = w.unsupported
	case len(w.critical) > 0:
		c.OK = false
		m = locales.M("check.xid.critical", xidList(w.critical))
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

// xidCheck drains the GPU's XID events, registering for them the first
// time the GPU is seen, and judges what was seen.
func (r *Reader) xidCheck(uuid string, dev nvml.Device) Check {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.watches[uuid]
	if w == nil {
		w = r.watch(dev)
		if w == nil {
			c := Check{Name: CheckXID, OK: true}
			c.say(locales.M("check.xid.not_registered"))
			return c
		}
		r.watches[uuid] = w
	}
	w.drain(r.ignore)
	return w.check()
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

// watch registers for a GPU's XID events. It returns nil when the GPU is
// lost, to try again when it answers; a GPU or driver without XID events
// gets a watch that says so, and its xid check passes.
func (r *Reader) watch(dev nvml.Device) *xidWatch {
	set, ret := r.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return &xidWatch{unsupported: locales.M("check.xid.no_events", ret.Error())}
	}
	ret = dev.RegisterEvents(nvml.EventTypeXidCriticalError, set)
	switch ret {
	case nvml.SUCCESS:
		return &xidWatch{set: set}
	case nvml.ERROR_GPU_IS_LOST:
		set.Free()
		return nil
	}
	set.Free()
	return &xidWatch{unsupported: locales.M("check.xid.unsupported", ret.Error())}
}
