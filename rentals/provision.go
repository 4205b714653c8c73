package rentals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/images"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/models/supply"
	"suanli/pricing"
)

// Checks are the NVML checks that passed before the GPUs were handed over.
type Checks = gpu.Checks

// RentalChecks decodes a rental's checks (nil before any passed).
func RentalChecks(r *models.Rental) *Checks { return gpu.ParseChecks(r.Checks) }

// MaxNodeAttempts bounds how many nodes one provisioning tries.
const MaxNodeAttempts = 5

// Provision moves a pending, provisioning or migrating rental forward by
// one step of at most StepWait: it asks the node's agent to verify exactly
// the rental's GPUs, then to launch; on a failed check or no answer in
// time it releases those GPUs and reserves others on another node of the
// same provider, datacentre and model. It returns how long to wait before
// the next step, or 0 when the rental has settled (running, failed, or
// stopped). Every step reads the rental's state from the database and
// keys its agent tasks by rental and attempt, so a step run twice (a
// crashed worker, a retried job) never provisions twice.
func (s *Service) Provision(ctx context.Context, id int64) (time.Duration, error) {
	deadline := time.Now().Add(s.stepWait())
	for {
		r, err := s.DB.RentalByID(ctx, id)
		if err != nil {
			return 0, err
		}
		switch r.Status {
		case models.RentalPending:
			now := s.DB.Now().UTC()
			if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
				_, err := setStatus(tx, r.ID, models.RentalProvisioning, now, []models.RentalStatus{models.RentalPending}, rentalstore.RentalMove{Attempts: new(1)})
				return err
			}); err != nil {
				return 0, err
			}
			continue
		case models.RentalProvisioning, models.RentalMigrating:
		default:
			return 0, nil
		}
		done, wait, err := s.provisionStep(ctx, &r)
		if err != nil || done {
			return 0, err
		}
		if time.Now().Add(wait).After(deadline) {
			// Still waiting for the agent: snooze the job (a zero would
			// complete it and leave the rental stuck).
			return max(wait, 250*time.Millisecond), nil
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return max(wait, 250*time.Millisecond), nil
			case <-time.After(wait):
			}
		}
	}
}

// provisionStep does what the rental's state asks for next. done means
// the rental settled; wait how long to pause when waiting for an agent.
func (s *Service) provisionStep(ctx context.Context, r *models.Rental) (done bool, wait time.Duration, err error) {
	now := s.DB.Now().UTC()
	if r.NoGPU {
		return s.provisionNoGPU(ctx, r, now)
	}
	gpus, err := rentalstore.HeldGPUs(ctx, s.DB, r.ID)
	if err != nil {
		return false, 0, err
	}
	if len(gpus) == 0 {
		// No GPUs held (the last node failed): find another node.
		return s.nextNode(ctx, r, now, "", locales.Msg{})
	}
	nodeID := gpus[0].NodeID
	uuids := make([]string, len(gpus))
	for i, g := range gpus {
		uuids[i] = g.UUID
	}
	vol, err := s.RentalVolume(ctx, r)
	if err != nil {
		return false, 0, err
	}
	if vol, err = s.volumeOnNode(ctx, r, vol, nodeID); err != nil {
		return false, 0, err
	}
	offer, err := s.DB.OfferByID(ctx, r.OfferID)
	if err != nil {
		return false, 0, err
	}
	// GPUs taken from an interrupted rental are checked and handed over
	// only once its container has ended (its grace).
	if busy, err := rentalstore.GPUsInGrace(ctx, s.DB, r.ID, graceSlack, now); err != nil || busy {
		return false, time.Second, err
	}
	base := fmt.Sprintf("r%d/a%d", r.ID, r.Attempts)
	vt, err := s.ensureTask(ctx, nodeID, r, base+"/verify", agent.Task{Kind: agent.TaskVerify, RentalID: r.ID, GPUUUIDs: uuids})
	if err != nil {
		return false, 0, err
	}
	if vt.Status != models.TaskDone {
		if now.Sub(vt.CreatedAt) > s.verifyTimeout() {
			return s.nextNode(ctx, r, now, fmt.Sprintf("node %d did not answer the checks within %s", nodeID, s.verifyTimeout()),
				locales.M("event.verify_timeout", nodeLabel(s.DB.R, nodeID), int(s.verifyTimeout()/time.Second)))
		}
		return false, s.waitTask(ctx, vt.ID), nil
	}
	var vres agent.Result
	_ = json.Unmarshal([]byte(vt.Result), &vres)
	if !vres.OK {
		return s.failChecks(ctx, r, nodeID, vres, now)
	}
	lt, err := s.ensureTask(ctx, nodeID, r, base+"/launch", launchTask(r, vol, &offer.Offer, uuids))
	if err != nil {
		return false, 0, err
	}
	if lt.Status != models.TaskDone {
		if now.Sub(lt.CreatedAt) > s.launchTimeout() {
			return s.nextNode(ctx, r, now, fmt.Sprintf("node %d did not launch within %s", nodeID, s.launchTimeout()),
				locales.M("event.launch_timeout", nodeLabel(s.DB.R, nodeID), int(s.launchTimeout()/time.Second)))
		}
		return false, s.waitTask(ctx, lt.ID), nil
	}
	var lres agent.Result
	_ = json.Unmarshal([]byte(lt.Result), &lres)
	if !lres.OK || lres.Access == nil {
		return s.nextNode(ctx, r, now, fmt.Sprintf("launch failed on node %d: %s", nodeID, lres.Error),
			locales.M("event.launch_failed", nodeLabel(s.DB.R, nodeID), fleet.Verbatim(lres.Error)))
	}
	return true, 0, s.markRunning(ctx, r, nodeID, vres, lres, vt, now)
}

