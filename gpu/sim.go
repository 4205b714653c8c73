package gpu

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// Sim is a simulated GPU host: one of go-nvml's mock servers with the
// sensors, XID events, PCI bus ids and NVLinks its mocks leave out filled
// in, and faults that can be injected. It implements nvml.Interface, so a
// Reader reads it as it would a real host, and reports it Simulated.
//
// The embedded mock server stays reachable for tests that want to change
// what one call answers (set its …Func before reading). A Sim is safe for
// use by several goroutines.
type Sim struct {
	*server.Server

	model string
	now   func() time.Time
	start time.Time
	devs  []*simDevice

	mu      sync.Mutex // guards the fault state of the Sim and its devices
	pending []Fault    // scheduled faults not yet due
	silent  bool
}

var _ nvml.Interface = (*Sim)(nil)

// SimOption configures a simulation.
type SimOption func(*simConfig) error

type simConfig struct {
	uuids []string
	now   func() time.Time
}

// WithUUIDs gives the simulated GPUs fixed UUIDs, in index order, so that
// a simulated host keeps its GPUs across restarts (save Sim.UUIDs after
// the first start). GPUs beyond the list get random UUIDs.
func WithUUIDs(uuids []string) SimOption {
	return func(c *simConfig) error {
		for i, u := range uuids {
			if u == "" {
				return fmt.Errorf("gpu: simulated UUID %d is empty", i)
			}
			if slices.Contains(uuids[:i], u) {
				return fmt.Errorf("gpu: simulated UUID %q given twice", u)
			}
		}
		c.uuids = slices.Clone(uuids)
		return nil
	}
}

// WithClock sets the clock that scheduled faults and sensor wander follow;
// the default is time.Now.
func WithClock(now func() time.Time) SimOption {
	return func(c *simConfig) error {
		c.now = now
		return nil
	}
}

// maxSimGPUs bounds n: no host has more GPUs than this.
const maxSimGPUs = 64

// Simulate builds a simulated host from one of go-nvml's DGX mocks,
// "dgxa100", "dgxh100", "dgxh200" or "dgxb200", with n GPUs (8 when n is
// 0). The GPUs keep the mock's names, so a simulated DGX A100 reports
// "Mock NVIDIA A100-SXM4-40GB" as go-nvml does.
func Simulate(system string, n int, opts ...SimOption) (*Sim, error) {
	sys, ok := systems[system]
	if !ok {
		return nil, fmt.Errorf("gpu: unknown simulated system %q (want dgxa100, dgxh100, dgxh200 or dgxb200)", system)
	}
	n, err := simCount(n)
	if err != nil {
		return nil, err
	}
	srv := sys.build(gpus.Multiple(n, sys.cfg)...)
	p, _ := profileBySlug(sys.slug)
	return newSim(srv, system, p, opts)
}

// SimulateModel builds a simulated host of n GPUs (8 when n is 0) named
// nvmlName, for models go-nvml has no DGX mock of ("NVIDIA GeForce RTX
// 4090", "NVIDIA L40S"…). It copies the mock config and sensor profile of
// the closest known model (a generic PCIe part when none is close) and
// changes the name and, unless memMiB is 0, the memory.
func SimulateModel(nvmlName string, memMiB uint64, n int, opts ...SimOption) (*Sim, error) {
	if nvmlName == "" {
		return nil, fmt.Errorf("gpu: simulated GPU needs a name")
	}
	p := closestProfile(nvmlName)
	p.cfg.Name = nvmlName
	if memMiB > 0 {
		p.cfg.MemoryMB = memMiB
	}
	return simulateProfile(p, nvmlName, n, opts)
}

// SimulateCatalog builds a simulated host of n GPUs (8 when n is 0) of a
// catalogue model, by slug (see SimulatedModels): its NVML name contains
// the catalogue's nvml_name_contains.
func SimulateCatalog(slug string, n int, opts ...SimOption) (*Sim, error) {
	p, ok := profileBySlug(slug)
	if !ok {
		return nil, fmt.Errorf("gpu: no simulated model for catalogue slug %q", slug)
	}
	return simulateProfile(p, slug, n, opts)
}

func simulateProfile(p profile, model string, n int, opts []SimOption) (*Sim, error) {
	n, err := simCount(n)
	if err != nil {
		return nil, err
	}
	driver, nvmlVersion, cuda := p.driver, p.nvmlVersion, p.cuda
	if driver == "" {
		driver, nvmlVersion, cuda = driver550, nvml550, cuda550
	}
	srv, err := server.New(
		server.WithGPUs(gpus.Multiple(n, p.cfg)...),
		server.WithDriverVersion(driver),
		server.WithNVMLVersion(nvmlVersion),
		server.WithCUDADriverVersion(cuda),
	)
	if err != nil {
		return nil, fmt.Errorf("gpu: simulate %s: %w", model, err)
	}
	return newSim(srv, model, p, opts)
}

