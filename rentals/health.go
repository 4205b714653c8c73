package rentals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/fleet"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/models/supply"
	"suanli/pricing"
)

// WatchResult counts what one health pass did.
type WatchResult struct {
	Silenced, Migrated, Finished, Renewed int
}

// StopGrace is how long a stopping rental waits for its agent to confirm
// before its GPUs are released anyway (a silent node).
const StopGrace = time.Minute

// Watch is the health pass: nodes silent for SilentAfter are marked
// silent with an incident (a removed node, whose agent is turned away,
// without one); running rentals on a silent node or on a GPU
// whose verdict failed start migrating; stops whose agent never answered
// are finished; term rentals at their end renew or stop.
func (s *Service) Watch(ctx context.Context) (WatchResult, error) {
	var res WatchResult
	now := s.DB.Now().UTC()
	// Silent nodes, once this process has listened for long enough.
	var silent []models.Node
	if now.Sub(s.Started) >= s.silentAfter() {
		var err error
		if silent, err = rentalstore.SilentNodes(ctx, s.DB, now.Add(-s.silentAfter())); err != nil {
			return res, err
		}
	}
	for _, n := range silent {
		err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			ok, err := rentalstore.MarkNodeSilent(tx, n.ID, n.Health)
			if err != nil || !ok {
				return err
			}
			if n.Status == models.NodeRemoved {
				// Its agent is turned away: retired, not an outage.
				return supply.RefreshNodeAvailability(tx, n.ID, now)
			}
			if _, err := fleet.OpenIncident(tx, n.ID, 0, models.IncidentNodeSilent,
				fmt.Sprintf("no heartbeat since %s", n.LastHeartbeatAt.UTC().Format(time.RFC3339)), now,
				locales.M("incident.no_heartbeat", shTime(*n.LastHeartbeatAt))); err != nil {
				return err
			}
			return supply.RefreshNodeAvailability(tx, n.ID, now)
		})
		if err != nil {
			return res, err
		}
		res.Silenced++
		slog.Warn("node silent", "node", n.ID, "last_heartbeat", n.LastHeartbeatAt)
	}
	// Running rentals on a silent node or a failing GPU.
	hits, err := rentalstore.RentalsOnFailures(ctx, s.DB)
	if err != nil {
		return res, err
	}
	done := map[int64]bool{}
	for _, h := range hits {
		if done[h.RentalID] {
			continue
		}
		done[h.RentalID] = true
		kind := models.IncidentGPUFailing
		if h.GPUID == 0 {
			kind = models.IncidentNodeSilent
		}
		msg := h.ReasonsMsg
		if msg.IsZero() {
			msg = locales.M("incident.reason." + kind)
			if kind == models.IncidentGPUFailing {
				msg = fleet.Verbatim(h.Reasons) // a GPU whose reasons were stored as text only
			}
		}
		moved, err := s.migrate(ctx, h.RentalID, h.NodeID, h.GPUID, kind, h.Reasons, msg, now)
		if err != nil {
			return res, err
		}
		if moved {
			res.Migrated++
		}
	}
	// Stops the agent never confirmed.
	stuck, err := rentalstore.UnconfirmedStops(ctx, s.DB, now.Add(-StopGrace))
	if err != nil {
		return res, err
	}
	for _, id := range stuck {
		if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			if err := models.AddRentalEvent(tx, id, now, "stop_unconfirmed", "the node's agent did not confirm the stop; GPUs released", nil); err != nil {
				return err
			}
			return s.finishStop(tx, id, 0, now)
		}); err != nil {
			return res, err
		}
		res.Finished++
	}
	// Terms at their end: release a stopped term's GPUs, renew or stop a running one.
	ended, err := rentalstore.EndedTerms(ctx, s.DB, now)
	if err != nil {
		return res, err
	}
	for i := range ended {
		renewed, err := s.endTerm(ctx, &ended[i], now)
		if err != nil {
			return res, err
		}
		if renewed {
			res.Renewed++
		}
	}
	return res, nil
}

// DetailNodeRetiring is the detail of a "not_renewed" event: the term
// ended on a node its provider is draining or has removed.
const DetailNodeRetiring = "the provider is retiring this node"

