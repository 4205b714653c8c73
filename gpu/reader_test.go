package gpu_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"suanli/gpu"
)

// MustSim builds a simulated host or fails the test.
func MustSim(tb testing.TB, system string, n int, opts ...gpu.SimOption) *gpu.Sim {
	tb.Helper()
	s, err := gpu.Simulate(system, n, opts...)
	if err != nil {
		tb.Fatalf("Simulate(%q, %d): %v", system, n, err)
	}
	return s
}

// MustOpen opens a Reader on lib, closed when the test ends.
func MustOpen(tb testing.TB, lib nvml.Interface, opts gpu.Options) *gpu.Reader {
	tb.Helper()
	r, err := gpu.Open(lib, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return r
}

// failing returns the names of the checks that failed.
func failing(v gpu.Verdict) []string {
	var out []string
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

func check(t *testing.T, v gpu.Verdict, name string) gpu.Check {
	t.Helper()
	for _, c := range v.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("verdict has no %q check: %+v", name, v.Checks)
	return gpu.Check{}
}

func TestOpenWithoutNVMLCallsNothingAfterInit(t *testing.T) {
	forbidden := func(name string) { t.Errorf("%s called after Init failed", name) }
	lib := &mock.Interface{
		InitFunc:     func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND },
		ShutdownFunc: func() nvml.Return { forbidden("Shutdown"); return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) {
			forbidden("DeviceGetCount")
			return 0, nvml.SUCCESS
		},
		DeviceGetHandleByUUIDFunc: func(string) (nvml.Device, nvml.Return) {
			forbidden("DeviceGetHandleByUUID")
			return nil, nvml.ERROR_NOT_FOUND
		},
		SystemGetDriverVersionFunc: func() (string, nvml.Return) {
			forbidden("SystemGetDriverVersion")
			return "", nvml.SUCCESS
		},
		ExtensionsFunc: func() nvml.ExtendedInterface {
			forbidden("Extensions")
			return nil
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) {
			forbidden("EventSetCreate")
			return nil, nvml.ERROR_NOT_SUPPORTED
		},
	}

	// A stopped clock: the Reader retries Init only once its backoff has
	// passed (TestInitIsRetriedWithBackoff), so here it tries once.
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r, err := gpu.Open(lib, gpu.Options{Now: func() time.Time { return at }})
	if err == nil || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") {
		t.Fatalf("Open error = %v, want one naming ERROR_LIBRARY_NOT_FOUND", err)
	}
	h := r.Read()
	if !strings.Contains(h.InitError, "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("InitError = %q, want it to name ERROR_LIBRARY_NOT_FOUND", h.InitError)
	}
	if len(h.GPUs) != 0 || h.Simulated {
		t.Errorf("host without NVML = %d GPUs, simulated %v; want none, false", len(h.GPUs), h.Simulated)
	}
	v := r.Verify([]string{"GPU-1"})
	if v["GPU-1"].Healthy || !strings.Contains(strings.Join(v["GPU-1"].Reasons, ";"), "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("Verify without NVML = %+v, want unhealthy naming the init error", v["GPU-1"])
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n := len(lib.InitCalls()); n != 1 {
		t.Errorf("Init called %d times, want 1", n)
	}
}

func TestReadInventoryOfSimulatedDGXH100(t *testing.T) {
	sim := MustSim(t, "dgxh100", 8)
	h := MustOpen(t, sim, gpu.Options{}).Read()

	if !h.Simulated || h.Model != "dgxh100" {
		t.Errorf("Simulated, Model = %v, %q; want true, dgxh100", h.Simulated, h.Model)
	}
	if h.DriverVersion != "550.54.15" || h.CUDADriverVersion != "12.4" || h.NVMLVersion != "12.550.54.15" {
		t.Errorf("versions = driver %q, CUDA %q, NVML %q", h.DriverVersion, h.CUDADriverVersion, h.NVMLVersion)
	}
	if h.InitError != "" || h.At.IsZero() {
		t.Errorf("InitError %q, At %v", h.InitError, h.At)
	}
	if len(h.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(h.GPUs))
	}
	busPattern := regexp.MustCompile(`^[0-9a-f]{8}:[0-9a-f]{2}:00\.0$`)
	buses, uuids := map[string]bool{}, map[string]bool{}
	wantChecks := gpu.CheckNames()
	for i, g := range h.GPUs {
		if g.Index != i {
			t.Errorf("GPU %d has index %d", i, g.Index)
		}
		if !strings.Contains(g.Name, "H100 80GB HBM3") {
			t.Errorf("GPU %d name %q", i, g.Name)
		}
		if g.MemoryTotalMiB != 81920 || g.ComputeCapability != "9.0" || g.MIGEnabled {
			t.Errorf("GPU %d: %d MiB, CC %q, MIG %v; want 81920, 9.0, false", i, g.MemoryTotalMiB, g.ComputeCapability, g.MIGEnabled)
		}
		if g.PCIeGen != 5 || g.PCIeGenMax != 5 || g.PCIeWidth != 16 || g.PCIeWidthMax != 16 {
			t.Errorf("GPU %d PCIe Gen %d/%d x%d/%d, want Gen 5 x16", i, g.PCIeGen, g.PCIeGenMax, g.PCIeWidth, g.PCIeWidthMax)
		}
		if g.NVLinksUp != 18 {
			t.Errorf("GPU %d has %d NVLinks up, want 18", i, g.NVLinksUp)
		}
		if !busPattern.MatchString(g.PCIBusID) || buses[g.PCIBusID] {
			t.Errorf("GPU %d bus id %q: malformed or repeated", i, g.PCIBusID)
		}
		if !strings.HasPrefix(g.UUID, "GPU-") || uuids[g.UUID] {
			t.Errorf("GPU %d UUID %q: malformed or repeated", i, g.UUID)
		}
		buses[g.PCIBusID], uuids[g.UUID] = true, true

		tm := g.Telemetry
		if tm.TemperatureC < 35 || tm.TemperatureC > 45 || tm.SlowdownTempC != 90 {
			t.Errorf("GPU %d at %d °C, slowdown %d °C", i, tm.TemperatureC, tm.SlowdownTempC)
		}
		if tm.PowerW < 70 || tm.PowerW > 120 || tm.PowerLimitW != 700 {
			t.Errorf("GPU %d draws %.1f W of %.1f W", i, tm.PowerW, tm.PowerLimitW)
		}
		if tm.SMClockMHz == 0 || tm.MemClockMHz == 0 || tm.MemoryUsedMiB == 0 || tm.MemoryUsedMiB >= g.MemoryTotalMiB {
			t.Errorf("GPU %d telemetry %+v", i, tm)
		}

		if !g.Health.Healthy || len(g.Health.Reasons) != 0 {
			t.Errorf("GPU %d unhealthy: %v", i, g.Health.Reasons)
		}
		var names []string
		for _, c := range g.Health.Checks {
			names = append(names, c.Name)
			if c.Detail == "" {
				t.Errorf("GPU %d check %s has no detail", i, c.Name)
			}
		}
		if !slices.Equal(names, wantChecks) {
			t.Errorf("GPU %d checks %v, want %v", i, names, wantChecks)
		}
	}
}

