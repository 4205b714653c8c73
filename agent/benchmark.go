package agent

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"suanli/agent/loadgen"
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
	// figure by. It sits below what real GPUs reach (a GEMM gets about
	// 80 % of dense peak on Hopper, 87 % on A100, 78 % on B200 in the MAMF
	// tables; a device copy ~87 % of the datasheet's bandwidth), so that
	// a simulated figure never looks better than a real one; a factor
	// above simCeiling of the task's realistic fraction is lowered to it.
	DefaultSimFactor   = 0.70
	DefaultSimDuration = 3 * time.Second
	DefaultPython      = "python3"
	// DefaultSustain is how long each dtype's GEMM runs flat out after
	// its sweep: long enough for clocks to settle under the node's power
	// and thermal limits (boost clocks hold for the first seconds).
	DefaultSustain = 10 * time.Second
	// simCeiling is how close to the realistic fraction of nominal a
	// simulated figure may come.
	simCeiling = 0.95
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
	// Sustain is how long each GEMM dtype runs flat out after its sweep.
	// Default DefaultSustain; tests pass less.
	Sustain time.Duration
	// SysRoot is where sysfs is mounted, to find each GPU's NUMA node
	// and CPUs from its PCI address. Default "/sys".
	SysRoot string
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
	if o.Sustain <= 0 {
		o.Sustain = DefaultSustain
	}
	if o.SysRoot == "" {
		o.SysRoot = "/sys"
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
// nominal one times SimFactor (kept below the model's realistic fraction
// when the task carries it), marked simulated. It fails only when the
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
		Simulated:     host.Simulated,
		Host:          snapshot,
		GPUUUIDs:      slices.Clone(uuids),
		StartedAt:     time.Now(),
		SampleEveryMS: opts.SampleEvery.Milliseconds(),
	}

	tel := startTelemetry(ctx, samplerFor(gpus, uuids), opts.SampleEvery, opts.MaxSamples, rep.StartedAt)
	if host.Simulated {
		rep.SimFactor = simFactor(opts.SimFactor, nominal)
		rep.Loads = simulatedLoads(snapshot.GPUs, nominal, rep.SimFactor)
		select {
		case <-time.After(opts.SimDuration):
		case <-ctx.Done():
		}
	} else {
		rep.Loads = loadgen.Run(ctx, snapshot.GPUs, loadgen.Options{Python: opts.Python, Script: torchBench,
			ToolLimit: opts.Timeout / 2, Sustain: opts.Sustain, SysRoot: opts.SysRoot, LookPath: opts.LookPath})
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

// simFactor is the factor a simulated run applies: the one asked for,
// lowered to simCeiling of the model's realistic fraction when the task
// carries it, so that a simulated figure stays below what the real model
// reaches.
func simFactor(f float64, nom *Nominal) float64 {
	if nom != nil && nom.RealisticFraction > 0 && f > nom.RealisticFraction*simCeiling {
		return math.Round(nom.RealisticFraction*simCeiling*1000) / 1000
	}
	return f
}

// simulatedLoads derives every figure from the nominal ones times f. Host
// to device uses the PCIe link NVML reports (its maximum generation and
// width), since the catalogue has no figure for it.
func simulatedLoads(gpus []gpu.Info, nom *Nominal, f float64) []Load {
	n := len(gpus)
	sim := func(metric string, nominal float64, unit, what string) Load {
		if nominal <= 0 {
			l := Load{Metric: metric, Tool: LoadSimulated, Status: LoadAbsent}
			l.Say(locales.M("bench.load.sim_absent", locales.M("bench.load.what."+what)))
			return l
		}
		l := Load{Metric: metric, Tool: LoadSimulated, Status: LoadSimulated, Value: nominal * f, PerGPU: repeat(nominal*f, n)}
		l.Say(locales.M("bench.load.sim", nominal, unit, f))
		if unit == "TFLOPS" { // no sweep and no sustained run: best and sustained are one figure
			l.Best, l.BestPerGPU = l.Value, slices.Clone(l.PerGPU)
		}
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
		l := Load{Metric: metric, Tool: LoadSimulated, Status: LoadSimulated, Value: loadgen.Median(pcie), PerGPU: slices.Clone(pcie)}
		l.Say(locales.M("bench.load.sim_pcie", links, f))
		loads = append(loads, l)
	}

	if n > 1 {
		ar := Load{Metric: MetricAllReduceBus, Tool: LoadSimulated, Status: LoadSimulated}
		if nvlink > 0 {
			ar.Value = nvlink / 2 * f
			ar.Say(locales.M("bench.load.sim_nvlink", nvlink, nvlink/2, f))
		} else {
			ar.Value = loadgen.Median(pcie)
			ar.Say(locales.M("bench.load.sim_no_nvlink", links, f))
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
