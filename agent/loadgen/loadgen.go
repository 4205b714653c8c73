// Package loadgen runs the benchmark's load generators on a node's GPUs
// (the embedded PyTorch script, nvbandwidth, nccl-tests' all_reduce_perf)
// and reads their results; package agent runs it for a benchmark task and
// keeps the telemetry around it. Every tool runs so that it never
// outlives the agent (runTool).
package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"suanli/gpu"
	"suanli/locales"
)

// Load metrics.
const (
	MetricBF16GEMM     = "bf16_gemm_tflops"     // dense BF16 GEMM, per GPU: Value sustained median, Best the sweep's best
	MetricFP16GEMM     = "fp16_gemm_tflops"     // dense FP16 GEMM, per GPU: as BF16
	MetricD2D          = "d2d_bw_gbps"          // device memory bandwidth (copy), per GPU
	MetricH2D          = "h2d_bw_gbps"          // host → device, pinned, per GPU
	MetricD2H          = "d2h_bw_gbps"          // device → host, pinned, per GPU
	MetricAllReduceBus = "allreduce_busbw_gbps" // NCCL all-reduce bus bandwidth at the sweep's plateau, whole node
)

// Load.Status values.
const (
	StatusOK        = "ok"
	StatusAbsent    = "absent"
	StatusFailed    = "failed"
	StatusSimulated = "simulated" // a simulated agent's figure, derived from nominal ones
)

// Load is one load generator's result for one metric. A generator that is
// not installed on the host is reported absent, never invented.
//
// Value is the figure the server keeps and shows. For a GEMM it is the
// sustained median: the median rate of a run of at least SustainedS
// seconds with every GPU of the task loaded at once (Concurrent), what a
// renter's training run gets once clocks settle under the node's power
// and cooling; Best is the MAMF-style best of a sweep of shapes, the
// figure to compare with what a model reaches at best (the catalogue's
// realistic fraction of nominal). Agents before the sweep sent Value only
// (the median of a short burst) and no Best. For all-reduce Value is the
// plateau bus bandwidth of a sweep of message sizes up to 1 GiB (Sweep).
type Load struct {
	Metric  string    `json:"metric"`
	Tool    string    `json:"tool"`    // "pytorch", "nvbandwidth", "nccl-tests", "simulated"
	Version string    `json:"version"` // the tool's own version string
	Status  string    `json:"status"`  // ok, absent, failed, simulated
	Value   float64   `json:"value"`   // per GPU (the node's for all-reduce); see above
	PerGPU  []float64 `json:"per_gpu,omitempty"`
	// Best is a GEMM's best figure (per GPU, median over GPUs), and
	// BestPerGPU each GPU's; 0 and nil for other metrics and old agents.
	Best       float64   `json:"best,omitempty"`
	BestPerGPU []float64 `json:"best_per_gpu,omitempty"`
	// SustainedS is how long the sustained run lasted, in seconds.
	SustainedS float64 `json:"sustained_s,omitempty"`
	// Concurrent says every GPU of the task ran the load at the same time.
	Concurrent bool `json:"concurrent,omitempty"`
	// Sweep is what each GEMM shape or all-reduce message size measured.
	Sweep  []SweepPoint `json:"sweep,omitempty"`
	Detail string       `json:"detail,omitempty"`
	// Msg is Detail as a message ("bench.load." keys), so that the
	// report reads in the reader's language where the agent wrote it
	// (a simulated load); a real tool's words are in Detail only.
	Msg locales.Msg `json:"msg,omitzero"`
}

// Say sets a load's detail: its message, and its English text.
func (l *Load) Say(m locales.Msg) {
	l.Msg = m
	l.Detail = m.Text(locales.EN)
}

// DetailText is the load's detail in lang: its message when it is one
// the catalogues know (the agent is the provider's word, so only
// benchmark messages are taken), else the detail as sent.
func (l Load) DetailText(lang string) string {
	if l.Msg.Valid("bench.load.") {
		return l.Msg.Text(lang)
	}
	return l.Detail
}

