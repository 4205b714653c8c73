package gpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// DefaultIgnoredXIDs returns the XIDs a Reader ignores unless told
// otherwise. Each is raised by a faulty application and ends with it, the
// GPU being fine: 13 graphics engine exception, 31 GPU memory page fault,
// 43 GPU stopped processing, 45 preemptive cleanup, 68 video processor
// exception, 109 context switch timeout.
func DefaultIgnoredXIDs() []int {
	return []int{13, 31, 43, 45, 68, 109}
}

// xidNames describes the common XIDs, for details a person reads.
var xidNames = map[int]string{
	13:  "graphics engine exception",
	31:  "GPU memory page fault",
	43:  "GPU stopped processing",
	45:  "preemptive cleanup",
	48:  "double-bit ECC error",
	61:  "internal micro-controller breakpoint",
	62:  "internal micro-controller halt",
	63:  "ECC page retirement or row remapping event",
	64:  "ECC page retirement or row remapping failure",
	68:  "video processor exception",
	74:  "NVLink error",
	79:  "GPU has fallen off the bus",
	92:  "high single-bit ECC error rate",
	94:  "contained ECC error",
	95:  "uncontained ECC error",
	109: "context switch timeout",
	119: "GSP RPC timeout",
	120: "GSP error",
}

func xidName(x int) string {
	if n, ok := xidNames[x]; ok {
		return fmt.Sprintf("%d (%s)", x, n)
	}
	return strconv.Itoa(x)
}

// xidWatch is the XID event set of one GPU and the XIDs seen on it. Seen
// XIDs are sticky: a GPU that raised a critical XID stays unhealthy until
// ClearXIDs, however well it reads afterwards.
type xidWatch struct {
	set nvml.EventSet // nil when the GPU cannot report XID events
	// unsupported says why set is nil.
	unsupported string
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
	switch {
	case w.set == nil:
		c.Detail = w.unsupported
	case len(w.critical) > 0:
		c.OK = false
		c.Detail = "critical XID " + xidList(w.critical) + " seen"
	default:
		c.Detail = "no critical XIDs"
	}
	if len(w.ignored) > 0 {
		c.Detail += "; ignored application XID " + xidList(w.ignored)
	}
	return c
}

func xidList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = xidName(x)
	}
	return strings.Join(s, ", ")
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
			return Check{Name: CheckXID, OK: true, Detail: "XID events not registered yet: the GPU did not answer"}
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
		return &xidWatch{unsupported: "XID events not supported: " + ret.Error()}
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
	return &xidWatch{unsupported: "XID events not supported on this GPU: " + ret.Error()}
}
