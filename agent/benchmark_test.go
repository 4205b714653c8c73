package agent_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"suanli/agent"
	"suanli/dockertest"
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
		if !strings.Contains(l.Detail, "simulated") || !strings.Contains(l.Detail, "× 0.7") {
			t.Errorf("%s: detail %q does not say it is nominal × 0.7", metric, l.Detail)
		}
		if metric != agent.MetricAllReduceBus && len(l.PerGPU) != 8 {
			t.Errorf("%s: %d per-GPU figures", metric, len(l.PerGPU))
		}
	}
	// The catalogue's figures come through untouched by rounding; a
	// simulated GEMM has no sweep, so its best is its sustained figure.
	if l := loadOf(t, rep, agent.LoadSimulated, agent.MetricBF16GEMM); l.Value != 989*f || l.Detail != "simulated: nominal 989 TFLOPS × 0.7" ||
		l.Best != l.Value || len(l.BestPerGPU) != 8 {
		t.Errorf("BF16 = %v best %v (%q), want exactly 989 × 0.7 for both", l.Value, l.Best, l.Detail)
	}
	if rep.SampleEveryMS != 100 {
		t.Errorf("sample_every_ms = %d, want 100", rep.SampleEveryMS)
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

// TestSimulatedFiguresStayBelowRealCeilings: a simulated figure never
// reaches what the real model does (dense BF16 GEMM on Hopper: about 80 %
// of nominal, ml-engineering's MAMF table): a factor above 95 % of the
// task's realistic fraction is lowered to it, and the default sits below
// every ceiling catalogued.
func TestSimulatedFiguresStayBelowRealCeilings(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 2)
	cases := []struct{ realistic, asked, want float64 }{
		{0, 0, agent.DefaultSimFactor}, // an older server sends no fraction
		{0.80, 0, agent.DefaultSimFactor},
		{0.80, 0.9, 0.76},
		{0.60, 0, 0.57},
		{0.80, 0.5, 0.5},
	}
	for _, c := range cases {
		nom := h100
		nom.RealisticFraction = c.realistic
		rep := mustRunBenchmark(t, r, sim.UUIDs(), &nom, agent.BenchOptions{SimFactor: c.asked, SimDuration: time.Millisecond})
		if !rep.Simulated || math.Abs(rep.SimFactor-c.want) > 1e-9 {
			t.Errorf("realistic %v, asked %v: simulated %v factor %v, want %v", c.realistic, c.asked, rep.Simulated, rep.SimFactor, c.want)
		}
		ceiling := 989 * 0.80
		if c.realistic > 0 {
			ceiling = 989 * c.realistic
		}
		for _, m := range []string{agent.MetricBF16GEMM, agent.MetricFP16GEMM} {
			l := loadOf(t, rep, agent.LoadSimulated, m)
			if l.Status != agent.LoadSimulated || l.Value >= ceiling || l.Best >= ceiling || !strings.HasPrefix(l.Detail, "simulated: ") {
				t.Errorf("realistic %v, asked %v: %s %s %v (best %v) %q, want simulated below %v",
					c.realistic, c.asked, m, l.Status, l.Value, l.Best, l.Detail, ceiling)
			}
		}
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

// fakeSysfs lays out the sysfs files that place each GPU on a NUMA node:
// GPUs 0–3 on node 0 (CPUs node0), the others on node 1 (CPUs node1).
func fakeSysfs(tb testing.TB, gpus []gpu.Info, node0, node1 int) string {
	tb.Helper()
	root := tb.TempDir()
	for i, g := range gpus {
		// NVML's "00000000:18:00.0" is the kernel's "0000:18:00.0".
		dev := filepath.Join(root, "bus", "pci", "devices", strings.ToLower(g.PCIBusID[4:]))
		if err := os.MkdirAll(dev, 0o755); err != nil {
			tb.Fatal(err)
		}
		node, cpus := "0\n", strconv.Itoa(node0)+"\n"
		if i >= 4 {
			node, cpus = "1\n", strconv.Itoa(node1)+"\n"
		}
		if err := os.WriteFile(filepath.Join(dev, "numa_node"), []byte(node), 0o644); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dev, "local_cpulist"), []byte(cpus), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// allowedCPUs are the lowest and highest CPU this process may run on
// ("Cpus_allowed_list: 0-1"), so that a test binds tools to CPUs that
// exist here.
func allowedCPUs(tb testing.TB) (lo, hi int) {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status: not Linux")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			nums := strings.FieldsFunc(list, func(r rune) bool { return r < '0' || r > '9' })
			lo, _ = strconv.Atoi(nums[0])
			hi, _ = strconv.Atoi(nums[len(nums)-1])
			return lo, hi
		}
	}
	tb.Fatal("no Cpus_allowed_list in /proc/self/status")
	return 0, 0
}

// nvbandwidthOf writes what nvbandwidth prints (testdata's 8-GPU run)
// for GPUs from to to-1 only, and returns its path.
func nvbandwidthOf(tb testing.TB, from, to int) string {
	tb.Helper()
	b, err := os.ReadFile(testdata(tb, "nvbandwidth-h100.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var out map[string]map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	for _, tc := range out["nvbandwidth"]["testcases"].([]any) {
		m := tc.(map[string]any)
		row := m["bandwidth_matrix"].([]any)[0].([]any)
		m["bandwidth_matrix"] = []any{row[from:to]}
	}
	p := filepath.Join(tb.TempDir(), fmt.Sprintf("nvbandwidth-%d-%d.json", from, to))
	if b, err = json.Marshal(out); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
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
printf '%s' "$2" > ` + seen + `.cfg
echo "gpu-node-07:41235:41235 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>"
cat ` + testdata(t, "torchbench-h100.json") + "\n",
		// nvbandwidth runs once per NUMA node, on that node's GPUs, and
		// notes the CPUs it was bound to.
		"nvbandwidth": `grep Cpus_allowed_list /proc/self/status | tr -d ' \t' >> ` + seen + `.nvbw
case "$CUDA_VISIBLE_DEVICES" in
` + strings.Join(uuids[:4], ",") + `) cat ` + nvbandwidthOf(t, 0, 4) + ` ;;
` + strings.Join(uuids[4:], ",") + `) cat ` + nvbandwidthOf(t, 4, 8) + ` ;;
*) echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES" >&2; exit 1 ;;
esac
`,
		"all_reduce_perf": `echo "$@" > ` + seen + `.nccl; cat ` + testdata(t, "all_reduce_perf-h100.txt") + "\n",
	})
	lo, hi := allowedCPUs(t)
	sysfs := fakeSysfs(t, r.Read().GPUs, lo, hi)
	rep := mustRunBenchmark(t, realHost{r}, uuids, &h100, agent.BenchOptions{LookPath: lookPath, SysRoot: sysfs})

	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); !strings.Contains(got, "CUDA_VISIBLE_DEVICES="+strings.Join(uuids, ",")+" ") ||
		!strings.Contains(got, "script=torchbench.py") || !strings.Contains(got, `"gpus":8`) {
		t.Errorf("the script ran as %q", got)
	}
	// The script loads for 10 s per dtype and binds each GPU's host
	// copies to the GPU's own NUMA node.
	var cfg struct {
		GPUs     int     `json:"gpus"`
		SustainS float64 `json:"sustain_s"`
		CPUs     [][]int `json:"cpus"`
		NUMA     []int   `json:"numa"`
	}
	if b, err := os.ReadFile(seen + ".cfg"); err != nil || json.Unmarshal(b, &cfg) != nil {
		t.Fatalf("config %s: %v", b, err)
	}
	if cfg.GPUs != 8 || cfg.SustainS != 10 || len(cfg.CPUs) != 8 || !slices.Equal(cfg.NUMA, []int{0, 0, 0, 0, 1, 1, 1, 1}) ||
		!slices.Equal(cfg.CPUs[0], []int{lo}) || !slices.Equal(cfg.CPUs[7], []int{hi}) {
		t.Errorf("config %+v", cfg)
	}
	// nvbandwidth ran on each node's GPUs bound to that node's CPUs.
	if b, _ := os.ReadFile(seen + ".nvbw"); string(b) != fmt.Sprintf("Cpus_allowed_list:%d\nCpus_allowed_list:%d\n", lo, hi) {
		t.Errorf("nvbandwidth ran on CPUs %q, want %d then %d", b, lo, hi)
	}
	if d := loadOf(t, rep, "nvbandwidth", agent.MetricH2D).Detail; !strings.Contains(d, "GPUs 0–3 pinned to NUMA node 0; GPUs 4–7 pinned to NUMA node 1") {
		t.Errorf("nvbandwidth host copy detail %q", d)
	}
	// all_reduce_perf sweeps to 1 GiB.
	if b, _ := os.ReadFile(seen + ".nccl"); strings.TrimSpace(string(b)) != "-b 1M -e 1G -f 2 -g 8 -w 5 -n 20" {
		t.Errorf("all_reduce_perf ran with %q", b)
	}

	cases := []struct {
		tool, metric, version string
		value, gpu0           float64
	}{
		{"pytorch", agent.MetricBF16GEMM, "2.5.1+cu124", 744.9, 742.3},
		{"pytorch", agent.MetricFP16GEMM, "2.5.1+cu124", 747.5, 745.1},
		{"pytorch", agent.MetricD2D, "2.5.1+cu124", 2919.1000000000004, 2912.6},
		{"pytorch", agent.MetricH2D, "2.5.1+cu124", 55.2, 55.21},
		{"pytorch", agent.MetricD2H, "2.5.1+cu124", 54.7, 54.62},
		{"pytorch", agent.MetricAllReduceBus, "2.5.1+cu124", 359.6, 0},
		{"nvbandwidth", agent.MetricD2D, "v0.7", (1462.77 + 1463.18), 2 * 1461.52},
		{"nvbandwidth", agent.MetricH2D, "v0.7", (55.68 + 55.69) / 2, 55.68},
		{"nvbandwidth", agent.MetricD2H, "v0.7", (55.28 + 55.29) / 2, 55.28},
		// The plateau: 1 GiB, out-of-place and in-place averaged.
		{"nccl-tests", agent.MetricAllReduceBus, "2.13.11", (361.47 + 361.63) / 2, 0},
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
			if len(l.Sweep) != 11 || l.Sweep[0].Bytes != 1<<20 || l.Sweep[10].Bytes != 1<<30 || l.Sweep[10].BusBW != l.Value ||
				math.Abs(l.Sweep[10].BusBW/l.Sweep[10].AlgBW-2*7.0/8) > 0.01 {
				t.Errorf("%s all-reduce sweep %+v, want 1 MiB to 1 GiB with busbw = algbw × 2(n−1)/n", c.tool, l.Sweep)
			}
			continue
		}
		if len(l.PerGPU) != 8 || math.Abs(l.PerGPU[0]-c.gpu0) > 1e-9 {
			t.Errorf("%s %s per GPU %v, want 8 figures starting %v", c.tool, c.metric, l.PerGPU, c.gpu0)
		}
	}
	// A GEMM reports its sustained median as its value, and the best of
	// its sweep beside it.
	bf16 := loadOf(t, rep, "pytorch", agent.MetricBF16GEMM)
	if bf16.Best != 783.75 || len(bf16.BestPerGPU) != 8 || bf16.BestPerGPU[0] != 781.6 || bf16.SustainedS != 10 || !bf16.Concurrent ||
		len(bf16.Sweep) != 4 || bf16.Sweep[1].Shape != "8192x8192x8192" || bf16.Best < bf16.Value {
		t.Errorf("BF16: best %v %v, sustained %v s, concurrent %v, sweep %+v", bf16.Best, bf16.BestPerGPU, bf16.SustainedS, bf16.Concurrent, bf16.Sweep)
	}
	if d := bf16.Detail; !strings.Contains(d, "L2 flushed") || !strings.Contains(d, "sustained 10s") || !strings.Contains(d, "CUDA 12.4, NCCL 2.21.5") {
		t.Errorf("PyTorch detail %q", d)
	}
	if d := loadOf(t, rep, "pytorch", agent.MetricH2D).Detail; !strings.Contains(d, "pinned to NUMA node 1") {
		t.Errorf("PyTorch host copy detail %q does not say where it was pinned", d)
	}
	if d := loadOf(t, rep, "nccl-tests", agent.MetricAllReduceBus).Detail; !strings.Contains(d, "NCCL 2.21.5") || !strings.Contains(d, "plateau bus bandwidth 361.6 GB/s at 1 GiB") {
		t.Errorf("nccl-tests detail %q does not name NCCL and the plateau", d)
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
		{"figures measured on the CPU (the script's test mode) fail",
			map[string]string{"python3": `[ "$1" = "-c" ] && exit 0
