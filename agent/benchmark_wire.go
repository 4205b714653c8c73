package agent

import (
	"time"

	"suanli/gpu"
	"suanli/locales"
)

// TaskBenchmark asks the agent to run the benchmark suite on the task's
// GPUs (idle and verified); its Result.Detail is a BenchmarkReport.
const TaskBenchmark = "benchmark"

// Nominal is the catalogue's figures for the GPU model, sent with a
// benchmark task: a simulated agent derives its figures from them, and
// the agent never needs the catalogue itself.
type Nominal struct {
	Model      string  `json:"model"` // catalogue slug
	Name       string  `json:"name"`
	BF16TFLOPS float64 `json:"bf16_tflops"` // dense, per GPU
	FP16TFLOPS float64 `json:"fp16_tflops"` // dense, per GPU
	MemBWGBps  float64 `json:"mem_bw_gbps"` // per GPU
	NVLinkGBps float64 `json:"nvlink_gbps"` // per GPU, 0 for PCIe parts
	TDPW       int     `json:"tdp_w"`
}

// Load metrics a benchmark reports.
const (
	MetricBF16GEMM      = "bf16_gemm_tflops"     // dense BF16 GEMM, 8192³, per GPU
	MetricFP16GEMM      = "fp16_gemm_tflops"     // dense FP16 GEMM, 8192³, per GPU
	MetricD2D           = "d2d_bw_gbps"          // device memory bandwidth (copy), per GPU
	MetricH2D           = "h2d_bw_gbps"          // host → device, pinned, per GPU
	MetricD2H           = "d2h_bw_gbps"          // device → host, pinned, per GPU
	MetricAllReduceBus  = "allreduce_busbw_gbps" // NCCL all-reduce bus bandwidth, whole node
	LoadOK, LoadAbsent  = "ok", "absent"         // Load.Status values
	LoadFailed          = "failed"
	LoadSimulated       = "simulated"
	DefaultSampleEvery  = 100 * time.Millisecond
	MaxTelemetrySamples = 20000
)

// Load is one load generator's result for one metric. A generator that is
// not installed on the host is reported absent, never invented.
type Load struct {
	Metric  string    `json:"metric"`
	Tool    string    `json:"tool"`    // "pytorch", "nvbandwidth", "nccl-tests", "simulated"
	Version string    `json:"version"` // the tool's own version string
	Status  string    `json:"status"`  // ok, absent, failed, simulated
	Value   float64   `json:"value"`   // per GPU (the node's for all-reduce); median of the timed runs
	PerGPU  []float64 `json:"per_gpu,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	// Msg is Detail as a message ("bench.load." keys), so that the
	// report reads in the reader's language where the agent wrote it
	// (a simulated load); a real tool's words are in Detail only.
	Msg locales.Msg `json:"msg,omitzero"`
}

// say sets a load's detail: its message, and its English text.
func (l *Load) say(m locales.Msg) {
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

// Sample is one telemetry reading of one GPU during the run.
type Sample struct {
	AtMS  int64         `json:"at_ms"` // since the run started
	Index int           `json:"index"`
	T     gpu.Telemetry `json:"t"`
	XIDs  []int         `json:"xids,omitempty"` // XIDs seen since the last sample
}

// BenchmarkReport is what a benchmark task produces.
type BenchmarkReport struct {
	// Simulated reports derive every load figure from the nominal ones
	// times SimFactor; they say so wherever they are shown.
	Simulated bool    `json:"simulated"`
	SimFactor float64 `json:"sim_factor,omitempty"`
	// Host is the NVML identity and health snapshot before the run.
	Host       gpu.Host  `json:"host"`
	GPUUUIDs   []string  `json:"gpu_uuids"`
	Loads      []Load    `json:"loads"`
	Telemetry  []Sample  `json:"telemetry"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
}