func TestXIDs(t *testing.T) {
	t.Run("application XIDs are ignored by default", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 4)
		r := MustOpen(t, sim, gpu.Options{})
		for _, x := range []int{13, 43, 31, 45, 68, 109} {
			MustInject(t, sim, fmt.Sprintf("xid:%d@1", x))
		}
		g := r.Read().GPUs[1]
		if !g.Health.Healthy {
			t.Fatalf("GPU with only application XIDs unhealthy: %v", g.Health.Reasons)
		}
		if d := check(t, g.Health, "xid").Detail; !strings.Contains(d, "ignored") || !strings.Contains(d, "13") {
			t.Errorf("xid detail %q does not mention the ignored XID 13", d)
		}
	})

	t.Run("a critical XID is sticky until cleared", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 4)
		r := MustOpen(t, sim, gpu.Options{})
		MustInject(t, sim, "xid:48@2")
		for range 3 {
			h := r.Read()
			if h.GPUs[2].Health.Healthy {
				t.Fatal("GPU 2 healthy after XID 48")
			}
			if !h.GPUs[1].Health.Healthy {
				t.Fatalf("GPU 1 unhealthy: %v", h.GPUs[1].Health.Reasons)
			}
		}
		uuid := r.Read().GPUs[2].UUID
		r.ClearXIDs(uuid)
		if v := r.Verify([]string{uuid})[uuid]; !v.Healthy {
			t.Errorf("GPU 2 still unhealthy after ClearXIDs: %v", v.Reasons)
		}
	})

	t.Run("the ignore list is configurable", func(t *testing.T) {
		sim := MustSim(t, "dgxa100", 2)
		r := MustOpen(t, sim, gpu.Options{IgnoreXIDs: []int{79}})
		MustInject(t, sim, "xid:79@0")
		MustInject(t, sim, "xid:13@1")
		h := r.Read()
		if !h.GPUs[0].Health.Healthy {
			t.Errorf("XID 79 made GPU 0 unhealthy though ignored: %v", h.GPUs[0].Health.Reasons)
		}
		if h.GPUs[1].Health.Healthy {
			t.Error("XID 13 left GPU 1 healthy though no longer ignored")
		}
	})

	t.Run("an empty ignore list ignores nothing", func(t *testing.T) {
		sim := MustSim(t, "dgxa100", 1)
		r := MustOpen(t, sim, gpu.Options{IgnoreXIDs: []int{}})
		MustInject(t, sim, "xid:43@0")
		if g := r.Read().GPUs[0]; g.Health.Healthy {
			t.Error("XID 43 ignored with an empty ignore list")
		}
	})

	t.Run("without event sets the check says so and passes", func(t *testing.T) {
		sim := MustSim(t, "dgxh200", 2)
		sim.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
		r := MustOpen(t, sim, gpu.Options{})
		MustInject(t, sim, "xid:79@0")
		g := r.Read().GPUs[0]
		c := check(t, g.Health, "xid")
		if !c.OK || !strings.Contains(c.Detail, "not supported") || !g.Health.Healthy {
			t.Errorf("xid check without event sets = %+v, healthy %v", c, g.Health.Healthy)
		}
	})

	t.Run("a GPU refusing registration passes, the others are watched", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 2)
		sim.Devices[0].(*server.Device).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
		r := MustOpen(t, sim, gpu.Options{})
		MustInject(t, sim, "xid:79@1")
		h := r.Read()
		if c := check(t, h.GPUs[0].Health, "xid"); !c.OK || !strings.Contains(c.Detail, "not supported") {
			t.Errorf("GPU 0 xid check = %+v", c)
		}
		if h.GPUs[1].Health.Healthy {
			t.Error("GPU 1 healthy after XID 79")
		}
	})
}