// provisionNoGPU launches a no-GPU start on the node Start chose: no
// GPUs, so no NVML checks and no other node to try. A launch that fails
// or times out leaves the rental stopped, with the reason, as it was.
func (s *Service) provisionNoGPU(ctx context.Context, r *models.Rental, now time.Time) (bool, time.Duration, error) {
	if r.NodeID == nil {
		return true, 0, s.noGPUFailed(ctx, r, 0, "no node was chosen", locales.M("err.start_no_node"), now)
	}
	nodeID := *r.NodeID
	vol, err := s.RentalVolume(ctx, r)
	if err != nil {
		return false, 0, err
	}
	offer, err := s.DB.OfferByID(ctx, r.OfferID)
	if err != nil {
		return false, 0, err
	}
	lt, err := s.ensureTask(ctx, nodeID, r, fmt.Sprintf("r%d/a%d/launch", r.ID, r.Attempts), launchTask(r, vol, &offer.Offer, nil))
	if err != nil {
		return false, 0, err
	}
	if lt.Status != models.TaskDone {
		if now.Sub(lt.CreatedAt) > s.launchTimeout() {
			return true, 0, s.noGPUFailed(ctx, r, nodeID, fmt.Sprintf("node %d did not launch within %s", nodeID, s.launchTimeout()),
				locales.M("event.launch_timeout", nodeLabel(s.DB.R, nodeID), int(s.launchTimeout()/time.Second)), now)
		}
		return false, s.waitTask(ctx, lt.ID), nil
	}
	var lres agent.Result
	_ = json.Unmarshal([]byte(lt.Result), &lres)
	if !lres.OK || lres.Access == nil {
		return true, 0, s.noGPUFailed(ctx, r, nodeID, fmt.Sprintf("launch failed on node %d: %s", nodeID, lres.Error),
			locales.M("event.launch_failed", nodeLabel(s.DB.R, nodeID), fleet.Verbatim(lres.Error)), now)
	}
	return true, 0, s.markRunning(ctx, r, nodeID, agent.Result{}, lres, nil, now)
}

// noGPUFailed stops a no-GPU start that could not launch: nothing was
// billed, the node is told to remove whatever it started, and the rental
// is stopped (startable again) with the reason on its page.
func (s *Service) noGPUFailed(ctx context.Context, r *models.Rental, nodeID int64, why string, msg locales.Msg, now time.Time) error {
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := models.RentalForUpdate(tx, r.ID)
		if err != nil {
			return err
		}
		reason := "the no-GPU start failed: " + why
		ok, err := setStatus(tx, r.ID, models.RentalStopping, now, []models.RentalStatus{models.RentalProvisioning},
			rentalstore.RentalMove{StoppedAt: &now, StopReason: &reason})
		if err != nil || !ok {
			return err
		}
		if err := models.AddRentalEvent(tx, r.ID, now, "node_failed", why, nil, msg); err != nil {
			return err
		}
		if nodeID != 0 {
			if err := fleet.ExpireTasks(tx, r.ID, nodeID, now); err != nil {
				return err
			}
			if _, err := fleet.EnqueueTask(tx, nodeID, &r.ID, fmt.Sprintf("r%d/a%d/abort", r.ID, cur.Attempts), s.stopTaskOf(tx, &cur), now); err != nil {
				return err
			}
		}
		return s.finishStop(tx, r.ID, nodeID, now)
	})
	if err == nil && nodeID != 0 {
		s.Hub.Signal(fleet.NodeKey(nodeID))
	}
	return err
}