// SweepPoint is one step of a sweep: a GEMM shape ("8192x8192x8192",
// Value in TFLOPS, median over GPUs) or an all-reduce message size (Bytes,
// with its time per operation, algorithm and bus bandwidth in GB/s).
type SweepPoint struct {
	Shape  string  `json:"shape,omitempty"`
	Bytes  int64   `json:"bytes,omitempty"`
	Value  float64 `json:"value,omitempty"`
	TimeUS float64 `json:"time_us,omitempty"`
	AlgBW  float64 `json:"algbw,omitempty"`
	BusBW  float64 `json:"busbw,omitempty"`
}

// Load generator names, as Load.Tool reports them.
const (
	toolPyTorch     = "pytorch"
	toolNVBandwidth = "nvbandwidth"
	toolNCCLTests   = "nccl-tests"
)

// Options are what Run needs from the agent.
type Options struct {
	// Python is the interpreter that runs Script, looked up with LookPath.
	Python string
	// Script is torchbench.py, which the agent embeds.
	Script []byte
	// ToolLimit bounds each load generator's run.
	ToolLimit time.Duration
	// Sustain is how long each GEMM dtype runs flat out after its sweep.
	Sustain time.Duration
	// SysRoot is where sysfs is mounted ("/sys").
	SysRoot string
	// LookPath finds the load generators (exec.LookPath).
	LookPath func(file string) (string, error)
}

// Run runs every load generator present, one after the other, on the
// GPUs (CUDA_VISIBLE_DEVICES lists their UUIDs in order, so PerGPU
// follows them). One that is missing is reported absent and one that
// fails is reported failed.
func Run(ctx context.Context, gpus []gpu.Info, opts Options) []Load {
	n := len(gpus)
	uuids := make([]string, n)
	for i, g := range gpus {
		uuids[i] = g.UUID
	}
	env := append(os.Environ(), "CUDA_VISIBLE_DEVICES="+strings.Join(uuids, ","))
	limit := opts.ToolLimit
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

	cpus, numa := gpuAffinity(opts.SysRoot, gpus)
	loads := pytorchLoads(ctx, limit, dir, env, gpus, cpus, numa, opts)
	loads = append(loads, nvbandwidthLoads(ctx, limit, dir, gpus, cpus, numa, opts.LookPath)...)
	if n > 1 {
		loads = append(loads, ncclTestsLoads(ctx, limit, dir, env, n, opts.LookPath)...)
	}
	return loads
}

func absentLoads(tool string, metrics []string, reason string) []Load {
	out := make([]Load, len(metrics))
	for i, m := range metrics {
		out[i] = Load{Metric: m, Tool: tool, Status: StatusAbsent, Detail: reason}
	}
	return out
}

func failedLoads(tool, version string, metrics []string, reason string) []Load {
	out := make([]Load, len(metrics))
	for i, m := range metrics {
		out[i] = Load{Metric: m, Tool: tool, Version: version, Status: StatusFailed, Detail: reason}
	}
	return out
}

