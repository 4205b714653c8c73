package benchmarks

import (
	"math"
	"strings"
	"testing"

	"suanli/agent"
	"suanli/catalog"
	"suanli/gpu"
)

// h100Run is a plausible run of two H100 SXM: 794 TFLOPS BF16 at the
// 1980 MHz the GPUs boost to, 690 W, 71 °C.
func h100Run() agent.BenchmarkReport {
	run := agent.BenchmarkReport{GPUUUIDs: []string{"GPU-a", "GPU-b"},
		Loads: []agent.Load{
			{Metric: agent.MetricBF16GEMM, Tool: "pytorch", Status: agent.LoadOK, Value: 794, PerGPU: []float64{793, 795}},
			{Metric: agent.MetricFP16GEMM, Tool: "pytorch", Status: agent.LoadOK, Value: 790},
			{Metric: agent.MetricD2D, Tool: "pytorch", Status: agent.LoadOK, Value: 2950},
			{Metric: agent.MetricAllReduceBus, Tool: "nccl-tests", Status: agent.LoadAbsent},
		}}
	for i := range 2 {
		run.Telemetry = append(run.Telemetry, agent.Sample{Index: i, T: gpu.Telemetry{TemperatureC: 71, PowerW: 690, PowerLimitW: 700, SMClockMHz: 1980}})
	}
	return run
}

func h100Nominal(t *testing.T) (agent.Nominal, catalog.GPUModel) {
	t.Helper()
	m, ok := catalog.GPUModelBySlug("h100-sxm")
	if !ok {
		t.Fatal("h100-sxm missing")
	}
	return agent.Nominal{Model: m.Slug, Name: m.Name, BF16TFLOPS: m.BF16TFLOPS, FP16TFLOPS: m.FP16TFLOPS,
		MemBWGBps: float64(m.MemBWGBps), NVLinkGBps: m.NVLinkGBps, TDPW: m.TDPW}, m
}

// Each bound refuses what breaks it, naming why, and a plausible run
// (and an idle GPU's unread sensor, 0 °C) passes.
func TestCheckBounds(t *testing.T) {
	nom, m := h100Nominal(t)
	gpus := []string{"GPU-a", "GPU-b"}
	cases := []struct {
		name   string
		change func(r *agent.BenchmarkReport)
		want   string // a part of the reason; "" to pass
	}{
		{"plausible", func(r *agent.BenchmarkReport) {}, ""},
		{"unread temperature is no reading", func(r *agent.BenchmarkReport) { r.Telemetry[0].T.TemperatureC = 0 }, ""},
		{"no clock sampled: the nominal bound only", func(r *agent.BenchmarkReport) {
			for i := range r.Telemetry {
				r.Telemetry[i].T.SMClockMHz = 0
			}
		}, ""},
		{"a failed load's figure is not judged", func(r *agent.BenchmarkReport) {
			r.Loads[3] = agent.Load{Metric: agent.MetricAllReduceBus, Status: agent.LoadFailed, Value: 0}
		}, ""},
		{"absurd TFLOPS", func(r *agent.BenchmarkReport) { r.Loads[0].Value = 1e9 }, "above the nominal 989"},
		{"above nominal in one GPU", func(r *agent.BenchmarkReport) { r.Loads[0].PerGPU[1] = 1200 }, "above the nominal"},
		{"memory bandwidth above nominal", func(r *agent.BenchmarkReport) { r.Loads[2].Value = 4000 }, "d2d_bw_gbps"},
		{"freezing", func(r *agent.BenchmarkReport) { r.Telemetry[1].T.TemperatureC = -273 }, "below any machine room"},
		{"cold", func(r *agent.BenchmarkReport) { r.Telemetry[1].T.TemperatureC = 3 }, "below any machine room"},
		{"molten", func(r *agent.BenchmarkReport) { r.Telemetry[1].T.TemperatureC = 400 }, "shutdown temperature"},
		{"a gigawatt", func(r *agent.BenchmarkReport) { r.Telemetry[0].T.PowerW = 1e9 }, "above its board limit of 700 W"},
		{"negative power", func(r *agent.BenchmarkReport) { r.Telemetry[0].T.PowerW = -5 }, "not a number of watts"},
		{"infinite power", func(r *agent.BenchmarkReport) { r.Telemetry[0].T.PowerW = math.Inf(1) }, "not a number of watts"},
		{"NaN figure", func(r *agent.BenchmarkReport) { r.Loads[1].Value = math.NaN() }, "not a measurement"},
		{"negative figure", func(r *agent.BenchmarkReport) { r.Loads[1].PerGPU = []float64{-1} }, "not a measurement"},
		{"TFLOPS the clock cannot give", func(r *agent.BenchmarkReport) {
			// 900 TFLOPS at 1200 MHz: an H100 gives 989×1200/1830 = 649 there.
			for i := range r.Telemetry {
				r.Telemetry[i].T.SMClockMHz = 1200
			}
			r.Loads[0].Value, r.Loads[0].PerGPU = 900, nil
		}, "highest SM clock sampled, 1200 MHz"},
		{"a clock no H100 runs at", func(r *agent.BenchmarkReport) { r.Telemetry[0].T.SMClockMHz = 1e6 }, "boosts to 1830"},
		{"a plausible sweep and best", func(r *agent.BenchmarkReport) {
			r.Loads[0].Best, r.Loads[0].BestPerGPU = 805, []float64{803, 807}
			r.Loads[0].Sweep = []agent.SweepPoint{{Value: 760}, {Value: 805}}
		}, ""},
		{"an absurd best beside a plausible sustained figure", func(r *agent.BenchmarkReport) { r.Loads[0].Best = 1e9 }, "above the nominal 989"},
		{"an absurd best of one GPU", func(r *agent.BenchmarkReport) { r.Loads[0].BestPerGPU = []float64{800, 1e9} }, "above the nominal 989"},
		{"an absurd sweep step", func(r *agent.BenchmarkReport) { r.Loads[0].Sweep = []agent.SweepPoint{{Value: 800}, {Value: 5000}} }, "above the nominal 989"},
		{"a GPU the task did not name", func(r *agent.BenchmarkReport) { r.GPUUUIDs = append(r.GPUUUIDs, "GPU-z") }, "GPU-z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := h100Run()
			c.change(&run)
			got := CheckBounds(run, nom, m, gpus)
			switch {
			case c.want == "" && got != "":
				t.Errorf("refused: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("reason %q, want one naming %q", got, c.want)
			}
		})
	}
}

// Every catalogue model keeps its bounds' inputs: a TDP and, where the
// rate follows the clock, a boost clock that reproduces it within the
// datasheets' rounding; and a realistic share with its source.
func TestCatalogueBoundsInputs(t *testing.T) {
	for _, m := range catalog.GPUModels() {
		if m.TDPW <= 0 || m.ExpectedPct < 50 || m.ExpectedPct > 100 || m.ExpectedSource == "" {
			t.Errorf("%s: TDP %d, expected %v%% (%q)", m.Slug, m.TDPW, m.ExpectedPct, m.ExpectedSource)
		}
		if m.BoostClockMHz == 0 && m.Slug != "h20" {
			t.Errorf("%s: no boost clock", m.Slug)
		}
	}
	for slug, want := range map[string]float64{"h100-sxm": 80, "h200-sxm": 80, "a100-80g-sxm": 87, "b200": 78} {
		if m, _ := catalog.GPUModelBySlug(slug); m.ExpectedPct != want {
			t.Errorf("%s: expected %v%%, want %v%% (ml-engineering's MAMF table)", slug, m.ExpectedPct, want)
		}
	}
}