// endTerm renews a term rental whose term is over (a new purchase, which the rent gate may refuse) or ends it.
func (s *Service) endTerm(ctx context.Context, r *models.Rental, now time.Time) (bool, error) {
	if r.Status == models.RentalStopped {
		return false, s.DB.Tx(ctx, func(tx *gorm.DB) error { return s.releaseGPUs(tx, r.ID, now) })
	}
	renew := r.AutoRenew
	if renew && r.NodeID != nil {
		// A draining node accepts no new rentals, and a renewal is a new
		// term: renewing there would keep the node from ever draining.
		status, err := rentalstore.NodeStatus(ctx, s.DB, *r.NodeID)
		if err != nil {
			return false, err
		}
		if status != models.NodeActive {
			renew = false
			if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
				return models.AddRentalEvent(tx, r.ID, now, "not_renewed", DetailNodeRetiring, nil)
			}); err != nil {
				return false, err
			}
		}
	}
	if renew {
		u, err := models.UserByIDIn(s.DB.R.WithContext(ctx), r.UserID)
		if err = s.gate(ctx, err, u, r.OrgID); err == nil {
			err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
				// The terms paid so far (a free rental's refund keeps them counted).
				n, err := ledger.TermsPaid(tx, r.ID)
				if err != nil {
					return err
				}
				if err := s.chargeTerm(tx, r, now, int(n)+1); err != nil {
					return err
				}
				end := pricing.TermEnd(r.Term, *r.EndsAt)
				if err := ledger.SetRentalEndsAt(tx, r.ID, end); err != nil {
					return err
				}
				return models.AddRentalEvent(tx, r.ID, now, "renewed", end.Format(time.RFC3339), nil)
			})
		}
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, ledger.ErrInsufficientFunds) && apperr.Code(err) != apperr.EREALNAMEREQUIRED {
			return false, err
		}
	}
	_, err := s.Stop(ctx, r.ID, StopTermEnded)
	return false, err
}

// migrate moves a running rental off a failing node: billing stops at
// this second (downtime is never billed), the incident goes on the
// rental's page, its GPUs are released (the old node is told to stop the
// workload, should it come back) and provisioning looks for a healthy
// node, where the workload resumes from the same workspace. A rental
// whose GPUs fail within FreeIfFailsWithin of starting is free: every
// charge is refunded and nothing more is billed. reasons are in English,
// msg the same as a message.
//
// A rental in no-GPU mode is not moved: it holds no GPUs and has no SLA,
// and its files may be on that node's disk. It stops (billing ends at
// this second) and can start again when the node is back.
func (s *Service) migrate(ctx context.Context, rentalID, nodeID, gpuID int64, kind, reasons string, msg locales.Msg, now time.Time) (bool, error) {
	moved, noGPU := false, false
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		r, err := models.RentalForUpdate(tx, rentalID)
		if err != nil {
			return err
		}
		if r.Status != models.RentalRunning {
			return nil
		}
		if r.NoGPU {
			noGPU = true
			return nil
		}
		if err := s.meterOne(tx, &r, now, false); err != nil {
			return err
		}
		inc, err := fleet.OpenIncident(tx, nodeID, gpuID, kind, reasons, now, msg)
		if err != nil {
			return err
		}
		free := r.RunningSince != nil && now.Sub(*r.RunningSince) < FreeIfFailsWithin
		if free && !r.Free {
			if err := refundRental(tx, &r, now); err != nil {
				return err
			}
		}
		up := rentalstore.RentalMove{DownSince: &now}
		if free {
			up.Free = new(true)
		}
		ok, err := setStatus(tx, r.ID, models.RentalMigrating, now, []models.RentalStatus{models.RentalRunning}, up)
		if err != nil || !ok {
			return err
		}
		detail := fmt.Sprintf("%s on node %d: %s", kind, nodeID, reasons)
		dmsg := locales.M("event.incident."+kind, nodeLabel(tx, nodeID), msg)
		if free {
			detail += fmt.Sprintf(" — within %s of the start: the whole rental is free", FreeIfFailsWithin)
			dmsg = locales.M("event.incident.free", dmsg, int(FreeIfFailsWithin/time.Minute))
		}
		if err := models.AddRentalEvent(tx, r.ID, now, "incident", detail, &inc, dmsg); err != nil {
			return err
		}
		if err := fleet.ExpireTasks(tx, r.ID, nodeID, now); err != nil {
			return err
		}
		if _, err := fleet.EnqueueTask(tx, nodeID, &r.ID, fmt.Sprintf("r%d/a%d/evacuate", r.ID, r.Attempts),
			s.stopTaskOf(tx, &r), now); err != nil {
			return err
		}
		if err := s.releaseGPUs(tx, r.ID, now); err != nil {
			return err
		}
		moved = true
		return s.enqueueProvision(ctx, tx, r.ID)
	})
	if noGPU && err == nil {
		_, err = s.Stop(ctx, rentalID, fmt.Sprintf("%s on node %d: a container without GPUs is not moved; start it again when the node is back", kind, nodeID))
		return false, err
	}
	if moved {
		s.Hub.Signal(fleet.NodeKey(nodeID))
		slog.Warn("rental migrating", "rental", rentalID, "node", nodeID, "gpu", gpuID, "reasons", reasons)
	}
	return moved, err
}