// okLoad is a measured figure, or a failure when it is not a positive
// finite number (a tool that printed nonsense invents nothing).
func okLoad(metric, tool, version string, value float64, perGPU []float64, detail string) Load {
	l := Load{Metric: metric, Tool: tool, Version: version, Status: StatusOK, Value: value, PerGPU: perGPU, Detail: detail}
	bad := !(value > 0) || math.IsInf(value, 0)
	for _, v := range perGPU {
		bad = bad || !(v > 0) || math.IsInf(v, 0)
	}
	if bad {
		return Load{Metric: metric, Tool: tool, Version: version, Status: StatusFailed,
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

// runTool runs a load generator so that it never outlives the agent:
//
//   - In its own process group, killed whole (SIGKILL to -pgid) when the
//     context ends, so that a timeout or a stopping agent also kills what
//     the tool spawned (PyTorch's all-reduce workers).
//   - With Pdeathsig SIGKILL, so that the kernel kills it when the agent
//     dies without a chance to cancel anything (SIGKILL, OOM killer).
//     Linux sends that signal when the THREAD that forked the child exits,
//     not the process, and Go may run a goroutine on any thread; the
//     goroutine that starts the tool therefore stays locked to its thread
//     until the tool has exited, so that thread cannot go away (or be
//     handed to a goroutine that locks it and exits) in between.
//     Pdeathsig is not inherited across fork: torchbench.py asks for it
//     again in each worker it starts (prctl PR_SET_PDEATHSIG), and
//     nvbandwidth and all_reduce_perf run in one process.
func runTool(ctx context.Context, limit time.Duration, dir string, env []string, path string, args ...string) (stdout, stderr []byte, err error) {
	stdout, stderr, _, err = runToolOn(ctx, limit, dir, env, nil, path, args...)
	return stdout, stderr, err
}

// runToolOn is runTool, with the tool bound to cpus (its GPUs' NUMA node)
// when there are any: the CPU affinity of the thread that forks is the
// child's, so the locked thread takes the tool's for the fork and its own
// back after it. pinned says whether that worked.
func runToolOn(ctx context.Context, limit time.Duration, dir string, env []string, cpus []int, path string, args ...string) (stdout, stderr []byte, pinned bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runtime.LockOSThread()
	var restore func()
	if len(cpus) > 0 {
		if r, err := bindThread(cpus); err == nil {
			restore, pinned = r, true
		}
	}
	err = cmd.Start()
	if restore != nil {
		restore()
	}
	if err == nil {
		err = cmd.Wait()
	}
	runtime.UnlockOSThread()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", err, errToolStopped)
	}
	return out.Bytes(), errOut.Bytes(), pinned, err
}

// cpuSetWords is the size of the kernel's cpu_set_t (1024 CPUs) in
// 64-bit words; CPUs past it are left out of a binding.
const cpuSetWords = 1024 / 64

// bindThread binds the calling OS thread (locked by the caller) to cpus,
// and returns how to give it back its own binding. The binding does not
// leak into the runtime: Go never clones a new thread from a locked one
// (it asks its template thread to), only the tool is forked from it.
func bindThread(cpus []int) (restore func(), err error) {
	var old, set [cpuSetWords]uint64
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(old), uintptr(unsafe.Pointer(&old))); e != 0 {
		return nil, e
	}
	for _, c := range cpus {
		if c >= 0 && c < cpuSetWords*64 {
			set[c/64] |= 1 << (c % 64)
		}
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(set), uintptr(unsafe.Pointer(&set))); e != 0 {
		return nil, e // CPUs outside this process's cpuset, say: the tool runs unbound
	}
	return func() {
		syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(old), uintptr(unsafe.Pointer(&old)))
	}, nil
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
	Device      string        `json:"device"` // "cuda"; empty from scripts before it said
	Unavailable string        `json:"unavailable"`
	Error       string        `json:"error"`
	Results     []torchResult `json:"results"`
}

// torchResult is one metric torchbench.py measured, or why it could not.
type torchResult struct {
	Metric     string       `json:"metric"`
	Value      float64      `json:"value"`
	PerGPU     []float64    `json:"per_gpu"`
	Best       float64      `json:"best"`
	BestPerGPU []float64    `json:"best_per_gpu"`
	SustainedS float64      `json:"sustained_s"`
	Concurrent bool         `json:"concurrent"`
	Sweep      []SweepPoint `json:"sweep"`
	Detail     string       `json:"detail"`
	Error      string       `json:"error"`
}

// torchConfig is the config torchbench.py runs with; its other settings
// are the script's defaults.
type torchConfig struct {
	GPUs              int     `json:"gpus"`
	AllReduceTimeoutS int     `json:"allreduce_timeout_s"`
	SustainS          float64 `json:"sustain_s"`
	CPUs              [][]int `json:"cpus"` // per GPU, the CPUs of its NUMA node; null when unknown
	NUMA              []int   `json:"numa"` // per GPU, its NUMA node; -1 when unknown
}

