package agent

import (
	"time"

	"suanli/agent/loadgen"
	"suanli/gpu"
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
	// RealisticFraction is the share of the dense BF16 (FP16) figure the
	// model really reaches in a GEMM (the catalogue's, from the MAMF
	// tables: about 0.80 on Hopper); 0 when the server did not send it. A
	// simulated agent stays below it.
	RealisticFraction float64 `json:"realistic_fraction,omitempty"`
}

// Load metrics a benchmark reports, and Load.Status values: package
// loadgen's, which measures them.
const (
	MetricBF16GEMM     = loadgen.MetricBF16GEMM
	MetricFP16GEMM     = loadgen.MetricFP16GEMM
	MetricD2D          = loadgen.MetricD2D
	MetricH2D          = loadgen.MetricH2D
	MetricD2H          = loadgen.MetricD2H
	MetricAllReduceBus = loadgen.MetricAllReduceBus
	LoadOK             = loadgen.StatusOK
	LoadAbsent         = loadgen.StatusAbsent
	LoadFailed         = loadgen.StatusFailed
	LoadSimulated      = loadgen.StatusSimulated
)

// Telemetry defaults.
const (
	DefaultSampleEvery  = 100 * time.Millisecond
	MaxTelemetrySamples = 20000
)

// Load is one load generator's result for one metric (see loadgen.Load:
// Value is a GEMM's sustained median, Best its sweep's best).
type Load = loadgen.Load

// SweepPoint is one step of a GEMM shape or all-reduce size sweep.
type SweepPoint = loadgen.SweepPoint

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
	Host      gpu.Host `json:"host"`
	GPUUUIDs  []string `json:"gpu_uuids"`
	Loads     []Load   `json:"loads"`
	Telemetry []Sample `json:"telemetry"`
	// SampleEveryMS is the telemetry interval asked for, in milliseconds
	// (it doubles when a long run is thinned to MaxTelemetrySamples).
	SampleEveryMS int64     `json:"sample_every_ms,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
}