// ensureTask returns the task with the key, creating it (and waking the
// node's long-poll) when it does not exist yet.
func (s *Service) ensureTask(ctx context.Context, nodeID int64, r *models.Rental, key string, t agent.Task) (*models.AgentTask, error) {
	have, err := supply.AgentTaskByKey(ctx, s.DB, key)
	if err == nil {
		return have, nil
	}
	if apperr.Code(err) != apperr.ENOTFOUND {
		return nil, err
	}
	now := s.DB.Now().UTC()
	var id int64
	if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		id, err = fleet.EnqueueTask(tx, nodeID, &r.ID, key, t, now)
		return err
	}); err != nil {
		return nil, err
	}
	s.Hub.Signal(fleet.NodeKey(nodeID))
	return supply.AgentTaskByID(ctx, s.DB, id)
}

// waitTask waits (briefly) for a task's result and says how long to pause
// before looking again: nothing when the hub signalled it.
func (s *Service) waitTask(ctx context.Context, taskID int64) time.Duration {
	select {
	case <-s.Hub.Wait(fleet.TaskKey(taskID)):
		return 0
	case <-ctx.Done():
		return 0
	case <-time.After(250 * time.Millisecond): // a result posted to another replica
		return 0
	}
}

// failChecks records failed NVML checks: the failing GPUs are marked, the
// rental's GPUs released, and another node tried.
func (s *Service) failChecks(ctx context.Context, r *models.Rental, nodeID int64, res agent.Result, now time.Time) (bool, time.Duration, error) {
	var reasons []string
	failing := map[string]locales.Msg{} // by GPU UUID
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		for uuid, v := range res.Verdicts {
			if v.Healthy {
				continue
			}
			reasons = append(reasons, uuid+": "+strings.Join(v.Reasons, "; "))
			msg := fleet.ReasonsMsg(v)
			failing[uuid] = msg
			g, err := rentalstore.GPUByUUID(tx, uuid)
			if err != nil {
				continue
			}
			if err := rentalstore.MarkGPUFailing(tx, g.ID, strings.Join(v.Reasons, "\n"), msg, now); err != nil {
				return err
			}
			if _, err := fleet.OpenIncident(tx, nodeID, g.ID, models.IncidentGPUFailing, strings.Join(v.Reasons, "\n"), now, msg); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, 0, err
	}
	sort.Strings(reasons)
	why := fmt.Sprintf("NVML checks failed on node %d: %s", nodeID, strings.Join(reasons, " | "))
	uuids := slices.Sorted(maps.Keys(failing))
	gpus := make([]locales.Msg, len(uuids))
	for i, u := range uuids {
		gpus[i] = locales.M("event.gpu_reasons", u, failing[u])
	}
	whyMsg := locales.M("rental.detail.node_failed", nodeLabel(s.DB.R, nodeID), locales.Lines(gpus...))
	if res.Error != "" && len(reasons) == 0 {
		why = fmt.Sprintf("NVML checks failed on node %d: %s", nodeID, res.Error)
		whyMsg = locales.M("rental.detail.node_failed", nodeLabel(s.DB.R, nodeID), fleet.Verbatim(res.Error))
	}
	return s.nextNode(ctx, r, now, why, whyMsg)
}

