package pages

import (
	"bytes"
	"context"
	"html"
	"strings"
	"testing"
	"time"

	"suanli/agent"
	"suanli/gpu"
	"suanli/locales"
	"suanli/views"
)

// benchPage renders a report page of run in lang.
func benchPage(t *testing.T, lang string, run agent.BenchmarkReport) string {
	t.Helper()
	vc := views.Ctx{Lang: lang, Path: "/benchmarks/1", URL: func(string, ...any) string { return "/x" }, CSRF: func() string { return "token" }}
	vm := BenchmarkVM{
		Report:  BenchReport{ID: 1, NodeID: 2, GPUs: 8, Trigger: "verified", Status: "verified", MeasuredAt: run.FinishedAt, GPUName: "H100 SXM5"},
		Nominal: agent.Nominal{Model: "h100-sxm", Name: "H100 SXM5", BF16TFLOPS: 989, FP16TFLOPS: 989, MemBWGBps: 3350},
		Run:     run,
		Subject: BenchSubject{NodeID: 2, NodeName: "gpu-node-07"},
	}
	for _, l := range run.Loads {
		vm.Measured = append(vm.Measured, BenchMeasured{Value: l.Value, OK: l.Status == agent.LoadOK})
	}
	var buf bytes.Buffer
	if err := BenchmarkPage(vc, vm).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return html.UnescapeString(buf.String())
}

// The report page says how each figure was taken: a GEMM's sustained
// median with every GPU loaded and its sweep's best, the all-reduce
// sweep's plateau, and which power reading the telemetry holds.
func TestBenchmarkPageSaysHowFiguresWereTaken(t *testing.T) {
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	var sweep []agent.SweepPoint
	for b := int64(1 << 20); b <= 1<<30; b *= 2 {
		sweep = append(sweep, agent.SweepPoint{Bytes: b, BusBW: 300, AlgBW: 300 / 1.75, TimeUS: 10})
	}
	per := []float64{744, 745, 746, 744, 745, 746, 744, 745}
	run := agent.BenchmarkReport{
		GPUUUIDs: make([]string, 8), StartedAt: at.Add(-2 * time.Minute), FinishedAt: at, SampleEveryMS: 100,
		Loads: []agent.Load{
			{Metric: agent.MetricBF16GEMM, Tool: "pytorch", Status: agent.LoadOK, Value: 744.9, PerGPU: per,
				Best: 783.75, BestPerGPU: per, SustainedS: 10.02, Concurrent: true},
			{Metric: agent.MetricFP16GEMM, Tool: "pytorch", Status: agent.LoadOK, Value: 770.7, PerGPU: per}, // an agent before the sweep
			{Metric: agent.MetricAllReduceBus, Tool: "nccl-tests", Status: agent.LoadOK, Value: 361.5, Sweep: sweep},
		},
		Telemetry: []agent.Sample{
			{AtMS: 0, Index: 0, T: gpu.Telemetry{TemperatureC: 40, PowerW: 120, SMClockMHz: 1980, PowerInstant: true}},
			{AtMS: 100, Index: 0, T: gpu.Telemetry{TemperatureC: 60, PowerW: 690, SMClockMHz: 1755, PowerInstant: true}},
		},
	}
	en := benchPage(t, locales.EN, run)
	for _, want := range []string{
		"sustained median over 10 s with all 8 GPUs loaded at once; best of the shape sweep 784 TFLOPS",
		"a short burst (this agent predates the sustained run)",
		"plateau of a sweep of 11 message sizes from 1 MiB to 1 GiB",
		"Power: NVML's instantaneous reading. Sampled every 100 ms.",
	} {
		if !strings.Contains(en, want) {
			t.Errorf("the English page lacks %q", want)
		}
	}
	zh := benchPage(t, locales.ZH, run)
	for _, want := range []string{"8 张 GPU 同时满载", "形状扫描中的最佳值 784 TFLOPS", "功耗：NVML 瞬时读数。"} {
		if !strings.Contains(zh, want) {
			t.Errorf("the Chinese page lacks %q", want)
		}
	}

	// A "sustained" run shorter than the agent's default is called a burst.
	run.Loads[0].SustainedS = 0.1
	if en := benchPage(t, locales.EN, run); !strings.Contains(en, "a run of only 0.1 s, shorter than the 10 s a sustained figure needs") || strings.Contains(en, "sustained median over") {
		t.Error("a 0.1-s run is called sustained")
	}
	run.Loads[0].SustainedS = 10.02

	// Samples of the averaged reading say so, whatever else there is.
	run.Telemetry[1].T.PowerInstant = false
	if en := benchPage(t, locales.EN, run); !strings.Contains(en, "1-second average") {
		t.Error("the page does not say the power is a 1-s average")
	}
}