// TestPCIeLink: a narrower link always fails; a lower generation fails
// only on a busy GPU, since idle GPUs lower it to save power.
func TestPCIeLink(t *testing.T) {
	cases := []struct {
		name       string
		gen, width int
		util       uint32
		ok         bool
	}{
		{"full link", 5, 16, 0, true},
		{"idle GPU at Gen 1 is saving power", 1, 16, 0, true},
		{"lightly used GPU below max generation", 4, 16, 5, true},
		{"busy GPU below max generation", 3, 16, 80, false},
		{"narrow link while idle", 5, 8, 0, false},
		{"narrow, slow link while idle", 1, 8, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim := MustSim(t, "dgxh100", 2)
			d := sim.Devices[0].(*server.Device)
			d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return tc.gen, nvml.SUCCESS }
			d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return tc.width, nvml.SUCCESS }
			d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
				return nvml.Utilization{Gpu: tc.util}, nvml.SUCCESS
			}
			r := MustOpen(t, sim, gpu.Options{})
			uuids := sim.UUIDs()
			v := r.Verify(uuids)
			c := check(t, v[uuids[0]], "pcie_link")
			if c.OK != tc.ok || v[uuids[0]].Healthy != tc.ok {
				t.Errorf("Gen %d x%d at %d%%: check %+v, healthy %v; want ok %v", tc.gen, tc.width, tc.util, c, v[uuids[0]].Healthy, tc.ok)
			}
			if !v[uuids[1]].Healthy {
				t.Errorf("untouched GPU 1 unhealthy: %v", v[uuids[1]].Reasons)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	sim := MustSim(t, "dgxb200", 2)
	r := MustOpen(t, sim, gpu.Options{})
	good := sim.UUIDs()[1]
	v := r.Verify([]string{"GPU-00000000-dead-beef-0000-000000000000", good})
	if len(v) != 2 {
		t.Fatalf("Verify of 2 UUIDs returned %d verdicts", len(v))
	}
	unknown := v["GPU-00000000-dead-beef-0000-000000000000"]
	if unknown.Healthy || !slices.Equal(failing(unknown), []string{"present"}) {
		t.Errorf("unknown UUID verdict %+v, want only present failing", unknown)
	}
	if len(unknown.Reasons) != 1 || !strings.Contains(unknown.Reasons[0], "GPU missing (fallen off the bus?)") {
		t.Errorf("unknown UUID reasons %q", unknown.Reasons)
	}
	if !v[good].Healthy || len(v[good].Checks) != len(gpu.CheckNames()) {
		t.Errorf("known GPU verdict %+v", v[good])
	}
}

