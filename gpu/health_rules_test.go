package gpu_test

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"suanli/gpu"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	at time.Time
}

func newClock() *fakeClock {
	return &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.at }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.at = c.at.Add(d)
	c.mu.Unlock()
}

func dev(sim *gpu.Sim, i int) *server.Device { return sim.Devices[i].(*server.Device) }

func byUUID(h gpu.Host) map[string]gpu.Info {
	out := map[string]gpu.Info{}
	for _, g := range h.GPUs {
		out[g.UUID] = g
	}
	return out
}

// Item 1: a GPU that cannot be read is reported missing for its slot,
// by its UUID when it was seen before, by a placeholder when not; the
// others are read as usual, and no GPU is ever reported with UUID "".
func TestUnreadableGPUsAreMissingForTheirSlotOnly(t *testing.T) {
	t.Run("a GPU that stops enumerating shifts the indices after it", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 8)
		r := MustOpen(t, sim, gpu.Options{})
		uuids := sim.UUIDs()
		byIndex := sim.DeviceGetHandleByIndexFunc
		sim.DeviceGetCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
		sim.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
			if i >= 2 {
				i++
			}
			return byIndex(i)
		}
		h := r.Read()
		if len(h.GPUs) != 8 {
			t.Fatalf("%d GPUs reported, want 8 (7 enumerated, 1 missing)", len(h.GPUs))
		}
		got := byUUID(h)
		if len(got) != 8 {
			t.Fatalf("UUIDs repeat or are empty: %+v", h.GPUs)
		}
		for i, u := range uuids {
			g := got[u]
			switch {
			case i == 2:
				if g.Health.Healthy || check(t, g.Health, gpu.CheckPresent).OK {
					t.Errorf("the GPU gone is not missing: %+v", g.Health)
				}
			case !g.Health.Healthy:
				t.Errorf("GPU %s unhealthy: %v", u, g.Health.Reasons)
			case i > 2 && g.Index != i-1:
				t.Errorf("GPU %s at index %d, want %d (shifted)", u, g.Index, i-1)
			}
		}
	})

	t.Run("GPU_IS_LOST and NO_PERMISSION at start give placeholders", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 8)
		byIndex := sim.DeviceGetHandleByIndexFunc
		sim.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
			switch i {
			case 2:
				return nil, nvml.ERROR_GPU_IS_LOST
			case 5:
				return nil, nvml.ERROR_NO_PERMISSION
			}
			return byIndex(i)
		}
		h := MustOpen(t, sim, gpu.Options{}).Read()
		if len(h.GPUs) != 8 {
			t.Fatalf("%d GPUs reported, want 8", len(h.GPUs))
		}
		for i, g := range h.GPUs {
			if g.UUID == "" {
				t.Errorf("slot %d reported with UUID \"\"", i)
			}
			bad := i == 2 || i == 5
			if bad != g.Unreadable || bad != !g.Health.Healthy || (bad && g.UUID != gpu.UnreadableSlot(i)) || !gpu.IsUnreadableSlot(g.UUID) != !bad {
				t.Errorf("slot %d: %s unreadable %v healthy %v (%v)", i, g.UUID, g.Unreadable, g.Health.Healthy, g.Health.Reasons)
			}
		}
		if r := strings.Join(h.GPUs[5].Health.Reasons, ";"); !strings.Contains(r, "slot 5") || !strings.Contains(r, "ERROR_NO_PERMISSION") {
			t.Errorf("slot 5's reason %q does not name the slot and the error", r)
		}
	})

	t.Run("a slot that stops answering keeps its last UUID", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 4)
		r := MustOpen(t, sim, gpu.Options{})
		dev(sim, 2).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NO_PERMISSION }
		byIndex := sim.DeviceGetHandleByIndexFunc
		sim.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
			if i == 1 {
				return nil, nvml.ERROR_GPU_IS_LOST
			}
			return byIndex(i)
		}
		h := r.Read()
		for i, g := range h.GPUs {
			if g.UUID != sim.UUIDs()[i] || g.Index != i || g.Unreadable {
				t.Errorf("slot %d reported as %s (index %d, unreadable %v)", i, g.UUID, g.Index, g.Unreadable)
			}
			if (i == 1 || i == 2) == g.Health.Healthy {
				t.Errorf("GPU %d healthy %v: %v", i, g.Health.Healthy, g.Health.Reasons)
			}
		}
	})
}

