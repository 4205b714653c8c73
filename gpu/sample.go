package gpu

import (
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Reading is one GPU's sensors at one moment, taken by a Sampler: the
// telemetry only, without the inventory and health checks of Read, so that
// it is cheap enough to take every 100 ms under load.
type Reading struct {
	Index int
	UUID  string
	T     Telemetry
	// XIDs are the XID events the GPU raised since the Sampler's previous
	// reading (since NewSampler for the first), in the order raised,
	// repeats and application XIDs included.
	XIDs []int
	// Err says why the GPU could not be read (not found, fallen off the
	// bus); T is then zero, while XIDs still holds what it raised.
	Err string
}

// Sampler reads the telemetry of a few GPUs again and again, for a
// benchmark. It has XID event sets of its own, so it sees every XID raised
// while it runs even when Read drains the Reader's sets meanwhile (the
// heartbeat does). Make one with NewSampler and Close it when done; it is
// safe for use by several goroutines.
type Sampler struct {
	r     *Reader
	uuids []string

	mu   sync.Mutex
	sets map[string]nvml.EventSet // by UUID; missing when the GPU has no XID events
	done bool
}

// NewSampler prepares to sample exactly the GPUs named, by UUID. A GPU
// NVML does not find now is sampled all the same, and each reading of it
// says why it could not be read.
func (r *Reader) NewSampler(uuids []string) *Sampler {
	r.retryInit()
	s := &Sampler{r: r, uuids: append([]string(nil), uuids...), sets: map[string]nvml.EventSet{}}
	r.life.RLock()
	defer r.life.RUnlock()
	if r.unavailable() != "" {
		return s
	}
	for _, u := range s.uuids {
		dev, ret := r.lib.DeviceGetHandleByUUID(u)
		if ret != nvml.SUCCESS {
			continue
		}
		set, ret := r.lib.EventSetCreate()
		if ret != nvml.SUCCESS {
			continue
		}
		if dev.RegisterEvents(nvml.EventTypeXidCriticalError, set) != nvml.SUCCESS {
			set.Free()
			continue
		}
		s.sets[u] = set
	}
	return s
}

// Sample reads every GPU of the Sampler once, in the order they were
// named.
func (s *Sampler) Sample() []Reading {
	out := make([]Reading, 0, len(s.uuids))
	s.r.life.RLock()
	defer s.r.life.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := s.r.unavailable()
	if s.done {
		msg = "sampler closed"
	}
	for _, u := range s.uuids {
		if msg != "" {
			out = append(out, Reading{UUID: u, Index: s.r.knownIndex(u), Err: msg})
			continue
		}
		out = append(out, s.read(u))
	}
	return out
}

// read takes one reading of one GPU. The caller holds r.life and s.mu.
func (s *Sampler) read(uuid string) Reading {
	rd := Reading{UUID: uuid, Index: s.r.knownIndex(uuid), XIDs: s.drain(uuid)}
	dev, ret := s.r.lib.DeviceGetHandleByUUID(uuid)
	if ret != nvml.SUCCESS {
		rd.Err = "NVML says " + ret.Error()
		return rd
	}
	var p probe
	if v, ret := dev.GetIndex(); p.ok(ret) {
		rd.Index = v
	}
	t := &rd.T
	if v, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); p.ok(ret) {
		t.TemperatureC = int(v)
	}
	if v, ret := dev.GetMemoryInfo(); p.ok(ret) {
		t.MemoryUsedMiB = v.Used >> 20
	}
	s.r.readCounters(dev, &p, t)
	readInstantPower(dev, &p, t)
	if p.lost {
		rd.T = Telemetry{}
		rd.Err = "NVML says " + nvml.ERROR_GPU_IS_LOST.Error()
	}
	return rd
}

// drain takes the XID events waiting in the GPU's own set. The caller
// holds s.mu.
func (s *Sampler) drain(uuid string) []int {
	set := s.sets[uuid]
	if set == nil {
		return nil
	}
	var xids []int
	for range drainLimit {
		ev, ret := set.Wait(0)
		if ret != nvml.SUCCESS {
			break // ERROR_TIMEOUT: none left
		}
		if ev.EventType&nvml.EventTypeXidCriticalError != 0 {
			xids = append(xids, int(ev.EventData))
		}
	}
	return xids
}

// Close frees the Sampler's event sets. Readings after Close say it is
// closed. After the Reader is closed NVML is shut down and frees them
// itself, so nothing is called then.
func (s *Sampler) Close() {
	s.r.life.RLock()
	defer s.r.life.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if s.r.unavailable() == "" {
		for _, set := range s.sets {
			set.Free()
		}
	}
	s.sets = nil
}
