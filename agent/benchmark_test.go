package agent_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"suanli/agent"
	"suanli/gpu"
)

// h100 is the catalogue's H100 SXM (catalog/gpus.csv), as a benchmark
// task carries it.
var h100 = agent.Nominal{Model: "h100-sxm", Name: "H100 SXM5", BF16TFLOPS: 989, FP16TFLOPS: 989, MemBWGBps: 3350, NVLinkGBps: 900, TDPW: 700}

// mustSimHost opens a Reader on a simulated host of a catalogue model.
func mustSimHost(tb testing.TB, slug string, n int) (*gpu.Sim, *gpu.Reader) {
	tb.Helper()
	sim, err := gpu.SimulateCatalog(slug, n)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return sim, r
}

// realHost reads a simulated host as if it were a real one, to exercise
// the load generators: everything but Simulated is the Reader's.
type realHost struct{ *gpu.Reader }

func (h realHost) Read() gpu.Host {
	host := h.Reader.Read()
	host.Simulated, host.Model = false, ""
	return host
}

// mustRunBenchmark runs a benchmark and fails the test if it did not run.
func mustRunBenchmark(tb testing.TB, gpus agent.GPUs, uuids []string, nom *agent.Nominal, opts agent.BenchOptions) agent.BenchmarkReport {
	tb.Helper()
	rep, err := agent.RunBenchmark(context.Background(), gpus, uuids, nom, opts)
	if err != nil {
		tb.Fatalf("RunBenchmark: %v", err)
	}
	return rep
}

// onReading calls fn after every reading of simulated GPU i's sensors,
// with how many there have been: one per host Read, one per telemetry
// round. It wraps what the GPU's mock answers for its temperature, so it
// is installed before anything reads the host.
func onReading(sim *gpu.Sim, i int, fn func(n int)) {
	d := sim.Server.Devices[i].(*server.Device)
	temperature := d.GetTemperatureFunc
	var n atomic.Int64
	d.GetTemperatureFunc = func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
		v, ret := temperature(s)
		if s == nvml.TEMPERATURE_GPU {
			fn(int(n.Add(1)))
		}
		return v, ret
	}
}

// runSampled runs a simulated benchmark of uuids until its sampler has
// taken rounds telemetry rounds after the first one, then ends it as a
// shutdown would (the run's own SimDuration, a minute, only bounds a
// sampler that never samples), so that how many samples a report holds
// does not depend on how busy the machine is. It returns the report and
// when the last of those rounds read the first GPU.
func runSampled(tb testing.TB, sim *gpu.Sim, r *gpu.Reader, uuids []string, nom *agent.Nominal, opts agent.BenchOptions, rounds int) (agent.BenchmarkReport, time.Time) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last time.Time
	// Reading 1 is the host snapshot, 2 the first round.
	onReading(sim, slices.Index(sim.UUIDs(), uuids[0]), func(n int) {
		if n == 2+rounds {
			last = time.Now()
			cancel()
		}
	})
	opts.SimDuration = time.Minute
	rep, err := agent.RunBenchmark(ctx, r, uuids, nom, opts)
	if err != nil {
		tb.Fatalf("RunBenchmark: %v", err)
	}
	if last.IsZero() {
		tb.Fatalf("the sampler did not take %d rounds within the run's minute", rounds)
	}
	return rep, last
}

// loadOf returns the load of one tool for one metric.
func loadOf(tb testing.TB, rep agent.BenchmarkReport, tool, metric string) agent.Load {
	tb.Helper()
	i := slices.IndexFunc(rep.Loads, func(l agent.Load) bool { return l.Tool == tool && l.Metric == metric })
	if i < 0 {
		tb.Fatalf("no %s load for %s in %+v", tool, metric, rep.Loads)
	}
	return rep.Loads[i]
}

// checkTelemetry checks that every GPU benchmarked has at least min
// samples, in time order, and that no other GPU has any.
func checkTelemetry(tb testing.TB, rep agent.BenchmarkReport, indexes []int, min int) {
	tb.Helper()
	byGPU := map[int][]agent.Sample{}
	for _, s := range rep.Telemetry {
		byGPU[s.Index] = append(byGPU[s.Index], s)
	}
	for _, i := range indexes {
		ss := byGPU[i]
		if len(ss) < min {
			tb.Errorf("GPU %d: %d samples, want at least %d", i, len(ss), min)
		}
		for k := 1; k < len(ss); k++ {
			if ss[k].AtMS <= ss[k-1].AtMS {
				tb.Errorf("GPU %d: sample %d at %d ms after one at %d ms", i, k, ss[k].AtMS, ss[k-1].AtMS)
			}
		}
		for _, s := range ss {
			if s.T.PowerW <= 0 || s.T.SMClockMHz <= 0 || s.T.TemperatureC <= 0 {
				tb.Errorf("GPU %d: empty telemetry %+v", i, s.T)
				break
			}
		}
		delete(byGPU, i)
	}
	for i := range byGPU {
		tb.Errorf("samples of GPU %d, which was not benchmarked", i)
	}
}

