package models

import "time"

// Benchmark report triggers.
const (
	BenchVerified = "verified"
	BenchWeekly   = "weekly"
	BenchOnDemand = "on_demand"
)

// BenchmarkReport is one stored benchmark run of a node. Nominal is the
// JSON agent.Nominal snapshot taken when it was stored; Report the JSON
// agent.BenchmarkReport. The headline figures are per GPU, nil when the
// load was absent.
type BenchmarkReport struct {
	ID           int64
	NodeID       int64
	GPUModel     string `gorm:"column:gpu_model"`
	GPUs         int    `gorm:"column:gpus"`
	Trigger      string
	Simulated    bool
	TaskID       *int64
	Nominal      string
	Report       string
	BF16TFLOPS   *float64 `gorm:"column:bf16_tflops"`
	FP16TFLOPS   *float64 `gorm:"column:fp16_tflops"`
	MemBWGBps    *float64 `gorm:"column:mem_bw_gbps"`
	PctOfNominal *float64 `gorm:"column:pct_of_nominal"`
	PeakTempC    *int     `gorm:"column:peak_temp_c"`
	// RefusedReason says why the server refused the report (outside the
	// bounds, see benchmarks.CheckBounds); "" for an accepted one. A
	// refused report keeps the agent's run for review but no headline
	// figure: nothing of it is shown or ranked as measured.
	RefusedReason string
	MeasuredAt    time.Time
	CreatedAt     time.Time
}

// Refused reports whether the server refused the report.
func (r BenchmarkReport) Refused() bool { return r.RefusedReason != "" }

// IncidentBenchmarkRefused is the node incident (gpu_id 0) that flags a
// node for review after the server refused one of its benchmark reports:
// the admin console lists it with the reason. It does not count as
// downtime (the SLA and uptime count node_silent and gpu_failing only).
const IncidentBenchmarkRefused = "benchmark_refused"

// SLACredit is one SLA credit computation for a rental and period.
type SLACredit struct {
	ID           int64
	RentalID     int64
	Period       string // "2026-11" (Asia/Shanghai)
	Tier         string
	PeriodSecs   int64
	DowntimeSecs int64
	UptimePct    float64
	CreditPct    int
	BilledFen    int64
	CreditFen    int64
	TxnID        *int64
	CreatedAt    time.Time
}

// TableName implements gorm's tabler.
func (SLACredit) TableName() string { return "sla_credits" }
