// Package witnessvm maps an offer's witnesses (witness.Summary: the
// renter-measured and platform-audited runs of the verifier) to the
// public API's form and the offer page's view model, and judges the
// offer's benchmark status with them.
package witnessvm

import (
	"time"

	"suanli/benchmarks"
	"suanli/models"
	"suanli/views/pages"
	"suanli/witness"
)

// Figures is an offer's renter_measured (or platform_audited) in the
// public API: the verifier's runs over the last 30 days. The public
// contract is runs, median_bf16_tflops (null when no run measured: an
// image without CUDA PyTorch, or a simulated node) and last_at;
// simulated is true when the runs were on a simulated node (measured
// nothing), which counts only for an offer without real runs.
type Figures struct {
	Runs             int       `json:"runs"`
	MedianBF16TFLOPS *float64  `json:"median_bf16_tflops"`
	LastAt           time.Time `json:"last_at"`
	Simulated        bool      `json:"simulated"`
}

// API is one witness's figures in the API (nil without runs).
func API(f *witness.Figures) *Figures {
	if f == nil {
		return nil
	}
	return &Figures{Runs: f.Runs, MedianBF16TFLOPS: f.MedianBF16TFLOPS, LastAt: f.LastAt.UTC(), Simulated: f.Simulated}
}

// Status is the offer's benchmark status judged with its node's
// witnesses (witness.Service.NodeSummary; "" without a report).
func Status(row *models.OfferRow, nodeSm witness.Summary) string {
	return string(benchmarks.HeadlineStatus(row.GPUModel, row.Report, benchmarks.IndependentOf(nodeSm)))
}

// Offer is what the offer page shows of the offer's witnesses sm, with
// the disagreement when the report is disputed (judged with the node's,
// nodeSm).
func Offer(row *models.OfferRow, sm, nodeSm witness.Summary) pages.OfferWitnesses {
	w := pages.OfferWitnesses{Renter: figuresVM(sm.Renter), Audit: figuresVM(sm.Audit),
		WindowDays: int(witness.Window / (24 * time.Hour)), Command: witness.Command, TolerancePct: benchmarks.DisputeTolerance * 100}
	if r := row.Report; r != nil && Status(row, nodeSm) == string(benchmarks.StatusDisputed) {
		w.Disputed, w.AgentTFLOPS = true, r.BF16TFLOPS
	}
	return w
}

func figuresVM(f *witness.Figures) *pages.WitnessFigures {
	if f == nil {
		return nil
	}
	return &pages.WitnessFigures{Runs: f.Runs, MedianBF16TFLOPS: f.MedianBF16TFLOPS, LastAt: f.LastAt, Simulated: f.Simulated, Unhealthy: f.Unhealthy}
}