func TestSimulatedBenchmarkDerivesEveryFigureFromNominal(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 8)
	uuids := sim.UUIDs()
	rep, _ := runSampled(t, sim, r, uuids, &h100, agent.BenchOptions{}, 6)

	if !rep.Simulated || rep.SimFactor != agent.DefaultSimFactor {
		t.Fatalf("simulated %v, factor %v; want a simulated report with factor %v", rep.Simulated, rep.SimFactor, agent.DefaultSimFactor)
	}
	f := agent.DefaultSimFactor
	pcie5x16 := 16 * 32 * 128.0 / 130 / 8 // GB/s per direction
	want := map[string]float64{
		agent.MetricBF16GEMM:     989 * f,
		agent.MetricFP16GEMM:     989 * f,
		agent.MetricD2D:          3350 * f,
		agent.MetricH2D:          pcie5x16 * f,
		agent.MetricD2H:          pcie5x16 * f,
		agent.MetricAllReduceBus: 900 / 2 * f,
	}
	if len(rep.Loads) != len(want) {
		t.Errorf("%d loads, want %d: %+v", len(rep.Loads), len(want), rep.Loads)
	}
	for metric, v := range want {
		l := loadOf(t, rep, agent.LoadSimulated, metric)
		if l.Status != agent.LoadSimulated || math.Abs(l.Value-v) > 1e-9*v {
			t.Errorf("%s: %s %v, want simulated %v", metric, l.Status, l.Value, v)
		}
		if !strings.Contains(l.Detail, "simulated") || !strings.Contains(l.Detail, "× 0.82") {
			t.Errorf("%s: detail %q does not say it is nominal × 0.82", metric, l.Detail)
		}
		if metric != agent.MetricAllReduceBus && len(l.PerGPU) != 8 {
			t.Errorf("%s: %d per-GPU figures", metric, len(l.PerGPU))
		}
	}
	// The catalogue's figures come through untouched by rounding.
	if l := loadOf(t, rep, agent.LoadSimulated, agent.MetricBF16GEMM); l.Value != 989*f || l.Detail != "simulated: nominal 989 TFLOPS × 0.82" {
		t.Errorf("BF16 = %v (%q), want exactly 989 × 0.82", l.Value, l.Detail)
	}

	if len(rep.Host.GPUs) != 8 || !rep.Host.Simulated || rep.Host.DriverVersion == "" {
		t.Fatalf("host snapshot = %d GPUs, simulated %v, driver %q", len(rep.Host.GPUs), rep.Host.Simulated, rep.Host.DriverVersion)
	}
	for i, g := range rep.Host.GPUs {
		if g.UUID != uuids[i] || !strings.Contains(g.Name, "H100") || !g.Health.Healthy || len(g.Health.Checks) == 0 {
			t.Errorf("snapshot GPU %d = %s %q healthy %v", i, g.UUID, g.Name, g.Health.Healthy)
		}
	}
	if !slices.Equal(rep.GPUUUIDs, uuids) || !rep.FinishedAt.After(rep.StartedAt) {
		t.Errorf("uuids %v, started %v, finished %v", rep.GPUUUIDs, rep.StartedAt, rep.FinishedAt)
	}
	// A round at the start, six on the way and one at the end (which the
	// sixth may absorb): at least four, whatever the machine's speed.
	checkTelemetry(t, rep, []int{0, 1, 2, 3, 4, 5, 6, 7}, 4)
}

