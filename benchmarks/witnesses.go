package benchmarks

import (
	"context"
	"slices"

	"suanli/models"
	"suanli/witness"
)

// JudgeOffers is the offer index's judge (offers.Index.Judge): the
// benchmark status of each listed offer's report, by offer id, judged
// with its node's witnesses, for the offers whose node has any (the
// others keep their report's own status). One query per call, for the
// rows' nodes only: the index calls it per patch and per chunk of a load.
func JudgeOffers(db *models.DB) func(context.Context, []models.OfferRow) (map[int64]string, error) {
	return func(ctx context.Context, rows []models.OfferRow) (map[int64]string, error) {
		var nodes []int64
		for _, r := range rows {
			if r.Report != nil {
				nodes = append(nodes, r.NodeID)
			}
		}
		slices.Sort(nodes)
		sums, err := (&witness.Service{DB: db}).NodeSummaries(ctx, slices.Compact(nodes))
		if err != nil || len(sums) == 0 {
			return nil, err
		}
		out := map[int64]string{}
		for _, r := range rows {
			if sm, ok := sums[r.NodeID]; ok && r.Report != nil {
				out[r.ID] = string(HeadlineStatus(r.GPUModel, r.Report, IndependentOf(sm)))
			}
		}
		return out, nil
	}
}

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
