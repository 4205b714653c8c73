package agent

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"suanli/gpu"
	"suanli/locales"
)

// torchBench is the PyTorch load generator, written to a temporary
// directory and run with python3 for each benchmark.
//
//go:embed torchbench.py
var torchBench []byte

// Defaults for the BenchOptions fields left zero.
const (
	DefaultBenchTimeout = 20 * time.Minute
	// DefaultSimFactor is what a simulated agent multiplies every nominal
	// figure by: about what a healthy H100 SXM measures of its datasheet
	// (dense BF16 ~800 of 989 TFLOPS, a device copy ~2.9 of 3.35 TB/s,
	// ~52 of 63 GB/s on PCIe Gen 5 x16).
	DefaultSimFactor   = 0.82
	DefaultSimDuration = 3 * time.Second
	DefaultPython      = "python3"
)

// BenchOptions tunes benchmark tasks. The zero value runs them with the
// defaults.
type BenchOptions struct {
	// Python is the interpreter that runs the PyTorch load, looked up on
	// PATH unless it is a path. Default "python3".
	Python string
	// Timeout bounds the whole run; one load generator gets at most half
	// of it, so that a hung one leaves time for the others. Default 20 min.
	Timeout time.Duration
	// SampleEvery is the telemetry interval. Default 100 ms.
	SampleEvery time.Duration
	// MaxSamples caps the telemetry (at most MaxTelemetrySamples, the
	// default): past it every other sampling round is dropped, rounds
	// with XIDs excepted, and the interval doubles, so that a long run is
	// still covered end to end.
	MaxSamples int
	// SimFactor is the fraction of the nominal figures a simulated agent
	// reports. Default DefaultSimFactor.
	SimFactor float64
	// SimDuration is how long a simulated run samples telemetry.
	// Default 3 s.
	SimDuration time.Duration
	// LookPath finds the load generators; default exec.LookPath.
	LookPath func(file string) (string, error)
}