func simCount(n int) (int, error) {
	switch {
	case n == 0:
		return 8, nil
	case n < 0 || n > maxSimGPUs:
		return 0, fmt.Errorf("gpu: cannot simulate %d GPUs (1 to %d)", n, maxSimGPUs)
	}
	return n, nil
}

func newSim(srv *server.Server, model string, p profile, opts []SimOption) (*Sim, error) {
	var c simConfig
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.now == nil {
		c.now = time.Now
	}
	s := &Sim{Server: srv, model: model, now: c.now, start: c.now()}
	for i, d := range srv.Devices {
		md := d.(*server.Device)
		if i < len(c.uuids) {
			md.UUID = c.uuids[i]
		}
		md.PciBusID = simBusID(i)
		sd := &simDevice{Device: md, sim: s, prof: p, index: i, sets: map[*simEventSet]uint64{}}
		sd.install()
		s.devs = append(s.devs, sd)
	}
	s.install()
	return s, nil
}

// simBuses are the PCI buses of the eight GPUs of a DGX H100.
var simBuses = []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}

// simBusID is the PCI bus id of simulated GPU i: those of a DGX H100,
// then the same buses in the next PCI domains.
func simBusID(i int) string {
	return fmt.Sprintf("%08x:%02x:00.0", i/len(simBuses), simBuses[i%len(simBuses)])
}

// simulatedModel marks the host read from a Sim as simulated.
func (s *Sim) simulatedModel() string { return s.model }

// Model is the simulated system or model: "dgxh100", a catalogue slug, or
// the NVML name given to SimulateModel.
func (s *Sim) Model() string { return s.model }

// UUIDs returns the simulated GPUs' UUIDs in index order, to pass to
// WithUUIDs next time.
func (s *Sim) UUIDs() []string {
	out := make([]string, len(s.devs))
	for i, d := range s.devs {
		out[i] = d.UUID
	}
	return out
}

// install replaces the mock server's handle lookups with ones that hand
// out the simulated devices and know about lost GPUs, and adds event sets.
func (s *Sim) install() {
	s.Server.DeviceGetCountFunc = func() (int, nvml.Return) {
		s.lock()
		defer s.mu.Unlock()
		return len(s.devs), nvml.SUCCESS
	}
	s.Server.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		s.lock()
		defer s.mu.Unlock()
		if i < 0 || i >= len(s.devs) {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		if s.devs[i].lost {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return s.devs[i], nvml.SUCCESS
	}
	s.Server.DeviceGetHandleByUUIDFunc = func(uuid string) (nvml.Device, nvml.Return) {
		return s.find(func(d *simDevice) bool { return d.UUID == uuid })
	}
	s.Server.DeviceGetHandleByPciBusIdFunc = func(bus string) (nvml.Device, nvml.Return) {
		return s.find(func(d *simDevice) bool { return d.PciBusID == bus })
	}
	s.Server.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return newSimEventSet(s), nvml.SUCCESS
	}
}

// find returns the device that matches, ERROR_GPU_IS_LOST when it has
// fallen off the bus, and ERROR_NOT_FOUND, as NVML does, when none does.
func (s *Sim) find(match func(*simDevice) bool) (nvml.Device, nvml.Return) {
	s.lock()
	defer s.mu.Unlock()
	for _, d := range s.devs {
		if match(d) {
			if d.lost {
				return nil, nvml.ERROR_GPU_IS_LOST
			}
			return d, nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

// lock takes the Sim's lock and applies the scheduled faults now due.
// Faults are applied on the next call rather than by a timer, so a Sim
// runs no goroutine of its own.
func (s *Sim) lock() {
	s.mu.Lock()
	if len(s.pending) == 0 {
		return
	}
	elapsed := s.now().Sub(s.start)
	kept := s.pending[:0]
	for _, f := range s.pending {
		if f.After <= elapsed {
			s.applyLocked(f)
		} else {
			kept = append(kept, f)
		}
	}
	s.pending = kept
}

// The calls below go straight to the mock server's …Func, skipping the
// mock's call recording: go-nvml's mocks keep every call made, which in a
// simulated agent reading every few seconds for weeks grows without bound.

// DeviceGetCount implements nvml.Interface.
func (s *Sim) DeviceGetCount() (int, nvml.Return) { return s.Server.DeviceGetCountFunc() }

// DeviceGetHandleByIndex implements nvml.Interface.
func (s *Sim) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	return s.Server.DeviceGetHandleByIndexFunc(i)
}

// DeviceGetHandleByUUID implements nvml.Interface.
func (s *Sim) DeviceGetHandleByUUID(uuid string) (nvml.Device, nvml.Return) {
	return s.Server.DeviceGetHandleByUUIDFunc(uuid)
}

// DeviceGetHandleByPciBusId implements nvml.Interface.
func (s *Sim) DeviceGetHandleByPciBusId(bus string) (nvml.Device, nvml.Return) {
	return s.Server.DeviceGetHandleByPciBusIdFunc(bus)
}

// EventSetCreate implements nvml.Interface.
func (s *Sim) EventSetCreate() (nvml.EventSet, nvml.Return) { return s.Server.EventSetCreateFunc() }
