package benchmarks

import "suanli/witness"

// IndependentOf is what a report's status reads of an offer's witnesses
// (witness.Summary): the real runs that measured a figure. Simulated
// runs measured nothing and runs without a GEMM have no figure, so
// neither can verify or dispute a report.
func IndependentOf(sm witness.Summary) Independent {
	var ind Independent
	if f := sm.Renter; f != nil && !f.Simulated && f.MedianBF16TFLOPS != nil {
		ind.RenterRuns, ind.RenterMedianTFLOPS = f.Runs, *f.MedianBF16TFLOPS
	}
	if f := sm.Audit; f != nil && !f.Simulated && f.MedianBF16TFLOPS != nil {
		ind.AuditRuns, ind.AuditMedianTFLOPS = f.Runs, *f.MedianBF16TFLOPS
	}
	return ind
}