func (o BenchOptions) withDefaults() BenchOptions {
	if o.Python == "" {
		o.Python = DefaultPython
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultBenchTimeout
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = DefaultSampleEvery
	}
	if o.MaxSamples <= 0 || o.MaxSamples > MaxTelemetrySamples {
		o.MaxSamples = MaxTelemetrySamples
	}
	if o.SimFactor <= 0 {
		o.SimFactor = DefaultSimFactor
	}
	if o.SimDuration <= 0 {
		o.SimDuration = DefaultSimDuration
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	return o
}

// benchmark runs a benchmark task: the report goes into Result.Detail.
func (a *Agent) benchmark(ctx context.Context, t Task) Result {
	rep, err := RunBenchmark(ctx, a.cfg.GPUs, t.GPUUUIDs, t.Nominal, a.cfg.Bench)
	if err != nil {
		return Result{Error: err.Error()}
	}
	detail, err := json.Marshal(rep)
	if err != nil {
		return Result{Error: "benchmark report: " + err.Error()}
	}
	return Result{OK: true, Detail: detail}
}

// RunBenchmark benchmarks exactly the GPUs named, by UUID: it takes the
// NVML identity and health snapshot, samples telemetry while the loads
// run, and runs each load generator found on the host (PyTorch through
// python3, nvbandwidth, nccl-tests' all_reduce_perf); one that is missing
// is reported absent and one that fails is reported failed, and neither
// fails the run. On a simulated host no load runs: every figure is the
// nominal one times SimFactor, marked simulated. It fails only when the
// GPUs cannot be benchmarked at all: none named, NVML unavailable, or a
// GPU not present on this host.
func RunBenchmark(ctx context.Context, gpus GPUs, uuids []string, nominal *Nominal, opts BenchOptions) (BenchmarkReport, error) {
	opts = opts.withDefaults()
	if len(uuids) == 0 {
		return BenchmarkReport{}, errors.New("benchmark task names no GPUs")
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	host := gpus.Read()
	if host.InitError != "" {
		return BenchmarkReport{}, fmt.Errorf("benchmark: NVML unavailable: %s", host.InitError)
	}
	snapshot, err := benchHost(host, uuids)
	if err != nil {
		return BenchmarkReport{}, err
	}
	rep := BenchmarkReport{
		Simulated: host.Simulated,
		Host:      snapshot,
		GPUUUIDs:  slices.Clone(uuids),
		StartedAt: time.Now(),
	}

	tel := startTelemetry(ctx, samplerFor(gpus, uuids), opts.SampleEvery, opts.MaxSamples, rep.StartedAt)
	if host.Simulated {
		rep.SimFactor = opts.SimFactor
		rep.Loads = simulatedLoads(snapshot.GPUs, nominal, opts.SimFactor)
		select {
		case <-time.After(opts.SimDuration):
		case <-ctx.Done():
		}
	} else {
		rep.Loads = runLoads(ctx, uuids, opts)
	}
	rep.Telemetry = tel.stop()
	rep.FinishedAt = time.Now()
	return rep, nil
}

// benchHost is the snapshot of the task's GPUs, in the task's order. A GPU
// NVML does not report, or reports missing, cannot be benchmarked.
func benchHost(h gpu.Host, uuids []string) (gpu.Host, error) {
	out := h
	out.GPUs = make([]gpu.Info, 0, len(uuids))
	var missing []string
	for _, u := range uuids {
		i := slices.IndexFunc(h.GPUs, func(g gpu.Info) bool { return g.UUID == u })
		if i < 0 || !present(h.GPUs[i]) {
			missing = append(missing, u+": not present on this host")
			continue
		}
		out.GPUs = append(out.GPUs, h.GPUs[i])
	}
	if len(missing) > 0 {
		return gpu.Host{}, errors.New("benchmark: " + strings.Join(missing, "; "))
	}
	return out, nil
}

func present(g gpu.Info) bool {
	for _, c := range g.Health.Checks {
		if c.Name == gpu.CheckPresent && !c.OK {
			return false
		}
	}
	return true
}

// Telemetry.

// sampleSource takes one reading of each of the task's GPUs.
type sampleSource interface {
	Sample() []gpu.Reading
	Close()
}

// samplerOpener is implemented by *gpu.Reader: a sampler with XID event
// sets of its own, lighter than a full Read.
type samplerOpener interface {
	NewSampler(uuids []string) *gpu.Sampler
}

// samplerFor is the GPUs' own sampler, or else one that reads the whole
// host each time (without XIDs).
func samplerFor(gpus GPUs, uuids []string) sampleSource {
	if o, ok := gpus.(samplerOpener); ok {
		return o.NewSampler(uuids)
	}
	return readSampler{gpus: gpus, uuids: uuids}
}

type readSampler struct {
	gpus  GPUs
	uuids []string
}

func (s readSampler) Sample() []gpu.Reading {
	h := s.gpus.Read()
	out := make([]gpu.Reading, 0, len(s.uuids))
	for _, u := range s.uuids {
		i := slices.IndexFunc(h.GPUs, func(g gpu.Info) bool { return g.UUID == u })
		switch {
		case i < 0:
			out = append(out, gpu.Reading{UUID: u, Index: -1, Err: "not found"})
		case !present(h.GPUs[i]):
			out = append(out, gpu.Reading{UUID: u, Index: h.GPUs[i].Index, Err: "missing"})
		default:
			out = append(out, gpu.Reading{UUID: u, Index: h.GPUs[i].Index, T: h.GPUs[i].Telemetry})
		}
	}
	return out
}

func (readSampler) Close() {}

// telemetry samples the task's GPUs on its own goroutine until stop.
type telemetry struct {
	src   sampleSource
	start time.Time
	max   int
	stopc chan struct{}
	done  chan struct{}

	mu     sync.Mutex
	rounds [][]Sample // one per sampling round, each with a sample per GPU read
	count  int
	every  time.Duration
	full   bool // thinning no longer helps: later rounds are dropped
}

func startTelemetry(ctx context.Context, src sampleSource, every time.Duration, max int, start time.Time) *telemetry {
	t := &telemetry{src: src, start: start, max: max, every: every, stopc: make(chan struct{}), done: make(chan struct{})}
	t.round(false)
	go t.loop(ctx)
	return t
}

func (t *telemetry) loop(ctx context.Context) {
	defer close(t.done)
	every := t.interval()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.round(false)
			if e := t.interval(); e != every {
				every = e
				tick.Reset(every)
			}
		case <-t.stopc:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (t *telemetry) interval() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.every
}

// round takes one reading of every GPU. A GPU that could not be read
// adds a sample only when it raised XIDs (they matter most then: XID 79
// says it fell off the bus), with empty telemetry. The final round, taken
// when the loads are done, only adds its XIDs to the round before when
// that one is less than half an interval old.
func (t *telemetry) round(final bool) {
	readings := t.src.Sample()
	at := time.Since(t.start).Milliseconds()
	round := make([]Sample, 0, len(readings))
	for _, r := range readings {
		if r.Err != "" && len(r.XIDs) == 0 {
			continue
		}
		round = append(round, Sample{AtMS: at, Index: r.Index, T: r.T, XIDs: r.XIDs})
	}
	if len(round) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.full {
		return
	}
	if final && len(t.rounds) > 0 {
		if last := t.rounds[len(t.rounds)-1]; time.Duration(at-last[0].AtMS)*time.Millisecond < t.every/2 {
			t.merge(round)
			return
		}
	}
	t.rounds = append(t.rounds, round)
	t.count += len(round)
	for t.count > t.max && !t.full {
		t.thin()
	}
}

// merge adds the XIDs of a round to the last one. The caller holds mu.
func (t *telemetry) merge(round []Sample) {
	last := t.rounds[len(t.rounds)-1]
	for _, s := range round {
		if len(s.XIDs) == 0 {
			continue
		}
		if i := slices.IndexFunc(last, func(l Sample) bool { return l.Index == s.Index }); i >= 0 {
			last[i].XIDs = append(last[i].XIDs, s.XIDs...)
		} else {
			last = append(last, s)
			t.count++
		}
	}
	t.rounds[len(t.rounds)-1] = last
}

// thin drops every other round but the last and those with XIDs, and
// doubles the interval. The caller holds mu.
func (t *telemetry) thin() {
	kept := t.rounds[:0]
	count := 0
	last := len(t.rounds) - 1
	for i, r := range t.rounds {
		if i%2 == 0 || i == last || hasXIDs(r) {
			kept = append(kept, r)
			count += len(r)
		}
	}
	if count == t.count {
		t.full = true
		if count > t.max { // rounds full of XIDs: keep the first max samples' rounds
			for count > t.max && len(kept) > 1 {
				count -= len(kept[len(kept)-1])
				kept = kept[:len(kept)-1]
			}
		}
	}
	clear(t.rounds[len(kept):])
	t.rounds, t.count = kept, count
	t.every *= 2
}

func hasXIDs(r []Sample) bool {
	return slices.ContainsFunc(r, func(s Sample) bool { return len(s.XIDs) > 0 })
}

// stop takes a last round (to catch XIDs raised at the very end), stops
// the sampler and returns the samples in time order.
func (t *telemetry) stop() []Sample {
	close(t.stopc)
	<-t.done
	t.round(true)
	t.src.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Sample, 0, t.count)
	for _, r := range t.rounds {
		out = append(out, r...)
	}
	return out
}

// Simulated loads.

// simulatedLoads derives every figure from the nominal ones times f. Host
// to device uses the PCIe link NVML reports (its maximum generation and
// width), since the catalogue has no figure for it.
func simulatedLoads(gpus []gpu.Info, nom *Nominal, f float64) []Load {
	n := len(gpus)
	sim := func(metric string, nominal float64, unit, what string) Load {
		if nominal <= 0 {
			l := Load{Metric: metric, Tool: LoadSimulated, Status: LoadAbsent}
			l.say(locales.M("bench.load.sim_absent", locales.M("bench.load.what."+what)))
			return l
		}
		l := Load{Metric: metric, Tool: LoadSimulated, Status: LoadSimulated, Value: nominal * f, PerGPU: repeat(nominal*f, n)}
		l.say(locales.M("bench.load.sim", nominal, unit, f))
		return l
	}
	var bf16, fp16, mem, nvlink float64
	if nom != nil {
		bf16, fp16, mem, nvlink = nom.BF16TFLOPS, nom.FP16TFLOPS, nom.MemBWGBps, nom.NVLinkGBps
	}
	loads := []Load{
		sim(MetricBF16GEMM, bf16, "TFLOPS", "bf16"),
		sim(MetricFP16GEMM, fp16, "TFLOPS", "fp16"),
		sim(MetricD2D, mem, "GB/s", "mem_bw"),
	}

	pcie := make([]float64, n)
	var links []locales.Msg
	for i, g := range gpus {
		gen, width := g.PCIeGenMax, g.PCIeWidthMax
		key := "bench.load.link"
		if pcieLaneGBps(gen) == 0 || width <= 0 {
			gen, width, key = 4, 16, "bench.load.link_assumed"
		}
		nominal := pcieLaneGBps(gen) * float64(width)
		pcie[i] = nominal * f
		link := locales.M(key, gen, width, nominal)
		if !slices.ContainsFunc(links, func(l locales.Msg) bool { return l.JSON() == link.JSON() }) {
			links = append(links, link)
		}
	}
	for _, metric := range []string{MetricH2D, MetricD2H} {
		l := Load{Metric: metric, Tool: LoadSimulated, Status: LoadSimulated, Value: median(pcie), PerGPU: slices.Clone(pcie)}
		l.say(locales.M("bench.load.sim_pcie", links, f))
		loads = append(loads, l)
	}

	if n > 1 {
		ar := Load{Metric: MetricAllReduceBus, Tool: LoadSimulated, Status: LoadSimulated}
		if nvlink > 0 {
			ar.Value = nvlink / 2 * f
			ar.say(locales.M("bench.load.sim_nvlink", nvlink, nvlink/2, f))
		} else {
			ar.Value = median(pcie)
			ar.say(locales.M("bench.load.sim_no_nvlink", links, f))
		}
		loads = append(loads, ar)
	}
	return loads
}

// pcieLaneGBps is one PCIe lane's bandwidth per direction in GB/s, after
// line encoding, by generation (0 when unknown).
func pcieLaneGBps(gen int) float64 {
	switch gen {
	case 1:
		return 0.25
	case 2:
		return 0.5
	case 3:
		return 8 * 128.0 / 130 / 8
	case 4:
		return 16 * 128.0 / 130 / 8
	case 5:
		return 32 * 128.0 / 130 / 8
	case 6:
		return 64 * 242.0 / 256 / 8
	}
	return 0
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// median of the values (of the two middle ones when even).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Real loads.

// Load generator names, as Load.Tool reports them.
const (
	toolPyTorch     = "pytorch"
	toolNVBandwidth = "nvbandwidth"
	toolNCCLTests   = "nccl-tests"
)

// runLoads runs every load generator present, one after the other, on
// the task's GPUs (CUDA_VISIBLE_DEVICES lists their UUIDs in the task's
// order, so PerGPU follows GPUUUIDs).
func runLoads(ctx context.Context, uuids []string, opts BenchOptions) []Load {
	n := len(uuids)
	env := append(os.Environ(), "CUDA_VISIBLE_DEVICES="+strings.Join(uuids, ","))
	limit := opts.Timeout / 2
	dir, err := os.MkdirTemp("", "suanli-bench-")
	if err != nil {
		reason := "no temporary directory: " + err.Error()
		loads := failedLoads(toolPyTorch, "", pytorchMetrics(n), reason)
		loads = append(loads, failedLoads(toolNVBandwidth, "", nvbandwidthMetrics, reason)...)
		if n > 1 {
			loads = append(loads, failedLoads(toolNCCLTests, "", []string{MetricAllReduceBus}, reason)...)
		}
		return loads
	}
	defer os.RemoveAll(dir)

	loads := pytorchLoads(ctx, limit, dir, env, n, opts)
	loads = append(loads, nvbandwidthLoads(ctx, limit, dir, env, n, opts.LookPath)...)
	if n > 1 {
		loads = append(loads, ncclTestsLoads(ctx, limit, dir, env, n, opts.LookPath)...)
	}
	return loads
}

func absentLoads(tool string, metrics []string, reason string) []Load {
	out := make([]Load, len(metrics))
	for i, m := range metrics {
		out[i] = Load{Metric: m, Tool: tool, Status: LoadAbsent, Detail: reason}
	}
	return out
}

func failedLoads(tool, version string, metrics []string, reason string) []Load {
	out := make([]Load, len(metrics))
	for i, m := range metrics {
		out[i] = Load{Metric: m, Tool: tool, Version: version, Status: LoadFailed, Detail: reason}
	}
	return out
}

// okLoad is a measured figure, or a failure when it is not a positive
// finite number (a tool that printed nonsense invents nothing).
func okLoad(metric, tool, version string, value float64, perGPU []float64, detail string) Load {
	l := Load{Metric: metric, Tool: tool, Version: version, Status: LoadOK, Value: value, PerGPU: perGPU, Detail: detail}
	bad := !(value > 0) || math.IsInf(value, 0)
	for _, v := range perGPU {
		bad = bad || !(v > 0) || math.IsInf(v, 0)
	}
	if bad {
		return Load{Metric: metric, Tool: tool, Version: version, Status: LoadFailed,
			Detail: fmt.Sprintf("%s reported %v (per GPU %v), not a bandwidth or rate", tool, value, perGPU)}
	}
	return l
}

// toolFailure says why a tool run failed: its error and the end of its
// output.
func toolFailure(name string, err error, stdout, stderr []byte) string {
	out := shortTail(stderr)
	if out == "" {
		out = shortTail(stdout)
	}
	if out == "" {
		return fmt.Sprintf("%s: %v", name, err)
	}
	return fmt.Sprintf("%s: %v; output: %s", name, err, out)
}

// shortTailBytes is how much of a tool's output goes into a load's detail.
const shortTailBytes = 600

func shortTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > shortTailBytes {
		s = "…" + s[len(s)-shortTailBytes:]
	}
	return s
}

// maxToolOutput is how much of a tool's stdout and stderr is kept (the
// end of it, where the results are).
const maxToolOutput = 1 << 20

// tailBuffer keeps the last maxToolOutput bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*maxToolOutput {
		t.b = append(t.b[:0], t.b[len(t.b)-maxToolOutput:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	if len(t.b) > maxToolOutput {
		return t.b[len(t.b)-maxToolOutput:]
	}
	return t.b
}

// errToolStopped marks a tool killed because its time ran out or the
// agent is stopping.
var errToolStopped = errors.New("timed out or stopped")

// runTool runs a load generator in its own process group, so that a
// timeout also kills what it spawned (PyTorch's all-reduce workers).
func runTool(ctx context.Context, limit time.Duration, dir string, env []string, path string, args ...string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", err, errToolStopped)
	}
	return out.Bytes(), errOut.Bytes(), err
}

// PyTorch.

func pytorchMetrics(n int) []string {
	m := []string{MetricBF16GEMM, MetricFP16GEMM, MetricD2D, MetricH2D, MetricD2H}
	if n > 1 {
		m = append(m, MetricAllReduceBus)
	}
	return m
}

// torchOutput is what torchbench.py prints.
type torchOutput struct {
	Tool        string        `json:"tool"`
	Version     string        `json:"version"`
	CUDA        string        `json:"cuda"`
	NCCL        string        `json:"nccl"`
	Unavailable string        `json:"unavailable"`
	Error       string        `json:"error"`
	Results     []torchResult `json:"results"`
}

// torchResult is one metric torchbench.py measured, or why it could not.
type torchResult struct {
	Metric string    `json:"metric"`
	Value  float64   `json:"value"`
	PerGPU []float64 `json:"per_gpu"`
	Detail string    `json:"detail"`
	Error  string    `json:"error"`
}

func pytorchLoads(ctx context.Context, limit time.Duration, dir string, env []string, n int, opts BenchOptions) []Load {
	metrics := pytorchMetrics(n)
	py, err := opts.LookPath(opts.Python)
	if err != nil {
		return absentLoads(toolPyTorch, metrics, opts.Python+" not found on PATH")
	}
	if _, stderr, err := runTool(ctx, min(limit, 2*time.Minute), dir, env, py, "-c", "import torch"); err != nil {
		if errors.Is(err, errToolStopped) {
			return failedLoads(toolPyTorch, "", metrics, toolFailure(py+` -c "import torch"`, err, nil, stderr))
		}
		return absentLoads(toolPyTorch, metrics, "PyTorch cannot be imported by "+py+": "+lastLine(stderr))
	}
	script := filepath.Join(dir, "torchbench.py")
	if err := os.WriteFile(script, torchBench, 0o600); err != nil {
		return failedLoads(toolPyTorch, "", metrics, "writing the script: "+err.Error())
	}
	cfg := fmt.Sprintf(`{"gpus":%d,"allreduce_timeout_s":%d}`, n, max(60, int(limit.Seconds())/2))
	stdout, stderr, err := runTool(ctx, limit, dir, env, py, script, cfg)
	if err != nil {
		return failedLoads(toolPyTorch, "", metrics, toolFailure("torchbench.py", err, stdout, stderr))
	}
	out, ok := lastJSONLine[torchOutput](stdout, `{"tool"`)
	if !ok {
		return failedLoads(toolPyTorch, "", metrics, "torchbench.py printed no result; output: "+shortTail(stdout))
	}
	switch {
	case out.Unavailable != "":
		return absentLoads(toolPyTorch, metrics, out.Unavailable)
	case out.Error != "":
		return failedLoads(toolPyTorch, out.Version, metrics, out.Error)
	}

	var stack []string
	if out.CUDA != "" {
		stack = append(stack, "CUDA "+out.CUDA)
	}
	if out.NCCL != "" {
		stack = append(stack, "NCCL "+out.NCCL)
	}
	suffix := ""
	if len(stack) > 0 {
		suffix = " (" + strings.Join(stack, ", ") + ")"
	}
	loads := make([]Load, 0, len(metrics))
	for _, m := range metrics {
		i := slices.IndexFunc(out.Results, func(r torchResult) bool { return r.Metric == m })
		switch {
		case i < 0:
			loads = append(loads, failedLoads(toolPyTorch, out.Version, []string{m}, "torchbench.py reported no result for it")...)
		case out.Results[i].Error != "":
			loads = append(loads, failedLoads(toolPyTorch, out.Version, []string{m}, out.Results[i].Error)...)
		default:
			r := out.Results[i]
			if m != MetricAllReduceBus && len(r.PerGPU) != n {
				loads = append(loads, failedLoads(toolPyTorch, out.Version, []string{m},
					fmt.Sprintf("torchbench.py measured %d GPUs, the task has %d", len(r.PerGPU), n))...)
				continue
			}
			loads = append(loads, okLoad(m, toolPyTorch, out.Version, r.Value, r.PerGPU, r.Detail+suffix))
		}
	}
	return loads
}

// lastJSONLine decodes the last line of out that starts with prefix (a
// tool's stdout may carry library chatter, NCCL's for one, before it).
func lastJSONLine[T any](out []byte, prefix string) (T, bool) {
	var v T
	lines := strings.Split(string(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, prefix) && json.Unmarshal([]byte(line), &v) == nil {
			return v, true
		}
	}
	return v, false
}

// lastLine is the last non-empty line of a command's output: Python's
// "ModuleNotFoundError: No module named 'torch'".
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	s := strings.TrimSpace(lines[len(lines)-1])
	if s == "" {
		return "import failed"
	}
	if len(s) > shortTailBytes {
		s = s[:shortTailBytes] + "…"
	}
	return s
}