// setAll makes every health reading of d answer ret.
func setAll(d *server.Device, ret nvml.Return) {
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, ret }
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, ret }
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, ret }
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return 0, ret }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, ret }
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return 0, ret }
	d.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, ret }
	d.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 0, ret }
}

// Item 4: a GPU answering errors that need a reset or the driver fails;
// NOT_SUPPORTED passes, and so do the errors that only say NVML could not
// answer now.
func TestAGPUAnsweringOnlyErrors(t *testing.T) {
	for _, tc := range []struct {
		ret    nvml.Return
		fails  bool
		detail string
	}{
		{nvml.ERROR_RESET_REQUIRED, true, "needs a GPU reset"},
		{nvml.ERROR_UNKNOWN, true, "needs a GPU reset"},
		{nvml.ERROR_CORRUPTED_INFOROM, true, "needs a GPU reset"},
		{nvml.ERROR_NOT_SUPPORTED, false, "not supported"},
		{nvml.ERROR_TIMEOUT, false, "could not be read"},
		{nvml.ERROR_INSUFFICIENT_RESOURCES, false, "could not be read"},
	} {
		t.Run(tc.ret.Error(), func(t *testing.T) {
			sim := MustSim(t, "dgxh100", 2)
			r := MustOpen(t, sim, gpu.Options{})
			setAll(dev(sim, 0), tc.ret)
			for _, how := range []string{"Read", "Verify"} {
				var v, other gpu.Verdict
				if how == "Read" {
					h := r.Read()
					v, other = h.GPUs[0].Health, h.GPUs[1].Health
				} else {
					vs := r.Verify(sim.UUIDs())
					v, other = vs[sim.UUIDs()[0]], vs[sim.UUIDs()[1]]
				}
				if v.Healthy == tc.fails {
					t.Errorf("%s: healthy %v, want %v (%v)", how, v.Healthy, !tc.fails, v.Reasons)
				}
				if !other.Healthy {
					t.Errorf("%s: the other GPU unhealthy: %v", how, other.Reasons)
				}
				if c := check(t, v, gpu.CheckECCUncorrected); !strings.Contains(c.Detail, tc.detail) {
					t.Errorf("%s: ECC detail %q, want it to say %q", how, c.Detail, tc.detail)
				}
				if tc.fails && !slices.Contains(failing(v), gpu.CheckTemperature) {
					t.Errorf("%s: failing %v, want temperature among them", how, failing(v))
				}
			}
		})
	}
}

// Item 2: a hardware slowdown reason fails a GPU only once it held in
// every read for the window; HW thermal slowdown with the temperature at
// the threshold fails at once.
func TestHWSlowdownNeedsSustainedEvidence(t *testing.T) {
	clock := newClock()
	sim := MustSim(t, "dgxh100", 2, gpu.WithClock(clock.now))
	var bits atomic.Uint64
	reasons := func() (uint64, nvml.Return) { return bits.Load(), nvml.SUCCESS }
	dev(sim, 0).GetCurrentClocksEventReasonsFunc = reasons
	dev(sim, 0).GetCurrentClocksThrottleReasonsFunc = reasons
	r := MustOpen(t, sim, gpu.Options{Now: clock.now})

	clockCheck := func() gpu.Check {
		t.Helper()
		h := r.Read()
		if !h.GPUs[1].Health.Healthy {
			t.Errorf("untouched GPU 1 unhealthy: %v", h.GPUs[1].Health.Reasons)
		}
		return check(t, h.GPUs[0].Health, gpu.CheckClockEvents)
	}

	bits.Store(uint64(nvml.ClocksThrottleReasonHwSlowdown))
	if c := clockCheck(); !c.OK || !strings.Contains(c.Detail, "fails only if it lasts 1m0s") {
		t.Errorf("one read with HW slowdown: %+v", c)
	}
	bits.Store(0)
	clock.advance(5 * time.Second)
	if c := clockCheck(); !c.OK {
		t.Errorf("after the bit cleared: %+v", c)
	}

	bits.Store(uint64(nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksEventReasonSwPowerCap))
	for i := range 12 {
		clock.advance(5 * time.Second)
		if c := clockCheck(); !c.OK {
			t.Fatalf("read %d (%ds into the run) already fails: %+v", i+1, 5*i, c)
		}
	}
	clock.advance(5 * time.Second)
	if c := clockCheck(); c.OK || !strings.Contains(c.Detail, "13 reads in a row over 1m0s") {
		t.Errorf("HW slowdown in every read for 60 s: %+v, want failing", c)
	}
	bits.Store(0)
	clock.advance(5 * time.Second)
	if c := clockCheck(); !c.OK {
		t.Errorf("once it cleared: %+v", c)
	}

	// Thermal context: HW thermal slowdown at the slowdown temperature.
	bits.Store(uint64(nvml.ClocksThrottleReasonHwThermalSlowdown))
	dev(sim, 0).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 91, nvml.SUCCESS }
	if c := clockCheck(); c.OK {
		t.Errorf("HW thermal slowdown at 91 °C (threshold 90): %+v, want failing at once", c)
	}
	dev(sim, 0).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 60, nvml.SUCCESS }
	bits.Store(0)
	clockCheck()
	bits.Store(uint64(nvml.ClocksThrottleReasonHwThermalSlowdown))
	if c := clockCheck(); !c.OK {
		t.Errorf("HW thermal slowdown at 60 °C, first read: %+v, want passing until sustained", c)
	}
}

