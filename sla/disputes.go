package sla

import (
	"context"
	"maps"
	"slices"

	"suanli/benchmarks"
	"suanli/models"
	"suanli/models/listing"
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
	// Only nodes with witnesses can be disputed: read just their offers,
	// not the whole catalogue.
	sums, err := (&witness.Service{DB: db}).AllNodeSummaries(ctx)
	if err != nil || len(sums) == 0 {
		return nil, err
	}
	rows, err := listing.OnNodes(ctx, db, slices.Collect(maps.Keys(sums)))
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	// Judged as the offer index judges them: a report is its node's, with
	// all of the node's witnesses.
	statuses, err := benchmarks.JudgeOffers(db)(ctx, rows)
	if err != nil {
		return nil, err
	}
	out := map[int64]bool{}
	for _, r := range rows {
		if statuses[r.ID] == string(benchmarks.StatusDisputed) {
			out[r.NodeID] = true
		}
	}
	return out, nil
}