// nvbandwidth.

// nvbandwidthMetrics are what nvbandwidth measures for a report.
var nvbandwidthMetrics = []string{MetricD2D, MetricH2D, MetricD2H}

// nvbandwidthCases are its testcases, by metric, and what each figure is
// multiplied by: nvbandwidth counts a local copy's bytes once, the
// reports count a device copy's read and write.
var nvbandwidthCases = []struct {
	metric, testcase string
	scale            float64
	detail           string
}{
	{MetricD2D, "device_local_copy", 2, "device_local_copy (copy engine) × 2, counting read + write"},
	{MetricH2D, "host_to_device_memcpy_ce", 1, "host_to_device_memcpy_ce (copy engine, pinned)"},
	{MetricD2H, "device_to_host_memcpy_ce", 1, "device_to_host_memcpy_ce (copy engine, pinned)"},
}

// nvbandwidthOutput is nvbandwidth's --json output.
type nvbandwidthOutput struct {
	NVBandwidth struct {
		Version   string                `json:"version"`
		Error     string                `json:"error"`
		Testcases []nvbandwidthTestcase `json:"testcases"`
	} `json:"nvbandwidth"`
}

// nvbandwidthTestcase is one testcase's outcome; a bandwidth matrix cell
// is a number written as a string, or "N/A".
type nvbandwidthTestcase struct {
	Name   string              `json:"name"`
	Status string              `json:"status"`
	Error  string              `json:"error"`
	Matrix [][]json.RawMessage `json:"bandwidth_matrix"`
}

