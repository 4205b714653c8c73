package gpu_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"suanli/catalog"
	"suanli/gpu"
)

func TestSimulateDGXSystems(t *testing.T) {
	cases := []struct {
		system, name, driver, cuda string
		nvlinks                    int
	}{
		{"dgxa100", "A100-SXM4-40GB", "550.54.15", "12.4", 12},
		{"dgxh100", "H100 80GB HBM3", "550.54.15", "12.4", 18},
		{"dgxh200", "H200", "550.54.15", "12.4", 18},
		{"dgxb200", "B200", "560.28.03", "12.6", 18},
	}
	for _, tc := range cases {
		t.Run(tc.system, func(t *testing.T) {
			h := MustOpen(t, MustSim(t, tc.system, 0), gpu.Options{}).Read()
			if len(h.GPUs) != 8 || h.Model != tc.system || h.DriverVersion != tc.driver || h.CUDADriverVersion != tc.cuda {
				t.Fatalf("%d GPUs, model %q, driver %q, CUDA %q", len(h.GPUs), h.Model, h.DriverVersion, h.CUDADriverVersion)
			}
			for _, g := range h.GPUs {
				if !strings.Contains(g.Name, tc.name) || g.NVLinksUp != tc.nvlinks || !g.Health.Healthy {
					t.Errorf("GPU %d: %q, %d NVLinks, healthy %v (%v)", g.Index, g.Name, g.NVLinksUp, g.Health.Healthy, g.Health.Reasons)
				}
			}
		})
	}

	for _, bad := range []struct {
		system string
		n      int
	}{{"dgx-1", 8}, {"H100", 8}, {"dgxh100", -1}, {"dgxh100", 65}} {
		if _, err := gpu.Simulate(bad.system, bad.n); err == nil {
			t.Errorf("Simulate(%q, %d) accepted", bad.system, bad.n)
		}
	}
}

// TestSimulateCatalogMatchesTheCatalogue: a simulated host of every
// catalogue model reports names the catalogue recognises, and about the
// memory it lists.
func TestSimulateCatalogMatchesTheCatalogue(t *testing.T) {
	models := catalog.GPUModels()
	var slugs []string
	for _, m := range models {
		slugs = append(slugs, m.Slug)
	}
	if got := gpu.SimulatedModels(); !slices.Equal(got, slugs) {
		t.Errorf("SimulatedModels() = %v, catalogue has %v", got, slugs)
	}
	for _, m := range models {
		t.Run(m.Slug, func(t *testing.T) {
			sim, err := gpu.SimulateCatalog(m.Slug, 2)
			if err != nil {
				t.Fatal(err)
			}
			h := MustOpen(t, sim, gpu.Options{}).Read()
			if h.Model != m.Slug || len(h.GPUs) != 2 {
				t.Fatalf("model %q, %d GPUs", h.Model, len(h.GPUs))
			}
			for _, g := range h.GPUs {
				if !strings.Contains(g.Name, m.NVMLNameContains) {
					t.Errorf("name %q lacks the catalogue's %q", g.Name, m.NVMLNameContains)
				}
				if gb := float64(g.MemoryTotalMiB) / 1024; math.Abs(gb-float64(m.VRAMGB)) > 0.1*float64(m.VRAMGB) {
					t.Errorf("%d MiB is not about the catalogue's %d GB", g.MemoryTotalMiB, m.VRAMGB)
				}
				if !g.Health.Healthy {
					t.Errorf("GPU %d unhealthy: %v", g.Index, g.Health.Reasons)
				}
				wantLinks := m.FormFactor != "PCIe"
				if (g.NVLinksUp > 0) != wantLinks {
					t.Errorf("%s part with %d NVLinks up", m.FormFactor, g.NVLinksUp)
				}
				if g.Telemetry.PowerLimitW != float64(m.TDPW) {
					t.Errorf("power limit %.0f W, catalogue TDP %d W", g.Telemetry.PowerLimitW, m.TDPW)
				}
			}
		})
	}
	if _, err := gpu.SimulateCatalog("rtx-5090", 1); err == nil {
		t.Error("SimulateCatalog of an unknown slug accepted")
	}
}