// Item 2, before a rental: Verify reads a fresh slowdown reason again for
// about a second; a transient passes, one that stays fails.
func TestVerifyResamplesASlowdown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clearFrom int32 // the read from which the bit is clear; 0 never
		ok        bool
		detail    string
	}{
		{"a transient that clears passes", 3, true, "transient"},
		{"one that stays is refused", 0, false, "still set after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := MustSim(t, "dgxh100", 1)
			r := MustOpen(t, sim, gpu.Options{})
			var calls atomic.Int32
			reasons := func() (uint64, nvml.Return) {
				if n := calls.Add(1); tc.clearFrom > 0 && n >= tc.clearFrom {
					return uint64(nvml.ClocksEventReasonGpuIdle), nvml.SUCCESS
				}
				return uint64(nvml.ClocksThrottleReasonHwSlowdown), nvml.SUCCESS
			}
			dev(sim, 0).GetCurrentClocksEventReasonsFunc = reasons
			dev(sim, 0).GetCurrentClocksThrottleReasonsFunc = reasons
			u := sim.UUIDs()[0]
			v := r.Verify([]string{u})[u]
			c := check(t, v, gpu.CheckClockEvents)
			if c.OK != tc.ok || v.Healthy != tc.ok || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("verdict %v, clock check %+v; want ok %v saying %q", v.Healthy, c, tc.ok, tc.detail)
			}
		})
	}
}

// Item 3: XID registration errors other than NOT_SUPPORTED are retried,
// and the check fails while the watch cannot be set up.
func TestXIDWatchIsRetried(t *testing.T) {
	for _, where := range []string{"RegisterEvents", "EventSetCreate"} {
		t.Run(where+" failing", func(t *testing.T) {
			sim := MustSim(t, "dgxh100", 2)
			var fails atomic.Int32
			fails.Store(2)
			if where == "RegisterEvents" {
				register := dev(sim, 0).RegisterEventsFunc
				dev(sim, 0).RegisterEventsFunc = func(types uint64, set nvml.EventSet) nvml.Return {
					if fails.Add(-1) >= 0 {
						return nvml.ERROR_UNKNOWN
					}
					return register(types, set)
				}
			} else {
				create := sim.EventSetCreateFunc
				var n atomic.Int32
				sim.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
					// The first GPU read asks first: fail its tries only.
					if n.Add(1)%2 == 1 && fails.Add(-1) >= 0 {
						return nil, nvml.ERROR_MEMORY
					}
					return create()
				}
			}
			r := MustOpen(t, sim, gpu.Options{}) // first try
			c := check(t, r.Read().GPUs[0].Health, gpu.CheckXID)
			if c.OK || !strings.Contains(c.Detail, "cannot be watched") {
				t.Errorf("xid check while the watch fails: %+v", c)
			}
			h := r.Read() // third try succeeds
			if c := check(t, h.GPUs[0].Health, gpu.CheckXID); !c.OK || c.Detail != "no critical XIDs" {
				t.Errorf("xid check once watched: %+v", c)
			}
			if !h.GPUs[1].Health.Healthy {
				t.Errorf("GPU 1 unhealthy: %v", h.GPUs[1].Health.Reasons)
			}
			MustInject(t, sim, "xid:79@0")
			if g := r.Read().GPUs[0]; g.Health.Healthy {
				t.Error("an XID raised once the watch was set up was missed")
			}
		})
	}
}