func pytorchLoads(ctx context.Context, limit time.Duration, dir string, env []string, gpus []gpu.Info, cpus [][]int, numa []int, opts Options) []Load {
	n := len(gpus)
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
	if err := os.WriteFile(script, opts.Script, 0o600); err != nil {
		return failedLoads(toolPyTorch, "", metrics, "writing the script: "+err.Error())
	}
	tc := torchConfig{GPUs: n, AllReduceTimeoutS: max(60, int(limit.Seconds())/2), SustainS: opts.Sustain.Seconds()}
	tc.CPUs, tc.NUMA = cpus, numa
	cfg, err := json.Marshal(tc)
	if err != nil {
		return failedLoads(toolPyTorch, "", metrics, "torchbench.py config: "+err.Error())
	}
	stdout, stderr, err := runTool(ctx, limit, dir, env, py, script, string(cfg))
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
	case out.Device != "" && out.Device != "cuda":
		// A test mode measures the CPU: never a GPU's figure.
		return failedLoads(toolPyTorch, out.Version, metrics, "torchbench.py measured device "+out.Device+", not the GPUs")
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
			if r.BestPerGPU != nil && len(r.BestPerGPU) != n {
				loads = append(loads, failedLoads(toolPyTorch, out.Version, []string{m},
					fmt.Sprintf("torchbench.py measured the best of %d GPUs, the task has %d", len(r.BestPerGPU), n))...)
				continue
			}
			l := okLoad(m, toolPyTorch, out.Version, r.Value, r.PerGPU, r.Detail+suffix)
			if l.Status == StatusOK {
				l = withSweep(l, r)
			}
			loads = append(loads, l)
		}
	}
	return loads
}

// withSweep adds what the sweep and the sustained run found to a measured
// load; a figure that is not a positive finite number fails the load.
func withSweep(l Load, r torchResult) Load {
	bad := func(v float64) bool { return !(v > 0) || math.IsInf(v, 0) }
	if r.Best != 0 || r.BestPerGPU != nil {
		if bad(r.Best) || slices.ContainsFunc(r.BestPerGPU, bad) {
			return Load{Metric: l.Metric, Tool: l.Tool, Version: l.Version, Status: StatusFailed,
				Detail: fmt.Sprintf("%s reported a best of %v (per GPU %v), not a rate", l.Tool, r.Best, r.BestPerGPU)}
		}
		l.Best, l.BestPerGPU = r.Best, r.BestPerGPU
	}
	if r.SustainedS > 0 && !math.IsInf(r.SustainedS, 0) {
		l.SustainedS = r.SustainedS
	}
	l.Concurrent = r.Concurrent
	for _, p := range r.Sweep {
		if slices.ContainsFunc([]float64{p.Value, p.TimeUS, p.AlgBW, p.BusBW}, func(v float64) bool { return v < 0 || math.IsInf(v, 0) || math.IsNaN(v) }) {
			continue // a step the tool got wrong says nothing; the headline figure was checked
		}
		l.Sweep = append(l.Sweep, p)
	}
	return l
}

// gpuAffinity finds each GPU's NUMA node and that node's CPUs from sysfs
// (the kernel's view of the PCI device NVML names by bus ID), so that the
// host copies run from the GPU's own socket; nil CPUs and node -1 where
// unknown (no sysfs, a single-node host reports node -1 too).
func gpuAffinity(sysRoot string, gpus []gpu.Info) (cpus [][]int, numa []int) {
	cpus, numa = make([][]int, len(gpus)), make([]int, len(gpus))
	known := false
	for i, g := range gpus {
		numa[i] = -1
		dev := sysfsPCIAddress(g.PCIBusID)
		if dev == "" {
			continue
		}
		base := filepath.Join(sysRoot, "bus", "pci", "devices", dev)
		if b, err := os.ReadFile(filepath.Join(base, "numa_node")); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				numa[i] = v
			}
		}
		if b, err := os.ReadFile(filepath.Join(base, "local_cpulist")); err == nil {
			if list, ok := parseCPUList(string(b)); ok {
				cpus[i], known = list, true
			}
		}
	}
	if !known {
		cpus = nil
	}
	return cpus, numa
}

