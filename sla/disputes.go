package sla

import (
	"context"

	"suanli/benchmarks"
	"suanli/models"
	"suanli/witness"
)

// DisputePenaltyPct is how many percentage points a node's reliability
// (its 30-day uptime figure) loses while the latest benchmark report of
// one of its listed offers is disputed: the provider's agent reported
// figures that independent witnesses (renters' and the platform's
// verifier runs) measured more than benchmarks.DisputeTolerance away
// from (DESIGN.md §8). It lasts as long as the dispute does: until the
// agent's figures agree with the witnesses again, or the witnesses' runs
// leave their 30-day window.
const DisputePenaltyPct = 5.0

// DisputedNodes are the nodes with a listed offer whose latest report is
// disputed by its witnesses.
func DisputedNodes(ctx context.Context, db *models.DB) (map[int64]bool, error) {
	rows, _, err := db.ListedOffers(ctx)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	// A report is its node's, judged with all of the node's witnesses,
	// as the pages judge it.
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.NodeID
	}
	sums, err := (&witness.Service{DB: db}).NodeSummaries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := map[int64]bool{}
	for _, r := range rows {
		if r.Report != nil && benchmarks.HeadlineStatus(r.GPUModel, r.Report, benchmarks.IndependentOf(sums[r.NodeID])) == benchmarks.StatusDisputed {
			out[r.NodeID] = true
		}
	}
	return out, nil
}