echo '{"tool":"pytorch","version":"1.13.0","device":"cpu","results":[{"metric":"bf16_gemm_tflops","value":0.1,"per_gpu":[0.1,0.1]}]}'` + "\n"},
			"pytorch", agent.LoadFailed, "measured device cpu, not the GPUs"},
		{"a best that is not a rate fails",
			map[string]string{"python3": `[ "$1" = "-c" ] && exit 0
echo '{"tool":"pytorch","version":"2.5.1","device":"cuda","results":[` +
				`{"metric":"bf16_gemm_tflops","value":700,"per_gpu":[700,700],"best":-1,"best_per_gpu":[-1,-1]},` +
				`{"metric":"fp16_gemm_tflops","value":700,"per_gpu":[700,700],"best":700,"best_per_gpu":[700,0]},` +
				`{"metric":"d2d_bw_gbps","error":"x"},{"metric":"h2d_bw_gbps","error":"x"},{"metric":"d2h_bw_gbps","error":"x"},` +
				`{"metric":"allreduce_busbw_gbps","error":"x"}]}'` + "\n"},
			"pytorch", agent.LoadFailed, ""},
		{"all_reduce_perf printing no result rows fails",
			map[string]string{"all_reduce_perf": `grep '^#' ` + testdata(t, "all_reduce_perf-h100.txt") + "\n"},
			"nccl-tests", agent.LoadFailed, "printed no results"},
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