// TestSimulatedBenchmarkOfSomeGPUs: a benchmark covers exactly the task's
// GPUs, in its order, and the telemetry shows the XIDs they raise.
func TestSimulatedBenchmarkOfSomeGPUs(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 8)
	uuids := []string{sim.UUIDs()[5], sim.UUIDs()[2]}
	// GPU 5 raises XID 48 while the run samples it: during its first
	// telemetry round (its second reading, after the host snapshot).
	injected := make(chan error, 1)
	onReading(sim, 5, func(n int) {
		if n == 2 {
			injected <- sim.Inject(gpu.Fault{Kind: gpu.FaultXID, XID: 48, GPU: 5})
		}
	})
	rep, _ := runSampled(t, sim, r, uuids, &h100, agent.BenchOptions{SimFactor: 0.5}, 4)
	if err := <-injected; err != nil {
		t.Fatal(err)
	}

	if rep.SimFactor != 0.5 || loadOf(t, rep, agent.LoadSimulated, agent.MetricD2D).Value != 3350*0.5 {
		t.Errorf("factor %v, D2D %v; want 0.5 and 1675", rep.SimFactor, loadOf(t, rep, agent.LoadSimulated, agent.MetricD2D).Value)
	}
	if got := []int{rep.Host.GPUs[0].Index, rep.Host.GPUs[1].Index}; len(rep.Host.GPUs) != 2 || !slices.Equal(got, []int{5, 2}) {
		t.Errorf("snapshot GPUs %v, want 5 and 2", got)
	}
	if l := loadOf(t, rep, agent.LoadSimulated, agent.MetricBF16GEMM); len(l.PerGPU) != 2 {
		t.Errorf("BF16 per GPU %v, want two figures", l.PerGPU)
	}
	checkTelemetry(t, rep, []int{5, 2}, 3)
	var xids []int
	for _, s := range rep.Telemetry {
		if s.Index == 5 {
			xids = append(xids, s.XIDs...)
		} else if len(s.XIDs) > 0 {
			t.Errorf("GPU %d: XIDs %v", s.Index, s.XIDs)
		}
	}
	if !slices.Equal(xids, []int{48}) {
		t.Errorf("XIDs seen on GPU 5 = %v, want [48] once", xids)
	}
}

func TestSimulatedBenchmarkWithoutNominalFiguresInventsNone(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 1)
	rep := mustRunBenchmark(t, r, sim.UUIDs(), nil, agent.BenchOptions{SimDuration: 10 * time.Millisecond})
	for _, m := range []string{agent.MetricBF16GEMM, agent.MetricFP16GEMM, agent.MetricD2D} {
		if l := loadOf(t, rep, agent.LoadSimulated, m); l.Status != agent.LoadAbsent || l.Value != 0 {
			t.Errorf("%s without a nominal figure: %+v", m, l)
		}
	}
	if slices.ContainsFunc(rep.Loads, func(l agent.Load) bool { return l.Metric == agent.MetricAllReduceBus }) {
		t.Error("all-reduce on a single GPU")
	}
}

// TestTelemetryOfALongRunIsThinnedNotCut: past the cap, the samples still
// cover the whole run, more sparsely.
func TestTelemetryOfALongRunIsThinnedNotCut(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 4)
	// 25 rounds of 4 samples: the cap of 40 is passed after the 10th and
	// thinned again after the 15th and the 20th (each time the interval
	// doubles: 10, 20, 40, 80 ms).
	rep, lastRound := runSampled(t, sim, r, sim.UUIDs(), &h100, agent.BenchOptions{SampleEvery: 10 * time.Millisecond, MaxSamples: 40}, 25)
	if len(rep.Telemetry) > 40 || len(rep.Telemetry) < 12 {
		t.Errorf("%d samples, want between 12 and the cap of 40", len(rep.Telemetry))
	}
	// Not cut: the samples reach the end of the run, at least as far as
	// the last round taken before it ended.
	if last, want := rep.Telemetry[len(rep.Telemetry)-1].AtMS, lastRound.Sub(rep.StartedAt).Milliseconds(); last < want {
		t.Errorf("last sample at %d ms of the run, its last round was at %d ms", last, want)
	}
	checkTelemetry(t, rep, []int{0, 1, 2, 3}, 3)
}

