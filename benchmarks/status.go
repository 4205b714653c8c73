package benchmarks

import (
	"math"

	"suanli/catalog"
	"suanli/models"
)

// Status is what a benchmark report's figures are worth, as the offer
// list, the offer and report pages and the API (benchmark.status) say it.
type Status string

// Benchmark statuses.
const (
	// StatusVerified: an independent witness (runs measured inside
	// renters' containers, or the platform's audit rentals) measured the
	// same within DisputeTolerance.
	StatusVerified Status = "verified"
	// StatusUnverified: within the bounds, but the provider's agent is the
	// only witness so far.
	StatusUnverified Status = "unverified"
	// StatusDisputed: an independent witness measured more than
	// DisputeTolerance away from the agent's figure.
	StatusDisputed Status = "disputed"
	// StatusRefused: outside the bounds (CheckBounds); nothing of it is
	// shown or ranked as measured.
	StatusRefused Status = "refused"
	// StatusSimulated: from a node the platform runs simulated; its
	// figures are not measurements of real hardware.
	StatusSimulated Status = "simulated"
)

// DisputeTolerance is how far, as a share of the independent median, the
// agent's figure may be from it before the report is disputed: 15 %,
// wider than the spread between GPUs of one model (ml-engineering sees
// 5 % and more on one 8-GPU node) plus a short GEMM's run-to-run noise.
const DisputeTolerance = 0.15

// Independent is what witnesses other than the provider's agent measured
// on the node's GPUs: runs of the verifier inside renters' containers and
// in the platform's audit rentals, each with its run count and median
// BF16 TFLOPS per GPU (IndependentOf; models without BF16 are not judged
// by it, see noBF16). Empty, no report is verified.
type Independent struct {
	RenterRuns         int
	RenterMedianTFLOPS float64
	AuditRuns          int
	AuditMedianTFLOPS  float64
}

// Facts is what StatusOf needs of a report: whether it was refused or is
// simulated, and the agent's tensor TFLOPS per GPU (nil without).
type Facts struct {
	Refused   bool
	Simulated bool
	TFLOPS    *float64
}

// StatusOf is a report's status: refused and simulated whatever the
// witnesses say; disputed when a witness's median is more than
// DisputeTolerance from the agent's figure; verified when a witness
// agrees; unverified with no witness.
func StatusOf(f Facts, ind Independent) Status {
	switch {
	case f.Refused:
		return StatusRefused
	case f.Simulated:
		return StatusSimulated
	case f.TFLOPS == nil:
		return StatusUnverified
	}
	agreed := false
	for _, w := range []struct {
		runs   int
		median float64
	}{{ind.RenterRuns, ind.RenterMedianTFLOPS}, {ind.AuditRuns, ind.AuditMedianTFLOPS}} {
		if w.runs <= 0 || w.median <= 0 {
			continue
		}
		if math.Abs(*f.TFLOPS-w.median) > DisputeTolerance*w.median {
			return StatusDisputed
		}
		agreed = true
	}
	if agreed {
		return StatusVerified
	}
	return StatusUnverified
}

// noBF16: the witnesses' verifier measures a BF16 GEMM, which a model
// without BF16 tensor cores (V100) runs far below its FP16 figure, so
// their figures cannot confirm or dispute its report: it stays
// unverified rather than disputed on every run.

// HeadlineStatus is StatusOf a report headline of a node with GPUs of
// model slug (nil: no report, and no status).
func HeadlineStatus(slug string, r *models.ReportHeadline, ind Independent) Status {
	if r == nil {
		return ""
	}
	f := Facts{Refused: r.Refused, Simulated: r.Simulated, TFLOPS: r.BF16TFLOPS}
	if m, ok := catalog.GPUModelBySlug(slug); ok && m.BF16TFLOPS == 0 {
		f.TFLOPS = r.FP16TFLOPS
		ind = Independent{} // see noBF16
	}
	return StatusOf(f, ind)
}

// ReportStatus is StatusOf a stored report.
func ReportStatus(r *models.BenchmarkReport, ind Independent) Status {
	f := Facts{Refused: r.Refused(), Simulated: r.Simulated, TFLOPS: r.BF16TFLOPS}
	if m, ok := catalog.GPUModelBySlug(r.GPUModel); ok && m.BF16TFLOPS == 0 {
		f.TFLOPS = r.FP16TFLOPS
		ind = Independent{} // see noBF16
	}
	return StatusOf(f, ind)
}
