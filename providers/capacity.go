package providers

import (
	"context"
	"time"

	"suanli/models"
	"suanli/models/supply"
	"suanli/pricing"
)

// CapacityDays is how many days ahead the capacity view shows commitments.
const CapacityDays = 30

// NodeCapacity is one node's GPUs now, committed ahead and used lately.
// Rented counts GPUs held by on-demand rentals; Reserved those held by
// week or month rentals (and GPUs busy without a rental: held by the
// provider); Free and Unhealthy are the GPUs' states.
type NodeCapacity struct {
	Node                                     models.Node
	Total, Free, Rented, Reserved, Unhealthy int
	// Committed is the GPUs held by week or month rentals on each of the
	// next 30 days (day 0 is From), counting auto-renewing terms throughout.
	Committed [CapacityDays]int
	// Utilisation30dPct is rented GPU-seconds over available GPU-seconds
	// in the last 30 days (or since the node was added), from rental_gpus.
	Utilisation30dPct float64
}

// Capacity is the provider's capacity view; From is the start of today,
// Asia/Shanghai.
type Capacity struct {
	From  time.Time
	Nodes []NodeCapacity
}

// Capacity returns, per node that is not removed, the GPUs free, rented
// and reserved now, committed over the next 30 days, and the utilisation
// over the last 30 days.
func (p *Service) Capacity(ctx context.Context, u *models.User, providerID int64) (*Capacity, error) {
	acc, err := p.access(ctx, u, providerID, false)
	if err != nil {
		return nil, err
	}
	now := p.DB.Now().UTC()
	l := now.In(pricing.Shanghai)
	out := &Capacity{From: time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, pricing.Shanghai)}
	nodes, err := supply.WorkingNodesOfProvider(ctx, p.DB, acc.Provider.ID)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		c := NodeCapacity{Node: n}
		gpus, err := supply.NodeGPUs(ctx, p.DB, n.ID)
		if err != nil {
			return nil, err
		}
		c.Total = len(gpus)
		// Which live rental holds each GPU, and on which term.
		term, err := supply.HeldGPUTerms(ctx, p.DB, n.ID)
		if err != nil {
			return nil, err
		}
		for _, g := range gpus {
			switch t, ok := term[g.ID]; {
			case ok && t == pricing.OnDemand:
				c.Rented++
			case ok || g.State == models.GPUBusy:
				c.Reserved++
			case g.State == models.GPUUnhealthy:
				c.Unhealthy++
			case g.State == models.GPUFree:
				c.Free++
			}
		}
		terms, err := supply.LiveRentalsOfTerms(ctx, p.DB, n.ID, []pricing.Term{pricing.Week, pricing.Month})
		if err != nil {
			return nil, err
		}
		for d := range CapacityDays {
			day := out.From.AddDate(0, 0, d)
			for _, r := range terms {
				if r.AutoRenew || r.EndsAt == nil || r.EndsAt.After(day) {
					c.Committed[d] += r.GPUs
				}
			}
		}
		if c.Utilisation30dPct, err = p.utilisation(ctx, n, len(gpus), now); err != nil {
			return nil, err
		}
		out.Nodes = append(out.Nodes, c)
	}
	return out, nil
}

// utilisation is the share of the node's GPU-seconds held by rentals over
// the last 30 days, or since the node was added if later.
func (p *Service) utilisation(ctx context.Context, n models.Node, gpus int, now time.Time) (float64, error) {
	from := now.AddDate(0, 0, -30)
	if n.CreatedAt.After(from) {
		from = n.CreatedAt
	}
	if gpus == 0 || !now.After(from) {
		return 0, nil
	}
	rows, err := supply.GPUHoldsBetween(ctx, p.DB, n.ID, from, now)
	if err != nil {
		return 0, err
	}
	var used float64
	for _, r := range rows {
		start, end := r.AttachedAt, now
		if r.ReleasedAt != nil && r.ReleasedAt.Before(end) {
			end = *r.ReleasedAt
		}
		if start.Before(from) {
			start = from
		}
		if end.After(start) {
			used += end.Sub(start).Seconds()
		}
	}
	avail := float64(gpus) * now.Sub(from).Seconds()
	return min(100, 100*used/avail), nil
}
