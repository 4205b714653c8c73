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
	MeasuredAt   time.Time
	CreatedAt    time.Time
}

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