func nvbandwidthLoads(ctx context.Context, limit time.Duration, dir string, env []string, n int, lookPath func(string) (string, error)) []Load {
	path, err := lookPath("nvbandwidth")
	if err != nil {
		return absentLoads(toolNVBandwidth, nvbandwidthMetrics, "nvbandwidth not found on PATH")
	}
	args := []string{"--json", "--testcase"}
	for _, c := range nvbandwidthCases {
		args = append(args, c.testcase)
	}
	stdout, stderr, runErr := runTool(ctx, limit, dir, env, path, args...)
	var out nvbandwidthOutput
	start := bytes.IndexByte(stdout, '{')
	if start < 0 || json.NewDecoder(bytes.NewReader(stdout[start:])).Decode(&out) != nil {
		if runErr == nil {
			runErr = errors.New("output is not its JSON")
		}
		return failedLoads(toolNVBandwidth, "", nvbandwidthMetrics, toolFailure("nvbandwidth", runErr, stdout, stderr))
	}
	nv := out.NVBandwidth
	loads := make([]Load, 0, len(nvbandwidthCases))
	for _, c := range nvbandwidthCases {
		i := slices.IndexFunc(nv.Testcases, func(tc nvbandwidthTestcase) bool { return tc.Name == c.testcase })
		fail := func(reason string) {
			loads = append(loads, failedLoads(toolNVBandwidth, nv.Version, []string{c.metric}, reason)...)
		}
		switch {
		case i < 0 && nv.Error != "":
			fail("nvbandwidth: " + nv.Error)
			continue
		case i < 0 && runErr != nil:
			fail(toolFailure("nvbandwidth", runErr, stdout, stderr))
			continue
		case i < 0:
			fail("nvbandwidth reported no " + c.testcase)
			continue
		}
		tc := nv.Testcases[i]
		switch {
		case strings.EqualFold(tc.Status, "Waived"):
			loads = append(loads, Load{Metric: c.metric, Tool: toolNVBandwidth, Version: nv.Version, Status: LoadAbsent,
				Detail: c.testcase + " waived by nvbandwidth on this host"})
			continue
		case !strings.EqualFold(tc.Status, "Passed"):
			reason := fmt.Sprintf("%s: %s", c.testcase, tc.Status)
			if tc.Error != "" {
				reason += ": " + tc.Error
			}
			fail(reason)
			continue
		case len(tc.Matrix) == 0:
			fail(c.testcase + ": no bandwidth matrix")
			continue
		}
		var perGPU []float64
		for _, cell := range tc.Matrix[0] {
			if v, ok := matrixValue(cell); ok {
				perGPU = append(perGPU, v*c.scale)
			}
		}
		if len(perGPU) != n {
			fail(fmt.Sprintf("%s: %d GPU figures for %d GPUs", c.testcase, len(perGPU), n))
			continue
		}
		loads = append(loads, okLoad(c.metric, toolNVBandwidth, nv.Version, median(perGPU), perGPU, c.detail))
	}
	return loads
}