// benchHelperEnv names the directory of a benchmark that
// TestBenchmarkHelperProcess runs, in a process of its own, for
// TestBenchmarkToolDiesWithTheAgent to SIGKILL.
const benchHelperEnv = "SUANLI_BENCH_HELPER_DIR"

// TestBenchmarkHelperProcess is not a test: re-executed by
// TestBenchmarkToolDiesWithTheAgent with benchHelperEnv set, it runs a
// benchmark whose PyTorch load hangs until it is killed, as an agent
// would.
func TestBenchmarkHelperProcess(t *testing.T) {
	dir := os.Getenv(benchHelperEnv)
	if dir == "" {
		t.Skip("run by TestBenchmarkToolDiesWithTheAgent")
	}
	sim, r := mustSimHost(t, "h100-sxm", 1)
	// The tool writes its pid, then becomes a sleep (exec keeps the pid
	// and the parent-death signal).
	lookPath := fakeTools(t, map[string]string{"python3": `[ "$1" = "-c" ] && exit 0
echo $$ > ` + filepath.Join(dir, "tool.pid.tmp") + `
mv ` + filepath.Join(dir, "tool.pid.tmp") + " " + filepath.Join(dir, "tool.pid") + `
exec sleep 600
`})
	agent.RunBenchmark(context.Background(), realHost{r}, sim.UUIDs(), &h100, agent.BenchOptions{LookPath: lookPath, Timeout: time.Hour})
	t.Error("the benchmark ended before it was killed")
}