func TestClosedReaderCallsNoNVML(t *testing.T) {
	sim := MustSim(t, "dgxh100", 1)
	r, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	sim.DeviceGetCountFunc = func() (int, nvml.Return) {
		t.Error("DeviceGetCount called after Close")
		return 0, nvml.SUCCESS
	}
	if h := r.Read(); h.InitError == "" || len(h.GPUs) != 0 {
		t.Errorf("Read after Close = %+v", h)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestLostGPUsAreReportedMissing(t *testing.T) {
	t.Run("a call answering GPU_IS_LOST mid-read", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 3)
		r := MustOpen(t, sim, gpu.Options{})
		sim.Devices[1].(*server.Device).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		h := r.Read()
		g := h.GPUs[1]
		if g.Health.Healthy || !slices.Equal(failing(g.Health), []string{"present"}) || g.UUID != sim.UUIDs()[1] {
			t.Errorf("GPU 1 = %s, failing %v (%q)", g.UUID, failing(g.Health), g.Health.Reasons)
		}
		if g.Telemetry.PowerW != 0 {
			t.Errorf("missing GPU still reports telemetry %+v", g.Telemetry)
		}
		if !h.GPUs[0].Health.Healthy || !h.GPUs[2].Health.Healthy {
			t.Error("the GPUs still answering are reported unhealthy")
		}
	})

	t.Run("a GPU NVML no longer enumerates", func(t *testing.T) {
		sim := MustSim(t, "dgxh100", 4)
		r := MustOpen(t, sim, gpu.Options{})
		sim.DeviceGetCountFunc = func() (int, nvml.Return) { return 3, nvml.SUCCESS }
		h := r.Read()
		if len(h.GPUs) != 4 {
			t.Fatalf("%d GPUs listed, want the 3 enumerated and the one gone", len(h.GPUs))
		}
		gone := h.GPUs[3]
		if gone.UUID != sim.UUIDs()[3] || gone.Index != 3 || gone.PCIBusID == "" || gone.Health.Healthy {
			t.Errorf("vanished GPU reported as %+v", gone)
		}
		if check(t, gone.Health, "present").OK {
			t.Error("vanished GPU passes the present check")
		}
	})
}

// TestRealNVML opens the host's own NVML: without a driver (CI) the
// Reader must report why and survive every call; with one, every GPU
// must have a UUID and a full set of checks.
func TestRealNVML(t *testing.T) {
	r, err := gpu.Open(nvml.New(), gpu.Options{})
	h := r.Read()
	v := r.Verify([]string{"GPU-not-here"})
	if cerr := r.Close(); cerr != nil {
		t.Errorf("Close: %v", cerr)
	}
	if err != nil {
		if h.InitError == "" || len(h.GPUs) != 0 || v["GPU-not-here"].Healthy {
			t.Errorf("without NVML (%v): host %+v, verdict %+v", err, h, v)
		}
		t.Skipf("no NVML here: %v", err)
	}
	if h.Simulated || h.DriverVersion == "" {
		t.Errorf("real host: simulated %v, driver %q", h.Simulated, h.DriverVersion)
	}
	for _, g := range h.GPUs {
		t.Logf("GPU %d %s %s %s: %v", g.Index, g.Name, g.UUID, g.PCIBusID, g.Health.Reasons)
		if g.UUID == "" || len(g.Health.Checks) != len(gpu.CheckNames()) {
			t.Errorf("GPU %d: UUID %q, %d checks", g.Index, g.UUID, len(g.Health.Checks))
		}
	}
	if v["GPU-not-here"].Healthy {
		t.Error("an unknown UUID verified healthy")
	}
}