func TestBenchmarkWithoutLoadGeneratorsReportsThemAbsent(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 8)
	notFound := func(file string) (string, error) { return "", &exec.Error{Name: file, Err: exec.ErrNotFound} }
	rep := mustRunBenchmark(t, realHost{r}, sim.UUIDs(), &h100, agent.BenchOptions{LookPath: notFound})

	if rep.Simulated || rep.SimFactor != 0 {
		t.Errorf("simulated %v, factor %v on a real host", rep.Simulated, rep.SimFactor)
	}
	want := map[string][]string{
		"pytorch":     {agent.MetricBF16GEMM, agent.MetricFP16GEMM, agent.MetricD2D, agent.MetricH2D, agent.MetricD2H, agent.MetricAllReduceBus},
		"nvbandwidth": {agent.MetricD2D, agent.MetricH2D, agent.MetricD2H},
		"nccl-tests":  {agent.MetricAllReduceBus},
	}
	n := 0
	for tool, metrics := range want {
		for _, m := range metrics {
			l := loadOf(t, rep, tool, m)
			if l.Status != agent.LoadAbsent || l.Value != 0 || l.PerGPU != nil || !strings.Contains(l.Detail, "not found on PATH") {
				t.Errorf("%s %s = %+v, want absent: not found", tool, m, l)
			}
			n++
		}
	}
	if len(rep.Loads) != n {
		t.Errorf("%d loads, want %d", len(rep.Loads), n)
	}
	checkTelemetry(t, rep, []int{0, 1, 2, 3, 4, 5, 6, 7}, 1)
}

// fakeTools writes executables standing in for the load generators into
// a directory and returns a LookPath that finds only those.
func fakeTools(tb testing.TB, scripts map[string]string) func(string) (string, error) {
	tb.Helper()
	dir := tb.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return func(file string) (string, error) {
		p := filepath.Join(dir, file)
		if _, err := os.Stat(p); err != nil {
			return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
		}
		return p, nil
	}
}

func testdata(tb testing.TB, name string) string {
	tb.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestBenchmarkReadsTheLoadGeneratorsOutput(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 8)
	uuids := sim.UUIDs()
	seen := filepath.Join(t.TempDir(), "seen")
	lookPath := fakeTools(t, map[string]string{
		// python3 -c "import torch" succeeds; the script prints NCCL's
		// chatter, then its JSON.
		"python3": `[ "$1" = "-c" ] && exit 0
echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES script=$(basename "$1") config=$2" > ` + seen + `
echo "gpu-node-07:41235:41235 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>"
cat ` + testdata(t, "torchbench-h100.json") + "\n",
		"nvbandwidth":     `cat ` + testdata(t, "nvbandwidth-h100.json") + "\n",
		"all_reduce_perf": `echo "$@" > ` + seen + `.nccl; cat ` + testdata(t, "all_reduce_perf-h100.txt") + "\n",
	})
	rep := mustRunBenchmark(t, realHost{r}, uuids, &h100, agent.BenchOptions{LookPath: lookPath})

	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); !strings.Contains(got, "CUDA_VISIBLE_DEVICES="+strings.Join(uuids, ",")+" ") ||
		!strings.Contains(got, "script=torchbench.py") || !strings.Contains(got, `"gpus":8`) {
		t.Errorf("the script ran as %q", got)
	}
	if b, _ := os.ReadFile(seen + ".nccl"); strings.TrimSpace(string(b)) != "-b 256M -e 256M -g 8 -w 5 -n 20" {
		t.Errorf("all_reduce_perf ran with %q", b)
	}

	cases := []struct {
		tool, metric, version string
		value, gpu0           float64
	}{
		{"pytorch", agent.MetricBF16GEMM, "2.5.1+cu124", 770.7, 762.4},
		{"pytorch", agent.MetricFP16GEMM, "2.5.1+cu124", 773.4, 768.1},
		{"pytorch", agent.MetricD2D, "2.5.1+cu124", 2919.1000000000004, 2912.6},
		{"pytorch", agent.MetricH2D, "2.5.1+cu124", 55.2, 55.21},
		{"pytorch", agent.MetricD2H, "2.5.1+cu124", 54.7, 54.62},
		{"pytorch", agent.MetricAllReduceBus, "2.5.1+cu124", 361.84, 0},
		{"nvbandwidth", agent.MetricD2D, "v0.7", (1462.77 + 1463.18), 2 * 1461.52},
		{"nvbandwidth", agent.MetricH2D, "v0.7", (55.68 + 55.69) / 2, 55.68},
		{"nvbandwidth", agent.MetricD2H, "v0.7", (55.28 + 55.29) / 2, 55.28},
		{"nccl-tests", agent.MetricAllReduceBus, "2.13.11", 356.9, 0},
	}
	for _, c := range cases {
		l := loadOf(t, rep, c.tool, c.metric)
		if l.Status != agent.LoadOK || l.Version != c.version || math.Abs(l.Value-c.value) > 1e-9 {
			t.Errorf("%s %s = %s %v (version %q, %s), want ok %v version %q", c.tool, c.metric, l.Status, l.Value, l.Version, l.Detail, c.value, c.version)
		}
		if c.metric == agent.MetricAllReduceBus {
			if l.PerGPU != nil {
				t.Errorf("%s all-reduce has per-GPU figures %v", c.tool, l.PerGPU)
			}
			continue
		}
		if len(l.PerGPU) != 8 || math.Abs(l.PerGPU[0]-c.gpu0) > 1e-9 {
			t.Errorf("%s %s per GPU %v, want 8 figures starting %v", c.tool, c.metric, l.PerGPU, c.gpu0)
		}
	}
	if d := loadOf(t, rep, "pytorch", agent.MetricBF16GEMM).Detail; !strings.Contains(d, "8192^3") || !strings.Contains(d, "CUDA 12.4, NCCL 2.21.5") {
		t.Errorf("PyTorch detail %q", d)
	}
	if d := loadOf(t, rep, "nccl-tests", agent.MetricAllReduceBus).Detail; !strings.Contains(d, "NCCL 2.21.5") {
		t.Errorf("nccl-tests detail %q does not name NCCL", d)
	}
	if d := loadOf(t, rep, "nvbandwidth", agent.MetricD2D).Detail; !strings.Contains(d, "device_local_copy") || !strings.Contains(d, "read + write") {
		t.Errorf("nvbandwidth D2D detail %q does not say it doubles the copy", d)
	}
}