// waitForPIDFile waits for a pid written to path.
func waitForPIDFile(tb testing.TB, path string, within time.Duration) int {
	tb.Helper()
	var pid int
	dockertest.Eventually(tb, within, "a pid in "+path, func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0, string(b)
	})
	return pid
}

// alive says whether a process runs: it exists and is not a zombie
// waiting to be reaped (a dead child of an init that does not reap).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// waitGone waits until pid no longer runs, failing the test with what
// if it still does once within has passed.
func waitGone(tb testing.TB, pid int, within time.Duration, what string) {
	tb.Helper()
	dockertest.Eventually(tb, within, what, func() (bool, string) {
		return !alive(pid), fmt.Sprintf("pid %d runs", pid)
	})
}

// killAtCleanup kills pid when the test ends, should it still run.
func killAtCleanup(tb testing.TB, pid int) {
	tb.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// TestBenchmarkToolDiesWithTheAgent: an agent killed with SIGKILL cancels
// nothing, yet the load it started dies with it (Pdeathsig), rather than
// keep a GPU busy that is rented to someone else next.
func TestBenchmarkToolDiesWithTheAgent(t *testing.T) {
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestBenchmarkHelperProcess$", "-test.count=1")
	helper.Env = append(os.Environ(), benchHelperEnv+"="+dir)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { helper.Process.Kill(); helper.Wait() })
	pid := waitForPIDFile(t, filepath.Join(dir, "tool.pid"), time.Minute)
	killAtCleanup(t, pid)
	if !alive(pid) {
		t.Fatalf("the tool (pid %d) is not running while the agent is", pid)
	}

	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	waitGone(t, pid, 10*time.Second, "the tool gone after its agent was killed")
}