// nextNode releases the rental's GPUs (telling the old node to stop
// anything it may have launched) and reserves GPUs on another node of the
// same provider, datacentre and model that the rental has not tried. With
// none left, a provisioning rental fails (nothing was charged) and a
// migrating one stops.
// why is in English, whyMsg the same as a message.
func (s *Service) nextNode(ctx context.Context, r *models.Rental, now time.Time, why string, whyMsg locales.Msg) (bool, time.Duration, error) {
	var settled bool
	var wake []int64
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := rentalstore.ReadRental(tx, r.ID)
		if err != nil {
			return err
		}
		if cur.Status != models.RentalProvisioning && cur.Status != models.RentalMigrating {
			settled = true
			return nil
		}
		if why != "" {
			if err := models.AddRentalEvent(tx, r.ID, now, "node_failed", why, nil, whyMsg); err != nil {
				return err
			}
		}
		held, err := rentalstore.HeldRentalGPUs(tx, r.ID)
		if err != nil {
			return err
		}
		if len(held) > 0 {
			old := held[0].NodeID
			if err := fleet.ExpireTasks(tx, r.ID, old, now); err != nil {
				return err
			}
			if _, err := fleet.EnqueueTask(tx, old, &r.ID, fmt.Sprintf("r%d/a%d/abort", r.ID, cur.Attempts),
				s.stopTaskOf(tx, r), now); err != nil {
				return err
			}
			wake = append(wake, old)
			if err := s.releaseGPUs(tx, r.ID, now); err != nil {
				return err
			}
		}
		offer, err := rentalstore.ReadOffer(tx, r.OfferID)
		if err != nil {
			return err
		}
		// Candidates: the offer's node first, then siblings, never a node tried before.
		cands, err := rentalstore.CandidateNodes(tx, &offer, r.ID)
		if err != nil {
			return err
		}
		if cands, err = images.CompatibleRentalNodes(ctx, s.DB, tx, &cur, &offer, cands); err != nil {
			return err
		}
		if only, ok, err := volumeNode(tx, &cur); err != nil {
			return err
		} else if ok {
			// The files of a local volume are on one node's disk: a start
			// (or a rent with the volume) can only use that node.
			cands = slices.DeleteFunc(cands, func(n int64) bool { return n != only })
		}
		if cur.Attempts < MaxNodeAttempts {
			for _, n := range cands {
				// A node whose GPUs were taken meanwhile leaves nothing
				// behind: its writes are undone and the next one is tried.
				noFree := func(err error) bool { return errors.Is(err, ErrNoFreeGPUs) }
				err := models.Attempt(tx, fmt.Sprintf("try%d", n), func() error { return reserveGPUs(tx, &cur, n, offer.GPUModel, now) }, noFree)
				if noFree(err) {
					continue
				}
				if err != nil {
					return err
				}
				return rentalstore.SetRentalAttempts(tx, r.ID, cur.Attempts+1, now)
			}
		}
		settled = true
		if cur.Status == models.RentalProvisioning {
			reason := "no node passed the NVML checks; nothing was charged"
			msg := locales.M("rental.detail.none_passed")
			if why != "" {
				reason = why + "; no other node passed the checks; nothing was charged"
				msg = locales.M("event.failed_after", whyMsg)
			}
			if _, err := setStatus(tx, r.ID, models.RentalFailed, now, []models.RentalStatus{models.RentalProvisioning},
				rentalstore.RentalMove{Failure: &reason, FailureMsg: &msg, StoppedAt: &now}); err != nil {
				return err
			}
			if err := s.dropPendingVolume(tx, &cur, now); err != nil {
				return err
			}
			// A failed rental never starts: its launch secrets go.
			if err := rentalstore.ForgetLaunchSecrets(tx, r.ID); err != nil {
				return err
			}
			return models.AddRentalEvent(tx, r.ID, now, "failed", reason, nil, msg)
		}
		// Migrating with nowhere to go: the rental stops; the downtime was never billed.
		if err := s.endDowntime(tx, &cur, now); err != nil {
			return err
		}
		if _, err := setStatus(tx, r.ID, models.RentalStopped, now, []models.RentalStatus{models.RentalMigrating},
			rentalstore.RentalMove{StoppedAt: &now, StopReason: new("no healthy node to move to")}); err != nil {
			return err
		}
		if err := s.remountLeftVolume(tx, &cur, now); err != nil {
			return err
		}
		if err := s.Volumes().Keep(tx, &cur, now); err != nil {
			return err
		}
		return models.AddRentalEvent(tx, r.ID, now, "stopped", "no healthy node to move to", nil, locales.M("rental.stop_reason.no_node"))
	})
	for _, n := range wake {
		s.Hub.Signal(fleet.NodeKey(n))
	}
	if settled && err == nil {
		slog.Info("rental settled without a node", "rental", r.ID, "why", why)
	}
	return settled, 0, err
}

// endDowntime adds the seconds since the rental went down to its downtime.
func (s *Service) endDowntime(tx *gorm.DB, r *models.Rental, now time.Time) error {
	if r.DownSince == nil {
		return nil
	}
	secs := int64(now.Sub(*r.DownSince) / time.Second)
	r.DowntimeSecs += secs
	r.DownSince = nil
	return rentalstore.EndRentalDowntime(tx, r.ID, r.DowntimeSecs)
}