func TestBenchmarkLoadFailures(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 2)
	cases := []struct {
		name    string
		scripts map[string]string
		tool    string
		status  string
		detail  string
	}{
		{"PyTorch missing is absent, with Python's reason",
			map[string]string{"python3": `echo "ModuleNotFoundError: No module named 'torch'" >&2; exit 1` + "\n"},
			"pytorch", agent.LoadAbsent, "No module named 'torch'"},
		{"CUDA unavailable to PyTorch is absent, with the reason",
			map[string]string{"python3": `[ "$1" = "-c" ] && exit 0
echo '{"tool":"pytorch","version":"2.5.1+cpu","cuda":null,"results":[],"unavailable":"CUDA is not available to PyTorch (a CPU-only build)"}'` + "\n"},
			"pytorch", agent.LoadAbsent, "CPU-only build"},
		{"a crashing script fails with the end of its stderr",
			map[string]string{"python3": `[ "$1" = "-c" ] && exit 0
echo "Traceback (most recent call last):" >&2
echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB" >&2
exit 1` + "\n"},
			"pytorch", agent.LoadFailed, "CUDA out of memory"},
		{"a script printing no JSON fails",
			map[string]string{"python3": `[ "$1" = "-c" ] && exit 0
echo "Segmentation fault"` + "\n"},
			"pytorch", agent.LoadFailed, "printed no result"},
		{"all_reduce_perf exiting non-zero fails",
			map[string]string{"all_reduce_perf": `echo "gpu-node-07: Test NCCL failure common.cu:1005 'unhandled system error'"; exit 2` + "\n"},
			"nccl-tests", agent.LoadFailed, "unhandled system error"},
		{"all_reduce_perf finding wrong values fails",
			map[string]string{"all_reduce_perf": `sed 's/values : 0 OK/values : 12 FAILED/' ` + testdata(t, "all_reduce_perf-h100.txt") + "\n"},
			"nccl-tests", agent.LoadFailed, "12 wrong values"},
		{"nvbandwidth rejecting its arguments fails",
			map[string]string{"nvbandwidth": `echo "ERROR: Invalid Arguments" >&2; exit 1` + "\n"},
			"nvbandwidth", agent.LoadFailed, "Invalid Arguments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := mustRunBenchmark(t, realHost{r}, sim.UUIDs(), &h100, agent.BenchOptions{LookPath: fakeTools(t, c.scripts)})
			for _, l := range rep.Loads {
				if l.Tool != c.tool {
					if l.Status != agent.LoadAbsent {
						t.Errorf("%s %s: %s, want absent", l.Tool, l.Metric, l.Status)
					}
					continue
				}
				if l.Status != c.status || l.Value != 0 || !strings.Contains(l.Detail, c.detail) {
					t.Errorf("%s %s = %s %v %q, want %s mentioning %q", l.Tool, l.Metric, l.Status, l.Value, l.Detail, c.status, c.detail)
				}
			}
		})
	}
}