// TestBenchmarkStopKillsTheToolsProcessGroup: a benchmark stopped (the
// agent shutting down, the task's time up) kills what the tool spawned
// too, not only the tool.
func TestBenchmarkStopKillsTheToolsProcessGroup(t *testing.T) {
	sim, r := mustSimHost(t, "h100-sxm", 1)
	dir := t.TempDir()
	// The tool starts a worker in the background (as torchbench.py's
	// all-reduce does), then waits for it.
	lookPath := fakeTools(t, map[string]string{"python3": `[ "$1" = "-c" ] && exit 0
sleep 600 &
echo $! > ` + filepath.Join(dir, "worker.pid.tmp") + `
mv ` + filepath.Join(dir, "worker.pid.tmp") + " " + filepath.Join(dir, "worker.pid") + `
wait
`})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan agent.BenchmarkReport, 1)
	go func() {
		rep, _ := agent.RunBenchmark(ctx, realHost{r}, sim.UUIDs(), &h100, agent.BenchOptions{LookPath: lookPath, Timeout: time.Hour})
		done <- rep
	}()
	pid := waitForPIDFile(t, filepath.Join(dir, "worker.pid"), time.Minute)
	killAtCleanup(t, pid)
	cancel()
	rep := <-done
	waitGone(t, pid, 10*time.Second, "the tool's worker gone after the benchmark was stopped")
	if l := loadOf(t, rep, "pytorch", agent.MetricBF16GEMM); l.Status != agent.LoadFailed || !strings.Contains(l.Detail, "timed out or stopped") {
		t.Errorf("stopped tool: %+v", l)
	}
}