func TestSimulateModel(t *testing.T) {
	cases := []struct {
		name      string
		memMiB    uint64
		wantMiB   uint64
		cc        string
		nvlinks   int
		pcieGen   int
		mig, ecc  bool
		limitWatt float64
	}{
		{"NVIDIA GeForce RTX 4090", 0, 24564, "8.9", 0, 4, false, false, 450},
		{"GeForce RTX 3090", 0, 24576, "8.6", 0, 4, false, false, 350},
		{"NVIDIA L40S", 0, 46068, "8.9", 0, 4, false, true, 350},
		{"A100-SXM4-80GB", 0, 81920, "8.0", 12, 4, false, true, 400},
		{"NVIDIA H100 PCIe", 0, 81559, "9.0", 0, 5, false, true, 350},
		{"NVIDIA H20", 0, 97871, "9.0", 18, 5, false, true, 400},
		{"Tesla V100-SXM2-16GB", 16384, 16384, "7.0", 6, 3, false, true, 300},
		{"Some Future GPU", 12288, 12288, "8.6", 0, 4, false, true, 300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim, err := gpu.SimulateModel(tc.name, tc.memMiB, 1)
			if err != nil {
				t.Fatal(err)
			}
			h := MustOpen(t, sim, gpu.Options{}).Read()
			if h.Model != tc.name || len(h.GPUs) != 1 {
				t.Fatalf("model %q, %d GPUs", h.Model, len(h.GPUs))
			}
			g := h.GPUs[0]
			got := fmt.Sprintf("%q %d MiB CC %s, %d NVLinks, Gen %d, MIG %v, %.0f W",
				g.Name, g.MemoryTotalMiB, g.ComputeCapability, g.NVLinksUp, g.PCIeGenMax, g.MIGEnabled, g.Telemetry.PowerLimitW)
			want := fmt.Sprintf("%q %d MiB CC %s, %d NVLinks, Gen %d, MIG %v, %.0f W",
				tc.name, tc.wantMiB, tc.cc, tc.nvlinks, tc.pcieGen, tc.mig, tc.limitWatt)
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			ecc := check(t, g.Health, "ecc_uncorrected")
			if supported := !strings.Contains(ecc.Detail, "not supported"); supported != tc.ecc {
				t.Errorf("ECC check %q, want ECC supported %v", ecc.Detail, tc.ecc)
			}
			if !g.Health.Healthy {
				t.Errorf("unhealthy: %v", g.Health.Reasons)
			}
		})
	}
	if _, err := gpu.SimulateModel("", 0, 1); err == nil {
		t.Error("SimulateModel without a name accepted")
	}
}

func TestSimulatedUUIDsSurviveARestart(t *testing.T) {
	first := MustSim(t, "dgxh100", 8)
	again := MustSim(t, "dgxh100", 8, gpu.WithUUIDs(first.UUIDs()))
	if !slices.Equal(first.UUIDs(), again.UUIDs()) {
		t.Fatalf("UUIDs %v after restart, were %v", again.UUIDs(), first.UUIDs())
	}
	h := MustOpen(t, again, gpu.Options{}).Read()
	for i, g := range h.GPUs {
		if g.UUID != first.UUIDs()[i] {
			t.Errorf("GPU %d reads UUID %s, want %s", i, g.UUID, first.UUIDs()[i])
		}
	}

	grown := MustSim(t, "dgxh100", 4, gpu.WithUUIDs([]string{"GPU-a", "GPU-b"}))
	u := grown.UUIDs()
	if u[0] != "GPU-a" || u[1] != "GPU-b" || u[2] == "" || u[2] == u[3] {
		t.Errorf("UUIDs %v: want the two given, then two new distinct ones", u)
	}
	if _, err := gpu.Simulate("dgxh100", 2, gpu.WithUUIDs([]string{"GPU-a", "GPU-a"})); err == nil {
		t.Error("duplicate UUIDs accepted")
	}
}

// TestSimulatedHostDoesNotGrowWithReads: go-nvml's mocks record every
// call; a simulated agent reading for weeks must not keep them.
func TestSimulatedHostDoesNotGrowWithReads(t *testing.T) {
	sim := MustSim(t, "dgxh100", 2)
	r := MustOpen(t, sim, gpu.Options{})
	for range 10 {
		r.Read()
		r.Verify(sim.UUIDs())
	}
	d := sim.Devices[0].(*server.Device)
	if n := len(d.GetTemperatureCalls()) + len(d.GetNvLinkStateCalls()) + len(d.GetTotalEccErrorsCalls()); n != 0 {
		t.Errorf("mock recorded %d calls", n)
	}
	if n := len(sim.DeviceGetHandleByIndexCalls()) + len(sim.DeviceGetHandleByUUIDCalls()); n != 0 {
		t.Errorf("mock server recorded %d calls", n)
	}
}

// A simulated GPU reports the utilisation a test sets, as NVML would
// under a workload, and stays healthy at full load.
func TestSimulatedUtilisation(t *testing.T) {
	sim := MustSim(t, "dgxh100", 2)
	r := MustOpen(t, sim, gpu.Options{})
	if h := r.Read(); h.GPUs[0].Telemetry.UtilizationPct != 0 || h.GPUs[1].Telemetry.UtilizationPct != 0 {
		t.Fatalf("a new simulated host is busy: %d %%, %d %%", h.GPUs[0].Telemetry.UtilizationPct, h.GPUs[1].Telemetry.UtilizationPct)
	}
	if err := sim.SetUtilization(1, 80); err != nil {
		t.Fatal(err)
	}
	h := r.Read()
	if got := h.GPUs[1].Telemetry.UtilizationPct; got != 80 {
		t.Errorf("GPU 1 at %d %%, want 80", got)
	}
	if got := h.GPUs[0].Telemetry.UtilizationPct; got != 0 {
		t.Errorf("GPU 0 at %d %%, want 0 (only GPU 1 was loaded)", got)
	}
	if !h.GPUs[1].Health.Healthy {
		t.Errorf("a loaded GPU fails its checks: %v", h.GPUs[1].Health.Reasons)
	}
	if sim.SetUtilization(2, 10) == nil || sim.SetUtilization(0, 101) == nil {
		t.Error("a GPU the host lacks, or 101 %, accepted")
	}
}