// sysfsPCIAddress turns NVML's bus ID ("00000000:18:00.0", a 32-bit
// domain) into the kernel's device name ("0000:18:00.0"); "" if it is not
// one.
func sysfsPCIAddress(busID string) string {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(busID)), ":")
	if len(parts) != 3 || len(parts[0]) < 4 || len(parts[1]) != 2 || len(parts[2]) != 4 {
		return ""
	}
	addr := parts[0][len(parts[0])-4:] + ":" + parts[1] + ":" + parts[2]
	for _, c := range addr {
		if !strings.ContainsRune("0123456789abcdef:.", c) {
			return ""
		}
	}
	return addr
}

// parseCPUList reads the kernel's CPU list format: "0-23,48-71".
func parseCPUList(s string) ([]int, bool) {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return nil, false
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, len(out) > 0
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

// numaGroup is GPUs that share a NUMA node (their indexes in the task),
// with that node's CPUs.
type numaGroup struct {
	node int
	idx  []int
	cpus []int
}

// numaGroups splits the GPUs by NUMA node, in the order nodes first
// appear; one group of all, unbound, when any GPU's node is unknown.
func numaGroups(cpus [][]int, numa []int, n int) []numaGroup {
	var groups []numaGroup
	for i := range n {
		if cpus == nil || len(cpus[i]) == 0 || numa[i] < 0 {
			all := numaGroup{node: -1}
			for k := range n {
				all.idx = append(all.idx, k)
			}
			return []numaGroup{all}
		}
		k := slices.IndexFunc(groups, func(g numaGroup) bool { return g.node == numa[i] })
		if k < 0 {
			groups = append(groups, numaGroup{node: numa[i], cpus: cpus[i]})
			k = len(groups) - 1
		}
		groups[k].idx = append(groups[k].idx, i)
	}
	return groups
}

// nvbandwidthLoads runs nvbandwidth once per NUMA node, on that node's
// GPUs and bound to its CPUs, so that the host side of each copy is the
// GPU's own socket's memory, and puts the figures back in task order.
func nvbandwidthLoads(ctx context.Context, limit time.Duration, dir string, gpus []gpu.Info, cpus [][]int, numa []int, lookPath func(string) (string, error)) []Load {
	path, err := lookPath("nvbandwidth")
	if err != nil {
		return absentLoads(toolNVBandwidth, nvbandwidthMetrics, "nvbandwidth not found on PATH")
	}
	n := len(gpus)
	groups := numaGroups(cpus, numa, n)
	per := map[string][]float64{}
	failed := map[string]Load{}
	var version string
	var where []string
	for _, g := range groups {
		uuids := make([]string, len(g.idx))
		for k, i := range g.idx {
			uuids[k] = gpus[i].UUID
		}
		env := append(os.Environ(), "CUDA_VISIBLE_DEVICES="+strings.Join(uuids, ","))
		loads, pinned := nvbandwidthRun(ctx, limit, dir, env, g.cpus, path, len(g.idx))
		switch {
		case pinned:
			where = append(where, fmt.Sprintf("GPUs %s pinned to NUMA node %d", indexList(g.idx), g.node))
		case g.node >= 0:
			where = append(where, fmt.Sprintf("GPUs %s not pinned (binding to NUMA node %d's CPUs failed)", indexList(g.idx), g.node))
		default:
			where = append(where, "not NUMA-pinned (the GPUs' NUMA nodes are unknown)")
		}
		for _, l := range loads {
			version = cmp.Or(version, l.Version)
			if l.Status != StatusOK {
				if _, seen := failed[l.Metric]; !seen {
					failed[l.Metric] = l
				}
				continue
			}
			if per[l.Metric] == nil {
				per[l.Metric] = make([]float64, n)
			}
			for k, i := range g.idx {
				per[l.Metric][i] = l.PerGPU[k]
			}
		}
	}
	loads := make([]Load, 0, len(nvbandwidthCases))
	for _, c := range nvbandwidthCases {
		if l, ok := failed[c.metric]; ok {
			loads = append(loads, l)
			continue
		}
		detail := c.detail
		if c.metric != MetricD2D {
			detail += "; " + strings.Join(where, "; ")
		}
		loads = append(loads, okLoad(c.metric, toolNVBandwidth, version, Median(per[c.metric]), per[c.metric], detail))
	}
	return loads
}

// indexList writes GPU indexes: "0–3" when consecutive, else "0, 2, 5".
func indexList(idx []int) string {
	if len(idx) > 1 && idx[len(idx)-1]-idx[0] == len(idx)-1 {
		return fmt.Sprintf("%d–%d", idx[0], idx[len(idx)-1])
	}
	s := make([]string, len(idx))
	for k, i := range idx {
		s[k] = strconv.Itoa(i)
	}
	return strings.Join(s, ", ")
}

// nvbandwidthRun runs nvbandwidth once on the n GPUs env makes visible,
// bound to cpus when there are any, and reads its figures.
func nvbandwidthRun(ctx context.Context, limit time.Duration, dir string, env []string, cpus []int, path string, n int) (loads []Load, pinned bool) {
	args := []string{"--json", "--testcase"}
	for _, c := range nvbandwidthCases {
		args = append(args, c.testcase)
	}
	stdout, stderr, pinned, runErr := runToolOn(ctx, limit, dir, env, cpus, path, args...)
	var out nvbandwidthOutput
	start := bytes.IndexByte(stdout, '{')
	if start < 0 || json.NewDecoder(bytes.NewReader(stdout[start:])).Decode(&out) != nil {
		if runErr == nil {
			runErr = errors.New("output is not its JSON")
		}
		return failedLoads(toolNVBandwidth, "", nvbandwidthMetrics, toolFailure("nvbandwidth", runErr, stdout, stderr)), pinned
	}
	nv := out.NVBandwidth
	loads = make([]Load, 0, len(nvbandwidthCases))
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
			loads = append(loads, Load{Metric: c.metric, Tool: toolNVBandwidth, Version: nv.Version, Status: StatusAbsent,
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
		loads = append(loads, okLoad(c.metric, toolNVBandwidth, nv.Version, Median(perGPU), perGPU, c.detail))
	}
	return loads, pinned
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
	outOfBoundsRe      = regexp.MustCompile(`(?m)^# Out of bounds values\s*:\s*(\d+)\s+(\S+)`)
)

// all_reduce_perf sweeps message sizes from allReduceMinBytes to
// allReduceMaxBytes, doubling: bus bandwidth climbs with the size and
// flattens (on NVLink nodes from a few hundred MiB); the plateau, the
// highest bus bandwidth at plateauMinBytes or more, is the figure.
const (
	allReduceMinBytes = "1M"
	allReduceMaxBytes = "1G"
	plateauMinBytes   = 256 << 20
	allReduceWarmup   = "5"  // untimed operations per size
	allReduceIters    = "20" // timed operations per size, back to back
)

func ncclTestsLoads(ctx context.Context, limit time.Duration, dir string, env []string, n int, lookPath func(string) (string, error)) []Load {
	metrics := []string{MetricAllReduceBus}
	path, err := lookPath("all_reduce_perf")
	if err != nil {
		return absentLoads(toolNCCLTests, metrics, "all_reduce_perf (nccl-tests) not found on PATH")
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "NCCL_DEBUG=") }) {
		env = append(slices.Clip(env), "NCCL_DEBUG=VERSION") // NCCL prints its version
	}
	args := []string{"-b", allReduceMinBytes, "-e", allReduceMaxBytes, "-f", "2", "-g", strconv.Itoa(n), "-w", allReduceWarmup, "-n", allReduceIters}
	stdout, stderr, runErr := runTool(ctx, limit, dir, env, path, args...)
	version, nccl := parseNCCLTestsVersion(stdout)
	if runErr != nil {
		return failedLoads(toolNCCLTests, version, metrics, toolFailure("all_reduce_perf", runErr, stdout, stderr))
	}
	if m := outOfBoundsRe.FindSubmatch(stdout); m != nil && string(m[1]) != "0" {
		return failedLoads(toolNCCLTests, version, metrics, fmt.Sprintf("all_reduce_perf found %s wrong values (%s)", m[1], m[2]))
	}
	sweep := parseAllReduceSweep(stdout)
	if len(sweep) == 0 {
		return failedLoads(toolNCCLTests, version, metrics, "all_reduce_perf printed no results; output: "+shortTail(stdout))
	}
	top := plateau(sweep)
	detail := fmt.Sprintf("all_reduce_perf %s: plateau bus bandwidth %.1f GB/s at %s (out-of-place and in-place averaged; "+
		"each size %s warm-up, then %s back to back, time averaged over ranks; busbw = algbw × 2(n−1)/n)",
		strings.Join(args, " "), top.BusBW, sizeText(top.Bytes), allReduceWarmup, allReduceIters)
	if last := sweep[len(sweep)-1]; last.Bytes < plateauMinBytes {
		detail += fmt.Sprintf("; the sweep stopped at %s, before the plateau", sizeText(last.Bytes))
	}
	if nccl != "" {
		detail += "; NCCL " + nccl
	}
	if version == "" {
		detail += "; this nccl-tests does not print its version"
	}
	l := okLoad(MetricAllReduceBus, toolNCCLTests, version, top.BusBW, nil, detail)
	if l.Status == StatusOK {
		l.Sweep = sweep
	}
	return []Load{l}
}

