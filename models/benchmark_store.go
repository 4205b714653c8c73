package models

import (
	"encoding/json"
	"fmt"

	"suanli/agent"
)

// ReportSummaryColumns are every column but the report itself (the agent's
// whole run, telemetry included, can be megabytes): lists and the offer
// list need the headline figures only.
var ReportSummaryColumns = []string{"id", "node_id", "gpu_model", "gpus", "trigger", "simulated", "task_id", "nominal",
	"bf16_tflops", "fp16_tflops", "mem_bw_gbps", "pct_of_nominal", "peak_temp_c", "refused_reason", "measured_at", "created_at"}

// NominalFigures decodes the snapshot of the catalogue's nominal figures
// taken when the report was stored. Pages and the API read these, never
// the catalogue as it is now, so a report does not change with it.
func (r BenchmarkReport) NominalFigures() (agent.Nominal, error) {
	var n agent.Nominal
	if err := json.Unmarshal([]byte(r.Nominal), &n); err != nil {
		return n, fmt.Errorf("benchmark report %d: nominal: %w", r.ID, err)
	}
	return n, nil
}

// Run decodes the agent's report of the run (loads, host snapshot and
// telemetry). It is empty for a report read by a list method, which
// leaves that column out.
func (r BenchmarkReport) Run() (agent.BenchmarkReport, error) {
	var b agent.BenchmarkReport
	if r.Report == "" {
		return b, nil
	}
	if err := json.Unmarshal([]byte(r.Report), &b); err != nil {
		return b, fmt.Errorf("benchmark report %d: report: %w", r.ID, err)
	}
	return b, nil
}