// markRunning hands the GPUs over: the access details and checks are
// stored and billing starts at this second (or resumes, after a move). A
// term rental pays its term now, from the wallet; if it cannot, it stops
// and nothing is charged.
// vt is the verify task whose checks passed (nil in no-GPU mode: no
// GPUs, no checks).
func (s *Service) markRunning(ctx context.Context, r *models.Rental, nodeID int64, vres, lres agent.Result, vt *models.AgentTask, now time.Time) error {
	checks := []byte{}
	if vt != nil {
		checks, _ = json.Marshal(Checks{NodeID: nodeID, At: *vt.DoneAt, Verdicts: vres.Verdicts})
	}
	access, _ := json.Marshal(lres.Access)
	var stopTerm bool
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := rentalstore.ReadRental(tx, r.ID)
		if err != nil {
			return err
		}
		from := cur.Status
		if from == models.RentalRunning {
			return nil // another run of this step got here first
		}
		if from != models.RentalProvisioning && from != models.RentalMigrating {
			// Stopped while launching: stop what was just launched too.
			_, err := fleet.EnqueueTask(tx, nodeID, &cur.ID, fmt.Sprintf("r%d/a%d/late-stop", cur.ID, cur.Attempts),
				s.stopTaskOf(tx, &cur), now)
			return err
		}
		// Billing counts whole seconds from this one.
		sec := now.Truncate(time.Second)
		up := rentalstore.RentalMove{Access: new(string(access)), Checks: new(string(checks)), NodeID: &nodeID, BilledUntil: &sec}
		if cur.RunningSince == nil {
			up.RunningSince = &sec
		}
		if from == models.RentalMigrating {
			if err := s.endDowntime(tx, &cur, now); err != nil {
				return err
			}
		}
		// The status moves first and only from what was read: a stop that
		// committed meanwhile wins and nothing is charged.
		if cur.Term != pricing.OnDemand && cur.EndsAt == nil {
			up.EndsAt = new(pricing.TermEnd(cur.Term, now))
		}
		if ok, err := setStatus(tx, r.ID, models.RentalRunning, now, []models.RentalStatus{from}, up); err != nil || !ok {
			return err
		}
		if err := s.volumeRunsOn(tx, &cur, nodeID, sec); err != nil {
			return err
		}
		if cur.Term != pricing.OnDemand && cur.EndsAt == nil {
			if err := s.chargeTerm(tx, &cur, now, 1); err != nil {
				if !errors.Is(err, ledger.ErrInsufficientFunds) {
					return err
				}
				stopTerm = true
				why := "the balance did not cover the term's price; nothing was charged"
				msg := locales.M("event.term_unpaid")
				if err := rentalstore.FailUnpaidTerm(tx, r.ID, why, msg, now); err != nil {
					return err
				}
				if err := models.AddRentalEvent(tx, r.ID, now, "failed", why, nil, msg); err != nil {
					return err
				}
				// Give the GPUs back and stop what was launched, in the same transaction.
				if _, err := fleet.EnqueueTask(tx, nodeID, &cur.ID, fmt.Sprintf("r%d/abort-term", cur.ID),
					s.stopTaskOf(tx, &cur), now); err != nil {
					return err
				}
				return s.releaseGPUs(tx, cur.ID, now)
			}
		}
		if cur.NoGPU {
			return models.AddRentalEvent(tx, r.ID, now, "running_no_gpu", fmt.Sprintf("node %d; no GPUs (no-GPU mode)", nodeID), nil,
				locales.M("event.running_no_gpu", nodeLabel(tx, nodeID)))
		}
		kind := "running"
		if from == models.RentalMigrating {
			kind = "migrated"
		}
		p, t := (&Checks{Verdicts: vres.Verdicts}).Passed()
		return models.AddRentalEvent(tx, r.ID, now, kind, fmt.Sprintf("node %d; %d of %d NVML checks passed", nodeID, p, t), nil,
			locales.M("rental.detail.checks", nodeLabel(tx, nodeID), p, t))
	})
	if err != nil {
		return err
	}
	if stopTerm {
		s.Hub.Signal(fleet.NodeKey(nodeID))
		return nil
	}
	slog.Info("rental running", "rental", r.ID, "node", nodeID)
	return nil
}
