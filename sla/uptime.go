package sla

import (
	"context"
	"math"
	"slices"
	"time"

	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/offers"
)

// Reliability: each node's uptime over the last UptimeWindow, measured
// from its heartbeats and incidents, kept on the node
// (nodes.uptime_30d_pct) for the offer list and pages.
//
// The window is the last 30 days, or the node's life since it was
// registered when that is shorter. In it, a node is down
//
//   - entirely while it is silent: a node_silent incident runs from when
//     the health watch declared it silent (no heartbeat for SilentAfter,
//     30 s by default; agents send one every 5 s) to its next heartbeat;
//   - in part while a GPU fails its NVML checks: a gpu_failing incident
//     counts as 1/GPUs of the node down, per failing GPU (a GPU failing
//     while its node is silent is not counted twice).
//
// uptime = 100 × (1 − down GPU-seconds / (GPUs × window seconds)); a node
// without GPUs counts its silence only. A node whose latest benchmark
// report its independent witnesses dispute loses DisputePenaltyPct more
// while the dispute lasts (disputes.go). A datacentre's uptime is the
// GPU-weighted average of its nodes'.

// UptimeWindow is the reliability window.
const UptimeWindow = 30 * 24 * time.Hour

// NodeUptimePct computes a node's uptime in percent over [from, to) from
// its incidents (those of other nodes are ignored); gpus is the node's GPU
// count. It returns 100 for an empty window.
func NodeUptimePct(nodeID int64, gpus int, incidents []models.Incident, from, to time.Time) float64 {
	window := to.Sub(from).Seconds()
	if window <= 0 {
		return 100
	}
	var silent []interval
	failing := map[int64][]interval{}
	for _, inc := range incidents {
		if inc.NodeID != nodeID {
			continue
		}
		end := to
		if inc.ClosedAt != nil {
			end = *inc.ClosedAt
		}
		iv, ok := clipInterval(interval{inc.OpenedAt, end}, from, to)
		if !ok {
			continue
		}
		switch {
		case inc.Kind == models.IncidentNodeSilent:
			silent = append(silent, iv)
		case inc.Kind == models.IncidentGPUFailing && inc.GPUID != 0:
			failing[inc.GPUID] = append(failing[inc.GPUID], iv)
		}
	}
	silent = unionIntervals(silent)
	silentSecs := totalSecs(silent)
	if gpus <= 0 {
		return 100 * (1 - silentSecs/window)
	}
	down := silentSecs * float64(gpus)
	for _, ivs := range failing {
		down += totalSecs(subtractIntervals(unionIntervals(ivs), silent))
	}
	return 100 * (1 - math.Min(down, float64(gpus)*window)/(float64(gpus)*window))
}

// unionIntervals merges overlapping intervals, sorted by start.
func unionIntervals(ivs []interval) []interval {
	slices.SortFunc(ivs, func(a, b interval) int { return a.from.Compare(b.from) })
	var out []interval
	for _, iv := range ivs {
		if n := len(out); n > 0 && !iv.from.After(out[n-1].to) {
			if iv.to.After(out[n-1].to) {
				out[n-1].to = iv.to
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

// subtractIntervals returns the parts of a (sorted, disjoint) not in b
// (sorted, disjoint).
func subtractIntervals(a, b []interval) []interval {
	var out []interval
	for _, iv := range a {
		cur := []interval{iv}
		for _, cut := range b {
			var next []interval
			for _, c := range cur {
				if !cut.from.Before(c.to) || !cut.to.After(c.from) {
					next = append(next, c)
					continue
				}
				if cut.from.After(c.from) {
					next = append(next, interval{c.from, cut.from})
				}
				if cut.to.Before(c.to) {
					next = append(next, interval{cut.to, c.to})
				}
			}
			cur = next
		}
		out = append(out, cur...)
	}
	return out
}

func totalSecs(ivs []interval) float64 {
	var s float64
	for _, iv := range ivs {
		s += iv.to.Sub(iv.from).Seconds()
	}
	return s
}

// RefreshUptime recomputes every node's 30-day uptime (nodes that never
// sent a heartbeat have none) and stores it with the time; it returns how
// many nodes it updated. The offer index patches the offers of the nodes
// whose figure changed at the precision pages show, not every pass.
func RefreshUptime(ctx context.Context, db *models.DB) (int, error) {
	now := db.Now().UTC()
	ns, err := rentalstore.NodesForUptime(ctx, db)
	if err != nil || len(ns) == 0 {
		return 0, err
	}
	incs, err := rentalstore.IncidentsOverlapping(ctx, db, now.Add(-UptimeWindow), now)
	if err != nil {
		return 0, err
	}
	disputed, err := DisputedNodes(ctx, db)
	if err != nil {
		return 0, err
	}
	ups := make([]rentalstore.NodeUptime, 0, len(ns))
	var changed []int64
	for _, n := range ns {
		from := now.Add(-UptimeWindow)
		if n.CreatedAt.After(from) {
			from = n.CreatedAt
		}
		pct := NodeUptimePct(n.ID, n.GPUs, incs, from, now)
		if disputed[n.ID] {
			pct = math.Max(0, pct-DisputePenaltyPct)
		}
		// The offer index patches the offers of nodes whose figure
		// changed at the precision pages show (0.01 %, rounded down as
		// they show it), and orders by that figure (offers.UptimeKey).
		if n.Uptime30dPct == nil || shownUptime(*n.Uptime30dPct) != shownUptime(pct) {
			changed = append(changed, n.ID)
		}
		ups = append(ups, rentalstore.NodeUptime{NodeID: n.ID, Pct: pct})
	}
	return len(ups), rentalstore.SetNodeUptimes(ctx, db, ups, now, changed)
}

// Uptime is a datacentre's 30-day uptime: the GPU-weighted average of its
// nodes' (Nodes of them, GPUs in all), as of UpdatedAt (the oldest node
// figure). Nodes is 0 when no node has a figure yet.
type Uptime struct {
	Pct       float64
	Nodes     int
	GPUs      int
	UpdatedAt time.Time
}

// DatacenterUptime returns a datacentre's 30-day uptime from its nodes'
// stored figures (see RefreshUptime).
func DatacenterUptime(ctx context.Context, db *models.DB, datacenterID int64) (Uptime, error) {
	ns, err := rentalstore.DatacenterNodeUptimes(ctx, db, datacenterID)
	if err != nil {
		return Uptime{}, err
	}
	var u Uptime
	var sum, weight float64
	for _, n := range ns {
		w := float64(max(n.GPUs, 1))
		sum += n.Uptime30dPct * w
		weight += w
		u.Nodes++
		u.GPUs += n.GPUs
		if u.UpdatedAt.IsZero() || n.UptimeUpdatedAt.Before(u.UpdatedAt) {
			u.UpdatedAt = n.UptimeUpdatedAt
		}
	}
	if weight > 0 {
		u.Pct = sum / weight
	}
	return u, nil
}

// shownUptime is an uptime as pages show it: 0.01 %, rounded down.
func shownUptime(pct float64) float64 { return offers.UptimeShown(pct) }