// Item 5: a GPU in MIG mode fails the "mig" check.
func TestMIGEnabledGPUIsRefused(t *testing.T) {
	sim := MustSim(t, "dgxh100", 2)
	r := MustOpen(t, sim, gpu.Options{})
	dev(sim, 0).GetMigModeFunc = func() (int, int, nvml.Return) {
		return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
	}
	dev(sim, 1).GetMigModeFunc = func() (int, int, nvml.Return) {
		return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
	}
	vs := r.Verify(sim.UUIDs())
	v := vs[sim.UUIDs()[0]]
	if v.Healthy || !slices.Equal(failing(v), []string{gpu.CheckMIG}) || !strings.Contains(v.Reasons[0], "MIG mode is enabled") {
		t.Errorf("MIG GPU verdict %v, failing %v", v.Reasons, failing(v))
	}
	if g := r.Read().GPUs[0]; !g.MIGEnabled || g.Health.Healthy {
		t.Errorf("Read: MIG %v, healthy %v", g.MIGEnabled, g.Health.Healthy)
	}
	if p := vs[sim.UUIDs()[1]]; !p.Healthy || !strings.Contains(check(t, p, gpu.CheckMIG).Detail, "next GPU reset") {
		t.Errorf("MIG pending: %+v", p)
	}
}

// Item 6 (reader side): critical XIDs can be exported, restored into a
// new Reader (a restarted agent) and cleared.
func TestCriticalXIDsSurviveARestartUntilCleared(t *testing.T) {
	sim := MustSim(t, "dgxh100", 3)
	first, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	MustInject(t, sim, "xid:48@1")
	MustInject(t, sim, "xid:13@2") // ignored: not kept
	first.Read()
	kept := first.CriticalXIDs()
	u := sim.UUIDs()[1]
	if len(kept) != 1 || !slices.Equal(kept[u], []int{48}) {
		t.Fatalf("CriticalXIDs = %v, want GPU 1's 48", kept)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	again := MustOpen(t, sim, gpu.Options{})
	if !again.Read().GPUs[1].Health.Healthy {
		t.Fatal("precondition: a new Reader knows nothing of the XID")
	}
	again.RestoreXIDs(kept)
	h := again.Read()
	if h.GPUs[1].Health.Healthy || !strings.Contains(check(t, h.GPUs[1].Health, gpu.CheckXID).Detail, "48") {
		t.Errorf("restored XID 48 does not fail GPU 1: %+v", h.GPUs[1].Health)
	}
	if !h.GPUs[0].Health.Healthy || !h.GPUs[2].Health.Healthy {
		t.Error("a restored XID touched another GPU")
	}
	again.ClearXIDs(u)
	if v := again.Verify([]string{u})[u]; !v.Healthy || len(again.CriticalXIDs()) != 0 {
		t.Errorf("after ClearXIDs: healthy %v (%v), kept %v", v.Healthy, v.Reasons, again.CriticalXIDs())
	}
}

// Item 7: nvml.Init is retried with backoff, and nothing else is called
// until it succeeds.
func TestInitIsRetriedWithBackoff(t *testing.T) {
	clock := newClock()
	sim := MustSim(t, "dgxh100", 2)
	var initOK atomic.Bool
	var tries atomic.Int32
	init := sim.InitFunc
	sim.InitFunc = func() nvml.Return {
		if tries.Add(1) <= 3 {
			return nvml.ERROR_DRIVER_NOT_LOADED
		}
		initOK.Store(true)
		return init()
	}
	count := sim.DeviceGetCountFunc
	sim.DeviceGetCountFunc = func() (int, nvml.Return) {
		if !initOK.Load() {
			t.Error("DeviceGetCount called while Init fails")
		}
		return count()
	}
	create := sim.EventSetCreateFunc
	sim.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		if !initOK.Load() {
			t.Error("EventSetCreate called while Init fails")
		}
		return create()
	}

	r, err := gpu.Open(sim, gpu.Options{Now: clock.now})
	if err == nil {
		t.Fatal("Open succeeded with Init failing")
	}
	t.Cleanup(func() { _ = r.Close() })
	read := func() gpu.Host {
		h := r.Read()
		r.Verify(sim.UUIDs()[:1])
		r.NewSampler(sim.UUIDs()[:1]).Close()
		return h
	}
	if h := read(); !strings.HasPrefix(h.InitError, "no NVML (retrying): NVML init: ERROR_DRIVER_NOT_LOADED") || len(h.GPUs) != 0 {
		t.Fatalf("while Init fails: %q, %d GPUs", h.InitError, len(h.GPUs))
	}
	if n := tries.Load(); n != 1 {
		t.Errorf("Init tried %d times before its backoff passed, want 1", n)
	}
	// Backoff: 1 s, then 2 s, then 4 s.
	for i, wait := range []time.Duration{time.Second, 2 * time.Second} {
		clock.advance(wait - time.Millisecond)
		read()
		if n := tries.Load(); n != int32(i+1) {
			t.Errorf("Init tried %d times %v after the last try, want %d", n, wait-time.Millisecond, i+1)
		}
		clock.advance(time.Millisecond)
		if h := read(); h.InitError == "" {
			t.Fatalf("try %d succeeded early", i+2)
		}
	}
	clock.advance(4 * time.Second)
	h := read()
	if h.InitError != "" || len(h.GPUs) != 2 || !h.GPUs[0].Health.Healthy || h.DriverVersion == "" {
		t.Fatalf("after Init succeeded: %q, %d GPUs, driver %q", h.InitError, len(h.GPUs), h.DriverVersion)
	}
	MustInject(t, sim, "xid:79@1")
	if r.Read().GPUs[1].Health.Healthy {
		t.Error("XIDs are not watched after a late Init")
	}
}