// pythonWithTorch finds a python3 that imports PyTorch (Debian's
// python3-torch is a CPU build), or skips the test.
func pythonWithTorch(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		py, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if exec.Command(py, "-c", "import torch, torch.distributed").Run() == nil {
			return py
		}
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal("PyTorch is required under CI=true (.ci/run installs Debian's python3-torch)")
	}
	tb.Skip("no python3 with PyTorch here (Debian: apt-get install python3-torch)")
	return ""
}

// torchResultOf is one result of torchbench.py's output.
type torchResultOf struct {
	Metric     string             `json:"metric"`
	Value      float64            `json:"value"`
	PerGPU     []float64          `json:"per_gpu"`
	Best       float64            `json:"best"`
	BestPerGPU []float64          `json:"best_per_gpu"`
	SustainedS float64            `json:"sustained_s"`
	Concurrent bool               `json:"concurrent"`
	Sweep      []agent.SweepPoint `json:"sweep"`
	Detail     string             `json:"detail"`
	Error      string             `json:"error"`
}

// TestTorchbenchMethodOnCPU runs torchbench.py's own code, the sweep, the
// sustained run, the copies and the all-reduce sweep, with PyTorch on the
// CPU standing in for two GPUs (its test mode; the agent refuses such
// figures): it checks the method, never a GPU's figures.
func TestTorchbenchMethodOnCPU(t *testing.T) {
	py := pythonWithTorch(t)
	cfg := `{"device": "cpu", "gpus": 2, "shapes": [[64, 64, 64], [128, 128, 128]], "warmup": 2, "iters": 5,
		"sustain_s": 0.3, "batch_s": 0.05, "copy_bytes": 1048576, "host_bytes": 1048576, "copy_iters": 5,
		"cpus": [[0], [0]], "numa": [0, 0], "allreduce_min_bytes": 1024, "allreduce_max_bytes": 65536,
		"plateau_min_bytes": 16384, "allreduce_warmup": 2, "allreduce_iters": 5, "allreduce_timeout_s": 60}`
	cmd := exec.Command(py, "torchbench.py", cfg)
	cmd.Dir = t.TempDir()
	script, err := os.ReadFile("torchbench.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cmd.Dir, "torchbench.py"), script, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torchbench.py: %v\n%s", err, out)
	}
	var res struct {
		Tool, Device string
		Results      []torchResultOf
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if res.Device != "cpu" || len(res.Results) != 6 {
		t.Fatalf("device %q, %d results: %s", res.Device, len(res.Results), out)
	}
	byMetric := map[string]torchResultOf{}
	for _, r := range res.Results {
		byMetric[r.Metric] = r
	}

	// BF16: a sweep of both shapes on both "GPUs" at once, then a
	// sustained run at least as long as asked; value is its median.
	bf16 := byMetric[agent.MetricBF16GEMM]
	if bf16.Error != "" || len(bf16.PerGPU) != 2 || len(bf16.BestPerGPU) != 2 || !bf16.Concurrent ||
		bf16.SustainedS < 0.3 || len(bf16.Sweep) != 2 || bf16.Sweep[0].Shape != "64x64x64" || bf16.Sweep[1].Shape != "128x128x128" {
		t.Errorf("bf16: %+v", bf16)
	}
	if bf16.Value <= 0 || bf16.Value != median(bf16.PerGPU) || bf16.Best <= 0 || bf16.Best != median(bf16.BestPerGPU) {
		t.Errorf("bf16 value %v best %v from per GPU %v best %v", bf16.Value, bf16.Best, bf16.PerGPU, bf16.BestPerGPU)
	}
	if !strings.Contains(bf16.Detail, "on 2 GPUs at once") || strings.Contains(bf16.Detail, "L2 flushed") {
		t.Errorf("bf16 detail %q", bf16.Detail)
	}
	// FP16 matmul may not exist on the CPU (PyTorch before 2.1): then it
	// fails alone, with the reason, and every other load still runs.
	if fp16 := byMetric[agent.MetricFP16GEMM]; fp16.Error == "" && (len(fp16.PerGPU) != 2 || fp16.Value <= 0) || fp16.Error != "" && !strings.Contains(fp16.Error, "Half") {
		t.Errorf("fp16: %+v", fp16)
	}
	for _, m := range []string{agent.MetricD2D, agent.MetricH2D, agent.MetricD2H} {
		if r := byMetric[m]; r.Error != "" || len(r.PerGPU) != 2 || r.Value <= 0 {
			t.Errorf("%s: %+v", m, r)
		}
	}
	if d := byMetric[agent.MetricH2D].Detail; !strings.Contains(d, "pinned to NUMA node 0") {
		t.Errorf("host copy detail %q does not say where it ran", d)
	}

	// All-reduce: 1 KiB to 64 KiB doubling, busbw = algbw × 2(n−1)/n,
	// value the best busbw of the sizes from 16 KiB on.
	ar := byMetric[agent.MetricAllReduceBus]
	if ar.Error != "" || len(ar.Sweep) != 7 {
		t.Fatalf("all-reduce: %+v", ar)
	}
	var plateau float64
	for i, p := range ar.Sweep {
		if p.Bytes != 1024<<i || p.TimeUS <= 0 || math.Abs(p.AlgBW-float64(p.Bytes)/(p.TimeUS/1e6)/1e9) > 1e-9*p.AlgBW ||
			math.Abs(p.BusBW-p.AlgBW*2*(2-1)/2) > 1e-12 {
			t.Errorf("all-reduce step %d: %+v", i, p)
		}
		if p.Bytes >= 16384 {
			plateau = max(plateau, p.BusBW)
		}
	}
	if ar.Value != plateau || !strings.Contains(ar.Detail, "1 KiB to 64 KiB") {
		t.Errorf("all-reduce value %v, want the plateau %v; detail %q", ar.Value, plateau, ar.Detail)
	}
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestBenchmarkTelemetryTakesInstantPower: during a run the samples carry
// NVML's instantaneous power where the driver offers it (on Hopper the
// ordinary reading is a 1-s average, which lags and smooths a load), and
// say which one they hold.
func TestBenchmarkTelemetryTakesInstantPower(t *testing.T) {
	sim, err := gpu.SimulateCatalog("h100-sxm", 2)
	if err != nil {
		t.Fatal(err)
	}
	// GPU 0's driver answers NVML_FI_DEV_POWER_INSTANT (field 186) with
	// 612.345 W, as nvml.h documents it: milliwatts, unsigned int; GPU
	// 1's is older and does not know the field.
	answer := func(ret nvml.Return, mw uint32) func([]nvml.FieldValue) nvml.Return {
		return func(values []nvml.FieldValue) nvml.Return {
			for i := range values {
				values[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				if values[i].FieldId == 186 {
					values[i].NvmlReturn = uint32(ret)
					values[i].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
					binary.NativeEndian.PutUint32(values[i].Value[:], mw)
				}
			}
			return nvml.SUCCESS
		}
	}
	sim.Server.Devices[0].(*server.Device).GetFieldValuesFunc = answer(nvml.SUCCESS, 612345)
	sim.Server.Devices[1].(*server.Device).GetFieldValuesFunc = answer(nvml.ERROR_NOT_SUPPORTED, 0)
	r, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	rep, _ := runSampled(t, sim, r, sim.UUIDs(), &h100, agent.BenchOptions{}, 3)

	checkTelemetry(t, rep, []int{0, 1}, 3)
	for _, s := range rep.Telemetry {
		switch {
		case s.Index == 0 && (!s.T.PowerInstant || s.T.PowerW != 612.345):
			t.Errorf("GPU 0 sample %+v, want the instant 612.345 W", s.T)
		case s.Index == 1 && (s.T.PowerInstant || s.T.PowerW <= 0):
			t.Errorf("GPU 1 sample %+v, want the averaged reading, marked so", s.T)
		}
	}
}