func TestBenchmarkTimesOutAHungTool(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 1)
	// The script would leave a mark if it were waited out instead of
	// stopped at the timeout.
	finished := filepath.Join(t.TempDir(), "finished")
	lookPath := fakeTools(t, map[string]string{"python3": `[ "$1" = "-c" ] && exit 0` + "\nsleep 30\ntouch " + finished + "\n"})
	rep := mustRunBenchmark(t, realHost{r}, sim.UUIDs(), &h100, agent.BenchOptions{LookPath: lookPath, Timeout: time.Second})
	if _, err := os.Stat(finished); err == nil {
		t.Error("the hung script ran to its end: the 1 s timeout did not stop it")
	}
	if l := loadOf(t, rep, "pytorch", agent.MetricBF16GEMM); l.Status != agent.LoadFailed || !strings.Contains(l.Detail, "timed out or stopped") {
		t.Errorf("hung script: %+v", l)
	}
}

func TestBenchmarkOfGPUsNotHereFails(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 2)
	for _, uuids := range [][]string{nil, {sim.UUIDs()[0], "GPU-elsewhere"}} {
		if _, err := agent.RunBenchmark(context.Background(), r, uuids, &h100, agent.BenchOptions{}); err == nil {
			t.Errorf("RunBenchmark(%v) ran", uuids)
		}
	}
	if err := sim.Inject(gpu.Fault{Kind: gpu.FaultOffBus, GPU: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := agent.RunBenchmark(context.Background(), r, sim.UUIDs(), &h100, agent.BenchOptions{})
	if err == nil || !strings.Contains(err.Error(), sim.UUIDs()[1]+": not present") {
		t.Errorf("benchmark of a GPU off the bus: %v", err)
	}
}

// TestBenchmarkOnAHostWithoutASampler: GPUs other than a gpu.Reader are
// sampled through Read.
func TestBenchmarkOnAHostWithoutASampler(t *testing.T) {
	g := fakeGPUs{uuids: []string{"GPU-a", "GPU-b"}}
	rep := mustRunBenchmark(t, g, []string{"GPU-b"}, &h100, agent.BenchOptions{SimDuration: 250 * time.Millisecond})
	if len(rep.Telemetry) < 2 || slices.ContainsFunc(rep.Telemetry, func(s agent.Sample) bool { return s.Index != 1 }) {
		t.Errorf("telemetry %+v, want samples of GPU 1 only", rep.Telemetry)
	}
}

func TestTorchbenchScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	if out, err := exec.Command(py, "-m", "py_compile", "torchbench.py").CombinedOutput(); err != nil {
		t.Fatalf("torchbench.py does not compile: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.RemoveAll("__pycache__") })
	// With no GPU visible the script says why and measures nothing,
	// whether or not PyTorch is installed here.
	cmd := exec.Command(py, "torchbench.py", `{"gpus":1}`)
	cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torchbench.py: %v", err)
	}
	var res struct {
		Tool        string `json:"tool"`
		Unavailable string `json:"unavailable"`
		Results     []any  `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if res.Tool != "pytorch" || res.Unavailable == "" || len(res.Results) != 0 {
		t.Errorf("without a GPU: %s", out)
	}
}

func TestBenchmarkTaskThroughTheAgent(t *testing.T) {
	f, srv := newFakeServer(t)
	sim, r := mustSimHost(t, "h100-sxm", 2)
	cfg := testConfig(t, srv)
	cfg.GPUs = r
	cfg.Bench = agent.BenchOptions{SimDuration: 300 * time.Millisecond}
	mustRun(t, cfg)

	f.tasks <- agent.Task{ID: 1, Kind: agent.TaskBenchmark, GPUUUIDs: sim.UUIDs(), Nominal: &h100}
	res := mustResult(t, f, 1)
	if !res.OK {
		t.Fatalf("benchmark failed: %s", res.Error)
	}
	var rep agent.BenchmarkReport
	if err := json.Unmarshal(res.Detail, &rep); err != nil {
		t.Fatalf("detail is not a report: %v", err)
	}
	if !rep.Simulated || len(rep.Loads) != 6 || len(rep.Host.GPUs) != 2 || len(rep.Telemetry) == 0 {
		t.Errorf("report: simulated %v, %d loads, %d GPUs, %d samples", rep.Simulated, len(rep.Loads), len(rep.Host.GPUs), len(rep.Telemetry))
	}

	f.tasks <- agent.Task{ID: 2, Kind: agent.TaskBenchmark, GPUUUIDs: []string{"GPU-elsewhere"}, Nominal: &h100}
	if res := mustResult(t, f, 2); res.OK || !strings.Contains(res.Error, "GPU-elsewhere: not present") || res.Detail != nil {
		t.Errorf("benchmark of a GPU not here: %+v", res)
	}
}