// matrixValue reads one cell of nvbandwidth's matrix: a number written as
// a string ("55.2"), or "N/A".
func matrixValue(cell json.RawMessage) (float64, bool) {
	var s string
	if json.Unmarshal(cell, &s) == nil {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return v, err == nil
	}
	var v float64
	return v, json.Unmarshal(cell, &v) == nil
}

// nccl-tests.

var (
	ncclTestsVersionRe = regexp.MustCompile(`(?m)^# nccl-tests version (\S+)(?:.*nccl-library=(\d+))?`)
	ncclVersionRe      = regexp.MustCompile(`(?m)NCCL version (\d+\.\d+\.\d+)`)
	avgBusBWRe         = regexp.MustCompile(`(?m)^# Avg bus bandwidth\s*:\s*([0-9.eE+-]+)`)
	outOfBoundsRe      = regexp.MustCompile(`(?m)^# Out of bounds values\s*:\s*(\d+)\s+(\S+)`)
)

// allReduceBytes is the message size all_reduce_perf runs with.
const allReduceBytes = "256M"

func ncclTestsLoads(ctx context.Context, limit time.Duration, dir string, env []string, n int, lookPath func(string) (string, error)) []Load {
	metrics := []string{MetricAllReduceBus}
	path, err := lookPath("all_reduce_perf")
	if err != nil {
		return absentLoads(toolNCCLTests, metrics, "all_reduce_perf (nccl-tests) not found on PATH")
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "NCCL_DEBUG=") }) {
		env = append(slices.Clip(env), "NCCL_DEBUG=VERSION") // NCCL prints its version
	}
	args := []string{"-b", allReduceBytes, "-e", allReduceBytes, "-g", strconv.Itoa(n), "-w", "5", "-n", "20"}
	stdout, stderr, runErr := runTool(ctx, limit, dir, env, path, args...)
	version, nccl := parseNCCLTestsVersion(stdout)
	if runErr != nil {
		return failedLoads(toolNCCLTests, version, metrics, toolFailure("all_reduce_perf", runErr, stdout, stderr))
	}
	if m := outOfBoundsRe.FindSubmatch(stdout); m != nil && string(m[1]) != "0" {
		return failedLoads(toolNCCLTests, version, metrics, fmt.Sprintf("all_reduce_perf found %s wrong values (%s)", m[1], m[2]))
	}
	m := avgBusBWRe.FindSubmatch(stdout)
	if m == nil {
		return failedLoads(toolNCCLTests, version, metrics, "all_reduce_perf printed no average bus bandwidth; output: "+shortTail(stdout))
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return failedLoads(toolNCCLTests, version, metrics, "all_reduce_perf: bus bandwidth "+string(m[1])+" is not a number")
	}
	detail := fmt.Sprintf("all_reduce_perf %s, average bus bandwidth (out-of-place and in-place)", strings.Join(args, " "))
	if nccl != "" {
		detail += "; NCCL " + nccl
	}
	if version == "" {
		detail += "; this nccl-tests does not print its version"
	}
	return []Load{okLoad(MetricAllReduceBus, toolNCCLTests, version, v, nil, detail)}
}

// parseNCCLTestsVersion reads nccl-tests' own version from its header
// ("# nccl-tests version 2.13.11 nccl-headers=22105 nccl-library=22105",
// printed since 2.13) and NCCL's, from that header or NCCL's own banner.
func parseNCCLTestsVersion(out []byte) (version, nccl string) {
	if m := ncclTestsVersionRe.FindSubmatch(out); m != nil {
		version = string(m[1])
		if code, err := strconv.Atoi(string(m[2])); err == nil && code > 0 {
			nccl = ncclCodeVersion(code)
		}
	}
	if m := ncclVersionRe.FindSubmatch(out); m != nil {
		nccl = string(m[1])
	}
	return version, nccl
}

// ncclCodeVersion turns NCCL_VERSION_CODE into a version: 22105 is
// 2.21.5; before 2.9 the code was 2708 for 2.7.8.
func ncclCodeVersion(code int) string {
	if code >= 20900 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code/100%100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code/100%10, code%100)
}
