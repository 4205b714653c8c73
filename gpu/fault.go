package gpu

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FaultKind is a kind of simulated failure.
type FaultKind string

// The faults a Sim can play.
const (
	// FaultXID raises an XID critical error event (Fault.XID) on the GPU.
	FaultXID FaultKind = "xid"
	// FaultECC gives the GPU one uncorrected volatile ECC error and a
	// pending row remap (a pending page retirement on models that retire
	// pages instead).
	FaultECC FaultKind = "ecc"
	// FaultOffBus makes the GPU fall off the bus: XID 79, then every call
	// on it, and every handle lookup for it, answers ERROR_GPU_IS_LOST.
	FaultOffBus FaultKind = "offbus"
	// FaultThermal heats the GPU past its slowdown threshold, with the HW
	// thermal slowdown clock-event reason set and its SM clock halved.
	FaultThermal FaultKind = "thermal"
	// FaultSilent is no NVML fault: the host goes dark. The agent checks
	// Sim.Silent and stops talking to the server.
	FaultSilent FaultKind = "silent"
)

// xidOffBus is the XID a GPU raises when it falls off the bus.
const xidOffBus = 79

// Fault is one simulated failure: what, on which GPU (by index; none for
// FaultSilent) and how long after the simulation started.
type Fault struct {
	Kind  FaultKind
	XID   int // FaultXID only
	GPU   int
	After time.Duration
}

// String formats the fault as ParseFault reads it.
func (f Fault) String() string {
	s := string(f.Kind)
	if f.Kind == FaultXID {
		s += ":" + strconv.Itoa(f.XID)
	}
	if f.Kind != FaultSilent {
		s += "@" + strconv.Itoa(f.GPU)
	}
	if f.After > 0 {
		s += ":after=" + f.After.String()
	}
	return s
}

// ParseFault reads a fault written KIND@GPU[:after=DURATION], e.g.
// "xid:79@2:after=30s", "ecc@0", "offbus@7:after=2m", "thermal@1". KIND is
// xid:N, ecc, offbus, thermal or silent; GPU is an index, and is left out
// for silent ("silent:after=1m").
func ParseFault(s string) (Fault, error) {
	bad := func(format string, args ...any) (Fault, error) {
		return Fault{}, fmt.Errorf("gpu: fault %q: %s", s, fmt.Sprintf(format, args...))
	}
	var f Fault
	rest := strings.TrimSpace(s)
	if i := strings.LastIndex(rest, ":after="); i >= 0 {
		d, err := time.ParseDuration(rest[i+len(":after="):])
		if err != nil || d < 0 {
			return bad("after= wants a duration such as 30s or 2m")
		}
		f.After, rest = d, rest[:i]
	}
	kind, gpu, hasGPU := strings.Cut(rest, "@")
	name, arg, hasArg := strings.Cut(kind, ":")
	f.Kind = FaultKind(name)
	switch f.Kind {
	case FaultXID:
		n, err := strconv.Atoi(arg)
		if !hasArg || err != nil || n <= 0 {
			return bad("xid wants a positive XID number, as in xid:79@0")
		}
		f.XID = n
	case FaultECC, FaultOffBus, FaultThermal, FaultSilent:
		if hasArg {
			return bad("%s takes no argument", name)
		}
	default:
		return bad("unknown kind %q (want xid:N, ecc, offbus, thermal or silent)", kind)
	}
	switch {
	case f.Kind == FaultSilent && hasGPU:
		return bad("silent names no GPU")
	case f.Kind == FaultSilent:
		return f, nil
	case !hasGPU:
		return bad("missing @GPU, the GPU's index, as in %s@0", kind)
	}
	n, err := strconv.Atoi(gpu)
	if err != nil || n < 0 {
		return bad("GPU %q is not an index (0, 1, …)", gpu)
	}
	f.GPU = n
	return f, nil
}

// Inject plays a fault now, whatever its After. An XID reaches the event
// sets registered before it, as on a real GPU: open the Reader first.
func (s *Sim) Inject(f Fault) error {
	if err := s.validate(f); err != nil {
		return err
	}
	s.lock()
	defer s.mu.Unlock()
	s.applyLocked(f)
	return nil
}

// Schedule plays each fault once its After has passed since the
// simulation started, on the first NVML call (or Silent) after that.
func (s *Sim) Schedule(faults ...Fault) error {
	for _, f := range faults {
		if err := s.validate(f); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.pending = append(s.pending, faults...)
	s.mu.Unlock()
	return nil
}

// Silent reports whether a silent fault has played: the host should stop
// talking to the server, as one that lost its network would.
func (s *Sim) Silent() bool {
	s.lock()
	defer s.mu.Unlock()
	return s.silent
}

func (s *Sim) validate(f Fault) error {
	switch f.Kind {
	case FaultSilent:
		return nil
	case FaultXID:
		if f.XID <= 0 {
			return fmt.Errorf("gpu: fault %s: XID must be positive", f)
		}
	case FaultECC, FaultOffBus, FaultThermal:
	default:
		return fmt.Errorf("gpu: fault %s: unknown kind", f)
	}
	if f.GPU < 0 || f.GPU >= len(s.devs) {
		return fmt.Errorf("gpu: fault %s: no GPU %d on this %d-GPU host", f, f.GPU, len(s.devs))
	}
	return nil
}

// applyLocked plays a validated fault. The caller holds s.mu.
func (s *Sim) applyLocked(f Fault) {
	if f.Kind == FaultSilent {
		s.silent = true
		return
	}
	d := s.devs[f.GPU]
	switch f.Kind {
	case FaultXID:
		d.raiseXIDLocked(f.XID)
	case FaultECC:
		d.ecc = true
	case FaultOffBus:
		d.raiseXIDLocked(xidOffBus)
		d.lost = true
	case FaultThermal:
		d.thermal = true
	}
}
