package gpu

import (
	"encoding/binary"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// simDevice is one simulated GPU: go-nvml's mock device, with every …Func
// a Reader calls filled in from the model's profile and the faults
// injected on it.
type simDevice struct {
	*server.Device
	sim   *Sim
	prof  profile
	index int

	// Guarded by sim.mu.
	lost, ecc, thermal bool
	util               uint32                  // utilisation, percent (SetUtilization)
	sets               map[*simEventSet]uint64 // event sets registered, with their event types
}

// simState is what a call on a simulated GPU needs to know of its faults.
type simState struct {
	ecc, thermal bool
	util         uint32
	// wander (0–2) moves the sensors a little over time, so that a
	// simulated host does not look frozen on a dashboard.
	wander uint32
}

// state returns d's faults, or false when d has fallen off the bus.
func (d *simDevice) state() (simState, bool) {
	s := d.sim
	s.lock()
	defer s.mu.Unlock()
	if d.lost {
		return simState{}, false
	}
	return simState{
		ecc:     d.ecc,
		thermal: d.thermal,
		util:    d.util,
		wander:  uint32(s.now().Sub(s.start)/(20*time.Second)) % 3,
	}, true
}

func (d *simDevice) temperature(st simState) uint32 {
	if st.thermal {
		return d.prof.slowdownC + 4
	}
	return 35 + uint32(d.index*3%9) + st.wander
}

// install fills in the mock device's …Funcs. They are set once, here, and
// read the fault state under the Sim's lock: swapping …Funcs when a fault
// fires would race with a Reader calling them.
func (d *simDevice) install() {
	p := d.prof
	lostGuard := func(f func() (int, nvml.Return)) func() (int, nvml.Return) {
		return func() (int, nvml.Return) {
			if _, ok := d.state(); !ok {
				return 0, nvml.ERROR_GPU_IS_LOST
			}
			return f()
		}
	}
	getName, getUUID := d.GetNameFunc, d.GetUUIDFunc
	d.GetNameFunc = func() (string, nvml.Return) {
		if _, ok := d.state(); !ok {
			return "", nvml.ERROR_GPU_IS_LOST
		}
		return getName()
	}
	d.GetUUIDFunc = func() (string, nvml.Return) {
		if _, ok := d.state(); !ok {
			return "", nvml.ERROR_GPU_IS_LOST
		}
		return getUUID()
	}
	d.GetIndexFunc = lostGuard(d.GetIndexFunc)
	d.GetMinorNumberFunc = lostGuard(d.GetMinorNumberFunc)
	cc := d.GetCudaComputeCapabilityFunc
	d.GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) {
		if _, ok := d.state(); !ok {
			return 0, 0, nvml.ERROR_GPU_IS_LOST
		}
		return cc()
	}
	mig := d.GetMigModeFunc
	d.GetMigModeFunc = func() (int, int, nvml.Return) {
		if _, ok := d.state(); !ok {
			return 0, 0, nvml.ERROR_GPU_IS_LOST
		}
		if len(d.Config.MIGProfiles.GpuInstanceProfiles) == 0 {
			return 0, 0, nvml.ERROR_NOT_SUPPORTED
		}
		return mig()
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		if _, ok := d.state(); !ok {
			return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST
		}
		total := d.Config.MemoryMB << 20
		used := total / 160 // what the driver reserves on an idle GPU
		return nvml.Memory{Total: total, Used: used, Free: total - used}, nvml.SUCCESS
	}
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		if _, ok := d.state(); !ok {
			return nvml.PciInfo{}, nvml.ERROR_GPU_IS_LOST
		}
		info := nvml.PciInfo{
			Domain:      uint32(d.index / len(simBuses)),
			Bus:         uint32(simBuses[d.index%len(simBuses)]),
			PciDeviceId: d.Config.PciDeviceId,
		}
		for i := 0; i < len(d.PciBusID) && i < len(info.BusId)-1; i++ {
			info.BusId[i] = int8(d.PciBusID[i])
		}
		for i := 0; i < len(d.PciBusID) && i < len(info.BusIdLegacy)-1; i++ {
			info.BusIdLegacy[i] = int8(d.PciBusID[i])
		}
		return info, nvml.SUCCESS
	}

	pcie := func(v int) func() (int, nvml.Return) {
		return lostGuard(func() (int, nvml.Return) { return v, nvml.SUCCESS })
	}
	d.GetCurrPcieLinkGenerationFunc = pcie(p.pcieGen)
	d.GetMaxPcieLinkGenerationFunc = pcie(p.pcieGen)
	d.GetGpuMaxPcieLinkGenerationFunc = pcie(p.pcieGen)
	d.GetCurrPcieLinkWidthFunc = pcie(16)
	d.GetMaxPcieLinkWidthFunc = pcie(16)
	d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
		switch _, ok := d.state(); {
		case !ok:
			return 0, nvml.ERROR_GPU_IS_LOST
		case p.nvlinks == 0:
			return 0, nvml.ERROR_NOT_SUPPORTED
		case link < 0 || link >= p.nvlinks:
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}

	d.GetTemperatureFunc = func(sensor nvml.TemperatureSensors) (uint32, nvml.Return) {
		st, ok := d.state()
		switch {
		case !ok:
			return 0, nvml.ERROR_GPU_IS_LOST
		case sensor != nvml.TEMPERATURE_GPU:
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return d.temperature(st), nvml.SUCCESS
	}
	d.GetTemperatureThresholdFunc = func(t nvml.TemperatureThresholds) (uint32, nvml.Return) {
		if _, ok := d.state(); !ok {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		switch t {
		case nvml.TEMPERATURE_THRESHOLD_SLOWDOWN:
			return p.slowdownC, nvml.SUCCESS
		case nvml.TEMPERATURE_THRESHOLD_SHUTDOWN:
			return p.slowdownC + 5, nvml.SUCCESS
		case nvml.TEMPERATURE_THRESHOLD_GPU_MAX:
			return p.slowdownC - 3, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		st, ok := d.state()
		if !ok {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		return (p.idleW + uint32(d.index*3%10) + 2*st.wander) * 1000, nvml.SUCCESS
	}
	limit := func() (uint32, nvml.Return) {
		if _, ok := d.state(); !ok {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		return p.powerLimitW * 1000, nvml.SUCCESS
	}
	d.GetEnforcedPowerLimitFunc = limit
	d.GetPowerManagementLimitFunc = limit
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		st, ok := d.state()
		if !ok {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		switch c {
		case nvml.CLOCK_SM, nvml.CLOCK_GRAPHICS:
			if st.thermal {
				return p.smMHz / 2, nvml.SUCCESS
			}
			return p.smMHz, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return p.memMHz, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		st, ok := d.state()
		if !ok {
			return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST
		}
		return nvml.Utilization{Gpu: st.util, Memory: st.util / 2}, nvml.SUCCESS
	}
	reasons := func() (uint64, nvml.Return) {
		st, ok := d.state()
		if !ok {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		r := uint64(nvml.ClocksEventReasonGpuIdle)
		if st.thermal {
			r |= nvml.ClocksThrottleReasonHwThermalSlowdown
		}
		return r, nvml.SUCCESS
	}
	d.GetCurrentClocksEventReasonsFunc = reasons
	d.GetCurrentClocksThrottleReasonsFunc = reasons

	// An ecc fault shows on every model, even one whose ECC is off, so
	// that the fault can be tried on any simulated host.
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
		st, ok := d.state()
		switch {
		case !ok:
			return 0, nvml.ERROR_GPU_IS_LOST
		case !p.ecc && !st.ecc:
			return 0, nvml.ERROR_NOT_SUPPORTED
		case st.ecc && t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED:
			return 1, nvml.SUCCESS
		}
		return 0, nvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		st, ok := d.state()
		switch {
		case !ok:
			return 0, 0, false, false, nvml.ERROR_GPU_IS_LOST
		case !p.rowRemap:
			return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED
		case st.ecc:
			return 0, 1, true, false, nvml.SUCCESS
		}
		return 0, 0, false, false, nvml.SUCCESS
	}
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		st, ok := d.state()
		switch {
		case !ok:
			return 0, nvml.ERROR_GPU_IS_LOST
		case !p.retiredPages:
			return 0, nvml.ERROR_NOT_SUPPORTED
		case st.ecc:
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_DISABLED, nvml.SUCCESS
	}

	// Error counters stay at zero on a healthy simulated GPU (field
	// values: see GetFieldValues).
	d.GetPcieReplayCounterFunc = lostGuard(func() (int, nvml.Return) { return 0, nvml.SUCCESS })
	d.GetNvLinkErrorCounterFunc = func(link int, _ nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
		switch _, ok := d.state(); {
		case !ok:
			return 0, nvml.ERROR_GPU_IS_LOST
		case p.nvlinks == 0:
			return 0, nvml.ERROR_NOT_SUPPORTED
		case link < 0 || link >= p.nvlinks:
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return 0, nvml.SUCCESS
	}

	d.RegisterEventsFunc = func(types uint64, set nvml.EventSet) nvml.Return {
		es, ok := set.(*simEventSet)
		if !ok || es.sim != d.sim {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		s := d.sim
		s.lock()
		defer s.mu.Unlock()
		if d.lost {
			return nvml.ERROR_GPU_IS_LOST
		}
		d.sets[es] |= types
		return nvml.SUCCESS
	}
}

// xidQueueLimit bounds the events an undrained set keeps.
const xidQueueLimit = 1024

// raiseXIDLocked delivers an XID event to every set registered for them
// on d. The caller holds sim.mu.
func (d *simDevice) raiseXIDLocked(xid int) {
	for es, types := range d.sets {
		if types&nvml.EventTypeXidCriticalError == 0 || len(es.queue) >= xidQueueLimit {
			continue
		}
		es.queue = append(es.queue, nvml.EventData{
			Device:            d,
			EventType:         nvml.EventTypeXidCriticalError,
			EventData:         uint64(xid),
			GpuInstanceId:     0xFFFFFFFF, // the whole GPU, not a MIG instance
			ComputeInstanceId: 0xFFFFFFFF,
		})
	}
}

// The calls below go straight to the …Funcs, skipping the mock's call
// recording (see Sim.DeviceGetCount).

func (d *simDevice) GetName() (string, nvml.Return)            { return d.GetNameFunc() }
func (d *simDevice) GetUUID() (string, nvml.Return)            { return d.GetUUIDFunc() }
func (d *simDevice) GetIndex() (int, nvml.Return)              { return d.GetIndexFunc() }
func (d *simDevice) GetMinorNumber() (int, nvml.Return)        { return d.GetMinorNumberFunc() }
func (d *simDevice) GetPciInfo() (nvml.PciInfo, nvml.Return)   { return d.GetPciInfoFunc() }
func (d *simDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) { return d.GetMemoryInfoFunc() }
func (d *simDevice) GetCudaComputeCapability() (int, int, nvml.Return) {
	return d.GetCudaComputeCapabilityFunc()
}
func (d *simDevice) GetMigMode() (int, int, nvml.Return) { return d.GetMigModeFunc() }
func (d *simDevice) GetCurrPcieLinkGeneration() (int, nvml.Return) {
	return d.GetCurrPcieLinkGenerationFunc()
}
func (d *simDevice) GetMaxPcieLinkGeneration() (int, nvml.Return) {
	return d.GetMaxPcieLinkGenerationFunc()
}
func (d *simDevice) GetGpuMaxPcieLinkGeneration() (int, nvml.Return) {
	return d.GetGpuMaxPcieLinkGenerationFunc()
}
func (d *simDevice) GetCurrPcieLinkWidth() (int, nvml.Return) { return d.GetCurrPcieLinkWidthFunc() }
func (d *simDevice) GetMaxPcieLinkWidth() (int, nvml.Return)  { return d.GetMaxPcieLinkWidthFunc() }
func (d *simDevice) GetNvLinkState(link int) (nvml.EnableState, nvml.Return) {
	return d.GetNvLinkStateFunc(link)
}
func (d *simDevice) GetTemperature(s nvml.TemperatureSensors) (uint32, nvml.Return) {
	return d.GetTemperatureFunc(s)
}
func (d *simDevice) GetTemperatureThreshold(t nvml.TemperatureThresholds) (uint32, nvml.Return) {
	return d.GetTemperatureThresholdFunc(t)
}
func (d *simDevice) GetPowerUsage() (uint32, nvml.Return) { return d.GetPowerUsageFunc() }
func (d *simDevice) GetEnforcedPowerLimit() (uint32, nvml.Return) {
	return d.GetEnforcedPowerLimitFunc()
}
func (d *simDevice) GetPowerManagementLimit() (uint32, nvml.Return) {
	return d.GetPowerManagementLimitFunc()
}
func (d *simDevice) GetClockInfo(c nvml.ClockType) (uint32, nvml.Return) {
	return d.GetClockInfoFunc(c)
}
func (d *simDevice) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return d.GetUtilizationRatesFunc()
}
func (d *simDevice) GetCurrentClocksEventReasons() (uint64, nvml.Return) {
	return d.GetCurrentClocksEventReasonsFunc()
}
func (d *simDevice) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	return d.GetCurrentClocksThrottleReasonsFunc()
}
func (d *simDevice) GetTotalEccErrors(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
	return d.GetTotalEccErrorsFunc(t, c)
}
func (d *simDevice) GetRemappedRows() (int, int, bool, bool, nvml.Return) {
	return d.GetRemappedRowsFunc()
}
func (d *simDevice) GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return) {
	return d.GetRetiredPagesPendingStatusFunc()
}
func (d *simDevice) GetPcieReplayCounter() (int, nvml.Return) { return d.GetPcieReplayCounterFunc() }
func (d *simDevice) GetNvLinkErrorCounter(link int, c nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
	return d.GetNvLinkErrorCounterFunc(link, c)
}

// GetFieldValues answers NVML field queries on a simulated GPU as nvml.h
// documents: each value carries its own nvmlReturn. A test that sets the
// mock's GetFieldValuesFunc answers instead; otherwise the instantaneous
// power (NVML_FI_DEV_POWER_INSTANT) is the power reading, GPU_IS_LOST on
// a GPU off the bus, and every other field (the GPU recovery action
// among them, which the mocks' R550/R560 drivers do not have) is
// NOT_SUPPORTED.
func (d *simDevice) GetFieldValues(values []nvml.FieldValue) nvml.Return {
	if d.GetFieldValuesFunc != nil {
		return d.GetFieldValuesFunc(values)
	}
	for i := range values {
		v := &values[i]
		v.ValueType, v.Value = 0, [8]byte{}
		if v.FieldId != fieldPowerInstant {
			v.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			continue
		}
		mw, ret := d.GetPowerUsageFunc()
		v.NvmlReturn = uint32(ret)
		if ret == nvml.SUCCESS {
			v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
			binary.NativeEndian.PutUint32(v.Value[:], mw)
		}
	}
	return nvml.SUCCESS
}

func (d *simDevice) RegisterEvents(types uint64, set nvml.EventSet) nvml.Return {
	return d.RegisterEventsFunc(types, set)
}

// simEventSet is a simulated NVML event set: XIDs raised on the devices
// registered with it wait in its queue until Wait takes them.
type simEventSet struct {
	mock.EventSet
	sim   *Sim
	queue []nvml.EventData // guarded by sim.mu
}

func newSimEventSet(s *Sim) *simEventSet {
	es := &simEventSet{sim: s}
	// Wait never blocks: the Reader only ever drains what is waiting.
	es.WaitFunc = func(uint32) (nvml.EventData, nvml.Return) {
		s.lock()
		defer s.mu.Unlock()
		if len(es.queue) == 0 {
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
		ev := es.queue[0]
		es.queue = es.queue[1:]
		return ev, nvml.SUCCESS
	}
	es.FreeFunc = func() nvml.Return {
		s.lock()
		defer s.mu.Unlock()
		for _, d := range s.devs {
			delete(d.sets, es)
		}
		es.queue = nil
		return nvml.SUCCESS
	}
	return es
}

// Wait implements nvml.EventSet, skipping the mock's call recording.
func (es *simEventSet) Wait(ms uint32) (nvml.EventData, nvml.Return) { return es.WaitFunc(ms) }

// Free implements nvml.EventSet.
func (es *simEventSet) Free() nvml.Return { return es.FreeFunc() }