// fieldAnswer makes the GPU recovery action field answer ret and action.
func fieldAnswer(d *server.Device, ret nvml.Return, action uint32) {
	d.GetFieldValuesFunc = func(values []nvml.FieldValue) nvml.Return {
		for i := range values {
			v := &values[i]
			if v.FieldId != nvml.FI_DEV_GET_GPU_RECOVERY_ACTION {
				v.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				continue
			}
			v.NvmlReturn, v.ValueType = uint32(ret), uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
			binary.LittleEndian.PutUint32(v.Value[:], action)
		}
		return nvml.SUCCESS
	}
}

// Item 8: NVLinks that should be up, the PCIe replay and NVLink error
// counters' rise, and NVIDIA's recovery action.
func TestDCGMCoverage(t *testing.T) {
	t.Run("NVLinks seen up that go down fail", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 2)
		r := MustOpen(t, sim, gpu.Options{})
		state := dev(sim, 0).GetNvLinkStateFunc
		dev(sim, 0).GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if link == 3 || link == 7 {
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
			return state(link)
		}
		h := r.Read()
		c := check(t, h.GPUs[0].Health, gpu.CheckNVLink)
		if c.OK || !strings.Contains(c.Detail, "NVLink 3, 7 down (16 of the 18") {
			t.Errorf("nvlink check %+v", c)
		}
		if c := check(t, h.GPUs[1].Health, gpu.CheckNVLink); !c.OK || c.Detail != "18 of 18 NVLinks up" {
			t.Errorf("GPU 1's nvlink check %+v", c)
		}
	})

	t.Run("the operator's expected count is judged from the start", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 1)
		state := dev(sim, 0).GetNvLinkStateFunc
		dev(sim, 0).GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if link == 17 {
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
			return state(link)
		}
		if c := check(t, MustOpen(t, sim, gpu.Options{}).Read().GPUs[0].Health, gpu.CheckNVLink); !c.OK {
			t.Errorf("without an expected count a link never seen up fails: %+v", c)
		}
		if c := check(t, MustOpen(t, sim, gpu.Options{ExpectNVLinks: 18}).Read().GPUs[0].Health, gpu.CheckNVLink); c.OK {
			t.Errorf("18 links expected, 17 up: %+v", c)
		}
	})

	t.Run("PCIe replays: more than 8 a minute fail", func(t *testing.T) {
		clock := newClock()
		sim := MustSim(t, "dgxh100", 1, gpu.WithClock(clock.now))
		var replays atomic.Int32
		replays.Store(100)
		dev(sim, 0).GetPcieReplayCounterFunc = func() (int, nvml.Return) { return int(replays.Load()), nvml.SUCCESS }
		r := MustOpen(t, sim, gpu.Options{Now: clock.now})
		for i, step := range []struct {
			add int32
			ok  bool
		}{{3, true}, {5, true}, {4, false}, {0, true}} {
			clock.advance(30 * time.Second)
			replays.Add(step.add)
			if c := check(t, r.Read().GPUs[0].Health, gpu.CheckPCIeReplay); c.OK != step.ok {
				t.Errorf("step %d (+%d): %+v, want ok %v", i, step.add, c, step.ok)
			}
		}
	})

	t.Run("an NVLink replay error fails, a few CRC errors do not", func(t *testing.T) {
		clock := newClock()
		sim := MustSim(t, "dgxh100", 1, gpu.WithClock(clock.now))
		var replay, crc atomic.Uint64
		dev(sim, 0).GetNvLinkErrorCounterFunc = func(link int, c nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
			switch {
			case link == 5 && c == nvml.NVLINK_ERROR_DL_REPLAY:
				return replay.Load(), nvml.SUCCESS
			case c == nvml.NVLINK_ERROR_DL_CRC_FLIT:
				return crc.Load(), nvml.SUCCESS
			}
			return 0, nvml.SUCCESS
		}
		r := MustOpen(t, sim, gpu.Options{Now: clock.now})
		clock.advance(5 * time.Second)
		crc.Add(20)
		if c := check(t, r.Read().GPUs[0].Health, gpu.CheckNVLinkErrors); !c.OK {
			t.Errorf("20 CRC errors on each link in 5 s: %+v", c)
		}
		clock.advance(5 * time.Second)
		replay.Add(1)
		if c := check(t, r.Read().GPUs[0].Health, gpu.CheckNVLinkErrors); c.OK || !strings.Contains(c.Detail, "on link 5") {
			t.Errorf("one replay error on link 5: %+v", c)
		}
		clock.advance(5 * time.Second)
		crc.Add(200000)
		if c := check(t, r.Read().GPUs[0].Health, gpu.CheckNVLinkErrors); c.OK {
			t.Errorf("a CRC storm: %+v", c)
		}
		clock.advance(2 * time.Minute)
		if c := check(t, r.Read().GPUs[0].Health, gpu.CheckNVLinkErrors); !c.OK {
			t.Errorf("no new errors for two minutes: %+v", c)
		}
	})

	t.Run("NVIDIA's recovery action", func(t *testing.T) {
		for _, tc := range []struct {
			ret    nvml.Return
			action uint32
			ok     bool
			detail string
		}{
			{nvml.SUCCESS, 0, true, "none needed"},
			{nvml.SUCCESS, 1, false, "reset the GPU"},
			{nvml.SUCCESS, 2, false, "reboot the node"},
			{nvml.SUCCESS, 4, false, "drain peer-to-peer traffic and reset the GPU"},
			{nvml.ERROR_NOT_SUPPORTED, 0, true, "not reported by this driver"},
			{nvml.ERROR_INVALID_ARGUMENT, 0, true, "not reported by this driver"},
			{nvml.ERROR_RESET_REQUIRED, 0, false, "needs a GPU reset"},
		} {
			sim := MustSim(t, "dgxh100", 2)
			r := MustOpen(t, sim, gpu.Options{})
			fieldAnswer(dev(sim, 0), tc.ret, tc.action)
			vs := r.Verify(sim.UUIDs())
			c := check(t, vs[sim.UUIDs()[0]], gpu.CheckRecovery)
			if c.OK != tc.ok || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("%s, action %d: %+v, want ok %v saying %q", tc.ret, tc.action, c, tc.ok, tc.detail)
			}
			if !vs[sim.UUIDs()[1]].Healthy {
				t.Errorf("GPU 1 unhealthy: %v", vs[sim.UUIDs()[1]].Reasons)
			}
		}
	})
}