// parseAllReduceSweep reads all_reduce_perf's result rows: size, count,
// type, redop, [root,] then time, algbw, busbw and #wrong out-of-place,
// then the same in-place. Each size's figures are the average of its
// out-of-place and in-place runs (as nccl-tests' own average is); a
// row it cannot read is skipped.
func parseAllReduceSweep(out []byte) []SweepPoint {
	var sweep []SweepPoint
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 12 || strings.HasPrefix(f[0], "#") {
			continue
		}
		size, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || size <= 0 {
			continue
		}
		r := f[len(f)-8:] // time algbw busbw #wrong, out-of-place then in-place
		var v [6]float64
		ok := true
		for i, s := range []string{r[0], r[1], r[2], r[4], r[5], r[6]} {
			x, err := strconv.ParseFloat(s, 64)
			ok = ok && err == nil && x > 0 && !math.IsInf(x, 0)
			v[i] = x
		}
		if !ok {
			continue
		}
		sweep = append(sweep, SweepPoint{Bytes: size, TimeUS: (v[0] + v[3]) / 2, AlgBW: (v[1] + v[4]) / 2, BusBW: (v[2] + v[5]) / 2})
	}
	return sweep
}

// plateau is the sweep's step with the highest bus bandwidth among those
// of plateauMinBytes or more (among all when it stopped short of that).
func plateau(sweep []SweepPoint) SweepPoint {
	big := slices.DeleteFunc(slices.Clone(sweep), func(p SweepPoint) bool { return p.Bytes < plateauMinBytes })
	if len(big) == 0 {
		big = sweep
	}
	return slices.MaxFunc(big, func(a, b SweepPoint) int { return cmp.Compare(a.BusBW, b.BusBW) })
}

// sizeText writes a message size as nccl-tests' options do: "256M", "1G".
func sizeText(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
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

// Median is the median of vs (0 for none).
func Median(vs []float64) float64 {
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
