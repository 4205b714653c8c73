package rentals

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/bids"
	"suanli/billing"
	"suanli/catalog"
	"suanli/fleet"
	"suanli/images"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/platform"
	"suanli/models/rentalstore"
	"suanli/models/supply"
	"suanli/offers"
	"suanli/pricing"
	"suanli/secrets"
	"suanli/volumes"
	"suanli/workspace"
)

// CommissionPct is the platform's share of every rental charge.
const CommissionPct = billing.CommissionPct

// ReceivableOffsetKind is the ledger kind of a payout run's offset of what
// a provider owed the platform against its payable.
const ReceivableOffsetKind = "receivable_offset"

// FreeIfFailsWithin: a rental whose GPUs fail this soon after it started
// costs nothing at all.
const FreeIfFailsWithin = 10 * time.Minute

// Provisioner queues a rental's provisioning in the transaction that
// created or moved it, so that the job exists exactly when the rental
// does (workers.Queue does, with a River job).
type Provisioner interface {
	EnqueueProvision(ctx context.Context, tx *sql.Tx, rentalID int64) error
	// EnqueueMarket asks, in the transaction that freed GPUs, for the
	// market passes (resuming interrupted rentals, standing orders) to
	// run once it commits.
	EnqueueMarket(ctx context.Context, tx *sql.Tx) error
}

// Service runs the rental lifecycle: renting, provisioning through the
// node agents' NVML checks, metering, stopping, and moving rentals off
// failing GPUs.
type Service struct {
	DB     *models.DB
	Wallet *billing.Wallet
	Jobs   Provisioner
	Hub    *fleet.Hub
	// VerifyTimeout and LaunchTimeout bound how long an agent may take to
	// answer a verify or launch task before the next node is tried.
	VerifyTimeout, LaunchTimeout time.Duration
	// SilentAfter is how long without a heartbeat makes a node silent.
	SilentAfter time.Duration
	// StepWait is how long one provisioning job run waits for an agent
	// before it snoozes (keeping River's job timeout short).
	StepWait time.Duration
	// BaseURL is used in mails.
	BaseURL string
	// Started is when this process started; silence is judged only after
	// SilentAfter has passed since (a server that was down itself heard
	// no heartbeats, which says nothing about the nodes).
	Started time.Time
	// VolumeKeepDays is how long a stopped rental's volume is kept
	// without a start (DefaultVolumeKeepDays if zero).
	VolumeKeepDays int
	// Credentials seals renters' registry passwords and opens them when a
	// launch task is handed to an agent; nil (no platform key) refuses
	// rents with registry credentials.
	Credentials *secrets.Box
	// InterruptGrace is how long an interrupted rental's container has
	// between its stop signal and its end (bids.Grace if zero).
	InterruptGrace time.Duration
	// Gate refuses renters who may not rent yet (identity.Service: real-name verification); nil: none.
	Gate interface {
		MayRent(ctx context.Context, u *models.User, orgID int64) error
	}
}

func (s *Service) verifyTimeout() time.Duration { return cmp.Or(s.VerifyTimeout, 20*time.Second) }
func (s *Service) launchTimeout() time.Duration { return cmp.Or(s.LaunchTimeout, 60*time.Second) }
func (s *Service) silentAfter() time.Duration   { return cmp.Or(s.SilentAfter, 30*time.Second) }
func (s *Service) stepWait() time.Duration      { return cmp.Or(s.StepWait, 5*time.Second) }

// gate is err if any, else Gate's word (nil: none) on u spending orgID's money anew: rent, start, change, raise, renewal.
func (s *Service) gate(ctx context.Context, err error, u *models.User, orgID int64) error {
	if err != nil || s.Gate == nil {
		return err
	}
	return s.Gate.MayRent(ctx, u, orgID)
}

// RentInput is a rent request as submitted.
type RentInput struct {
	OrgID        int64
	OfferID      int64
	GPUs         int
	SLA          string
	Term         pricing.Term
	SSHPublicKey string
	AutoRenew    bool
	// Image is a catalogue slug or, where the offer allows, a custom
	// image reference ("" the offer's default image).
	Image string
	// VolumeID mounts an existing volume of the organisation; otherwise a
	// new volume of VolumeGB (DefaultVolumeGB if zero) is made.
	VolumeID int64
	VolumeGB int
	// RegistryAuth, for a custom image only, is the credential its node
	// pulls it with; it is stored sealed and never shown again.
	RegistryAuth *images.RegistryAuth
	// Ports are container ports to open in the browser (CheckPorts).
	Ports []int
	// IdleStop is the renter's idle-stop setting (zero: off), as
	// idlestop.Service.Rent checked it against the lab's policy.
	IdleStop models.IdleStop
	// Bid, for an interruptible rental (Term on demand), is its bid per
	// GPU-hour (bids.Check); nil rents on demand or for the term.
	Bid *int64
	// Also runs in the rent's transaction once the rental and its GPUs are
	// written (a standing order marking itself filled, say); its error
	// undoes the rent.
	Also func(tx *gorm.DB, r *models.Rental) error
}

// ErrNoFreeGPUs is returned when an offer has fewer free GPUs than asked.
var ErrNoFreeGPUs = &apperr.Error{Code: apperr.EOFFERTAKEN, Message: "not enough free GPUs on this offer right now; try fewer GPUs or another offer", Key: "err.no_free_gpus"}

// Rent reserves GPUs of an offer for the user's organisation and enqueues
// their provisioning, all in one transaction. It checks the renter's
// right to spend from the organisation, one hour of balance (on demand) or
// the term's price, and spending limits. GPUs are taken only if free and
// healthy on a node whose agent is connected; the database's unique index
// on live rental GPUs makes two rentals of one GPU impossible.
func (s *Service) Rent(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, in RentInput) (*models.Rental, error) {
	if !u.Verified() {
		return nil, &apperr.Error{Code: apperr.EFORBIDDEN, Message: "verify your email before renting", Key: "err.verify_first_rent"}
	}
	if !org.Usable() {
		return nil, &apperr.Error{Code: apperr.EFORBIDDEN, Field: "org_id", Message: "this organisation may not rent yet", Key: "err.org_not_usable"}
	}
	row, err := s.DB.OfferByID(ctx, in.OfferID)
	if err = s.gate(ctx, err, u, org.ID); err != nil {
		return nil, err
	}
	o := row.Offer
	if o.Status != models.OfferListed || o.AwaitingNode {
		return nil, &apperr.Error{Code: apperr.ECONFLICT, Message: "this offer is not listed", Key: "err.offer_not_listed"}
	}
	if err := rentableOffer(ctx, s.DB, &o); err != nil {
		return nil, err
	}
	if in.GPUs < 1 || in.GPUs > o.MaxGPUs {
		return nil, apperr.Field("gpus", "err.quote_gpus", o.MaxGPUs)
	}
	tier, ok := pricing.TierByName(in.SLA)
	if !ok {
		return nil, apperr.Field("sla", "err.quote_sla")
	}
	if !o.SellsTier(tier.Name) {
		return nil, &apperr.Error{Code: apperr.EINVALID, Field: "sla", Message: fmt.Sprintf("this offer does not sell the %s SLA tier (it sells: %s)", tier.Name, o.SLATiers),
			Key: "providers.err.tier_not_sold", Args: []any{tier.Name, o.SLATiers}}
	}
	term := cmp.Or(in.Term, pricing.OnDemand)
	key, err := workspace.CheckSSHKey(in.SSHPublicKey)
	if err != nil {
		return nil, err
	}
	ports, err := workspace.CheckPorts(in.Ports)
	if err != nil {
		return nil, err
	}
	student := 0
	if offers.StudentPrices(org, m) {
		student = o.StudentDiscountPct
	}
	now := s.DB.Now().UTC()
	r := &models.Rental{OrgID: org.ID, UserID: u.ID, OfferID: o.ID, ProviderID: o.ProviderID, GPUs: in.GPUs, SLA: tier.Name, Term: term,
		Status: models.RentalPending, SSHPublicKey: key, WorkspaceID: volumes.NewKey(),
		PricePerGPUHourFen: o.PricePerGPUHourFen, OffpeakPct: o.OffpeakDiscountPct, StudentPct: student, SLASurchargePct: tier.SurchargePct,
		AutoRenew: in.AutoRenew && term != pricing.OnDemand, CreatedAt: now, UpdatedAt: now, IdleStop: in.IdleStop,
		MinBilledS: max(o.MinDurationS, pricing.MinimumSeconds), Ports: models.FormatPorts(ports)}
	priced := o
	if in.Bid != nil {
		if term != pricing.OnDemand {
			return nil, &apperr.Error{Code: apperr.EINVALID, Field: "term", Message: "a bid rents interruptibly, billed per second: it cannot be for a week or month term", Key: "bids.err.term"}
		}
		if err := bids.Check(o.InterruptibleFloorPerGPUHourFen, o.PricePerGPUHourFen, *in.Bid); err != nil {
			return nil, err
		}
		r.BidPerGPUHourFen, r.PricePerGPUHourFen = new(*in.Bid), *in.Bid
		priced.PricePerGPUHourFen = *in.Bid
	}
	need, err := offers.StartNeeds(priced, in.GPUs, term, tier, student > 0, now)
	if err != nil {
		return nil, err
	}
	if term != pricing.OnDemand {
		r.TermPriceFen = &need
	}
	bal, err := ledger.WalletBalance(ctx, s.DB, org.ID)
	if err != nil {
		return nil, err
	}
	if bal < need {
		return nil, &apperr.Error{Code: apperr.EINSUFFICIENTFUNDS, Field: "balance", Message: fmt.Sprintf("starting needs a balance of at least ¥%s (the balance is ¥%s): top up first", pricing.FenToYuanString(need), pricing.FenToYuanString(bal)),
			Key: "err.rent_balance", Args: []any{pricing.FenToYuanString(need), pricing.FenToYuanString(bal)}}
	}
	if err := s.Wallet.CheckSpend(ctx, org, u.ID, need, 0, now); err != nil {
		return nil, err
	}
	if in.VolumeID == 0 {
		if _, err := volumes.Size(in.VolumeGB, &o); err != nil {
			return nil, err
		}
	}
	img, err := images.ResolveForRent(ctx, s.DB, s.Credentials, &o, in.Image, in.RegistryAuth)
	if err != nil {
		return nil, err
	}
	r.Image = img.Reference
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if org.MonthlyBudgetFen != nil || org.MemberCapFen != nil || org.HourlyCapFen != nil {
			// Again with the organisation locked: two rents at once must not
			// both fit under a limit that only one fits under.
			locked, err := platform.OrgForUpdate(tx, org.ID)
			if err != nil {
				return err
			}
			if err := billing.CheckSpendTx(tx, locked, u.ID, need, 0, now); err != nil {
				return err
			}
		}
		if err := rentalstore.InsertRental(tx, r); err != nil {
			return err
		}
		if in.RegistryAuth != nil {
			if err := images.StoreRegistryAuth(tx, s.Credentials, r.ID, *in.RegistryAuth, now); err != nil {
				return err
			}
		}
		v, err := volumes.Attach(tx, r, &o, in.VolumeID, in.VolumeGB, now)
		if err != nil {
			return err
		}
		r.VolumeID = &v.ID
		if err := s.takeGPUs(ctx, tx, r, o.NodeID, o.GPUModel, now); err != nil {
			return err
		}
		if err := models.AddRentalEvent(tx, r.ID, now, "requested", fmt.Sprintf("%d × %s", r.GPUs, o.GPUModel), nil,
			locales.M("event.requested", catalog.GPUName(o.GPUModel), r.GPUs)); err != nil {
			return err
		}
		if r.Interruptible() {
			// The offer's clearing price may have moved.
			if err := models.OffersChanged(tx, models.OfferScope{Offers: []int64{o.ID}}); err != nil {
				return err
			}
		}
		if in.Also != nil {
			if err := in.Also(tx, r); err != nil {
				return err
			}
		}
		return s.enqueueProvision(ctx, tx, r.ID)
	})
	if err != nil {
		return nil, err
	}
	// Wake the node's agent for the stop of any rental this one interrupted.
	s.Hub.Signal(fleet.NodeKey(o.NodeID))
	slog.Info("rental requested", "rental", r.ID, "org", org.ID, "user", u.ID, "offer", o.ID, "gpus", r.GPUs, "term", term)
	return r, nil
}

// reserveGPUs takes the rental's GPUs on one node in tx: free, healthy,
// of the model, on a node whose agent is connected. The state update
// only takes GPUs still free (a concurrent rent that took one first
// leaves too few rows changed), and the unique index on live rental GPUs
// backs it up.
func reserveGPUs(tx *gorm.DB, r *models.Rental, nodeID int64, model string, now time.Time) error {
	ids, err := rentalstore.FreeGPUsOnNode(tx, nodeID, model, r.GPUs)
	if err != nil {
		return err
	}
	if len(ids) < r.GPUs {
		return ErrNoFreeGPUs
	}
	taken, err := rentalstore.TakeGPUs(tx, ids)
	if err != nil {
		return err
	}
	if taken != int64(len(ids)) {
		return ErrNoFreeGPUs
	}
	for _, id := range ids {
		if err := rentalstore.AttachRentalGPU(tx, r.ID, id, nodeID, now); err != nil {
			if ledger.IsUniqueViolation(err) {
				return ErrNoFreeGPUs
			}
			return err
		}
	}
	if err := rentalstore.SetRentalNode(tx, r.ID, nodeID, now); err != nil {
		return err
	}
	r.NodeID = &nodeID
	return supply.RefreshNodeAvailability(tx, nodeID, now)
}

// releaseGPUs lets go of every GPU the rental holds (see
// rentalstore.ReleasedGPUState), refreshes the availability of the offers
// on their nodes and asks for the market passes (resumes, standing
// orders) to run once tx commits.
func (s *Service) releaseGPUs(tx *gorm.DB, rentalID int64, now time.Time) error {
	nodes, err := rentalstore.ReleaseRentalGPUs(tx, rentalID, now)
	if err != nil || len(nodes) == 0 {
		return err
	}
	if err := s.enqueueMarket(tx); err != nil {
		return err
	}
	for _, n := range nodes {
		if err := supply.RefreshNodeAvailability(tx, n, now); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) enqueueProvision(ctx context.Context, tx *gorm.DB, rentalID int64) error {
	stx, err := models.SQLTx(tx)
	if err != nil {
		return err
	}
	return s.Jobs.EnqueueProvision(ctx, stx, rentalID)
}

// setStatus changes a rental's status in tx only if it is still in one of
// the from statuses, and reports whether it did. A move the transition
// table (models.RentalStatus.CanMoveTo) does not allow is a programming
// error, refused before anything is written.
func setStatus(tx *gorm.DB, id int64, to models.RentalStatus, now time.Time, from []models.RentalStatus, extra rentalstore.RentalMove) (bool, error) {
	for _, f := range from {
		if !f.CanMoveTo(to) {
			return false, fmt.Errorf("rental %d: status %s cannot move to %s", id, f, to)
		}
	}
	return rentalstore.MoveRental(tx, id, to, from, extra, now)
}

// CanStop reports whether the user may stop the rental: its renter, or an
// admin of its organisation.
func CanStop(r *models.Rental, u *models.User, m *models.Membership) bool { return r.ManagedBy(u, m) }

// Stoppable reports whether the user may stop the rental now: CanStop,
// and its status can still be stopped.
func Stoppable(r *models.Rental, u *models.User, m *models.Membership) bool {
	return CanStop(r, u, m) && r.Status.CanStop()
}

// Changeable reports whether the user may switch or resize the rental
// now: CanStop, and models.Rental.CanChange.
func Changeable(r *models.Rental, u *models.User, m *models.Membership) bool {
	return CanStop(r, u, m) && r.CanChange()
}

// Stop stops a rental. Billing ends at this second (an on-demand rental
// is billed at least its MinBilledS); the node's agent is told to stop the
// workload, and the GPUs are released when it confirms (or when the
// health watch gives up waiting). A rental not yet running is cancelled
// and costs nothing. A term rental keeps its GPUs to the term's end.
// also run in the stop's transaction when this call stops the rental (a
// mail saying why, say).
func (s *Service) Stop(ctx context.Context, id int64, reason string, also ...func(tx *gorm.DB, r *models.Rental) error) (*models.Rental, error) {
	now := s.DB.Now().UTC()
	var nodeID int64
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		// Locked: a meter pass that claims the rental meanwhile waits, so
		// the final charge (up to the minimum) is billed from what it left.
		r, err := models.RentalForUpdate(tx, id)
		if err != nil {
			return err
		}
		switch r.Status {
		case models.RentalStopped, models.RentalFailed, models.RentalStopping:
			return nil // already stopping or stopped: stopping twice is fine
		case models.RentalInterrupted:
			// It holds no GPUs and its container got its stop: it only no
			// longer resumes (its volume is kept as it was).
			return s.stopInterrupted(tx, &r, reason, now, also)
		case models.RentalRunning:
			if err := s.meterOne(tx, &r, now, true); err != nil {
				return err
			}
		case models.RentalMigrating:
			// Billing stopped when the downtime began; it ends now.
			if err := s.endDowntime(tx, &r, now); err != nil {
				return err
			}
		}
		if _, err := setStatus(tx, r.ID, models.RentalStopping, now, models.LiveRentalStatuses,
			rentalstore.RentalMove{StoppedAt: &now, StopReason: &reason}); err != nil {
			return err
		}
		if err := models.AddRentalEvent(tx, r.ID, now, "stop_requested", reason, nil); err != nil {
			return err
		}
		for _, f := range also {
			if err := f(tx, &r); err != nil {
				return err
			}
		}
		if r.NodeID == nil {
			return s.finishStop(tx, r.ID, 0, now)
		}
		nodeID = *r.NodeID
		if err := fleet.ExpireTasks(tx, r.ID, nodeID, now); err != nil {
			return err
		}
		_, err = fleet.EnqueueTask(tx, nodeID, &r.ID, fmt.Sprintf("r%d/stop/%d", r.ID, r.Attempts), s.stopTaskOf(tx, &r), now)
		return err
	})
	if err != nil {
		return nil, err
	}
	if nodeID != 0 {
		s.Hub.Signal(fleet.NodeKey(nodeID))
	}
	r, err := s.DB.RentalByID(ctx, id)
	return &r, err
}

// stopInterrupted stops, in tx, an interrupted rental for good (it no
// longer resumes), running also as Stop does.
func (s *Service) stopInterrupted(tx *gorm.DB, r *models.Rental, reason string, now time.Time, also []func(tx *gorm.DB, r *models.Rental) error) error {
	if _, err := setStatus(tx, r.ID, models.RentalStopped, now, []models.RentalStatus{models.RentalInterrupted},
		rentalstore.RentalMove{StoppedAt: &now, StopReason: &reason}); err != nil {
		return err
	}
	if r.RunningSince == nil {
		// Interrupted before it ever ran: its new volume goes, unbilled.
		if err := s.dropPendingVolume(tx, r, now); err != nil {
			return err
		}
	}
	for _, f := range also {
		if err := f(tx, r); err != nil {
			return err
		}
	}
	return models.AddRentalEvent(tx, r.ID, now, "stopped", reason, nil)
}

// finishStop completes a stopping rental in tx: on demand its GPUs are
// released; a term rental keeps them until its term ends.
func (s *Service) finishStop(tx *gorm.DB, rentalID, nodeID int64, now time.Time) error {
	// Locked: a release that commits meanwhile is seen (its volume gets no
	// deletion date).
	r, err := models.RentalForUpdate(tx, rentalID)
	if err != nil {
		return err
	}
	if r.Status != models.RentalStopping {
		return nil
	}
	if r.Term == pricing.OnDemand || r.EndsAt == nil || !r.EndsAt.After(now) {
		if err := s.releaseGPUs(tx, r.ID, now); err != nil {
			return err
		}
	}
	if _, err := setStatus(tx, r.ID, models.RentalStopped, now, []models.RentalStatus{models.RentalStopping}, rentalstore.RentalMove{}); err != nil {
		return err
	}
	if r.RunningSince == nil {
		// It never ran: the volume made for it goes, unbilled.
		if err := s.dropPendingVolume(tx, &r, now); err != nil {
			return err
		}
	} else if err := s.Volumes().Keep(tx, &r, now); err != nil {
		return err
	}
	return models.AddRentalEvent(tx, r.ID, now, "stopped", "", nil)
}

// Access decodes a rental's access details (nil before launch).
func Access(r *models.Rental) *agent.Access { return agent.ParseAccess(r.Access) }

// SLATerms are the measurement facts the SLA page states.
type SLATerms struct {
	HeartbeatEvery, SilentAfter, FreeIfFailsWithin time.Duration
	// FlapWindow: a failure again this soon after its incident closed
	// reopens it (the time between counts as down).
	FlapWindow time.Duration
}

// Terms returns the rental service's SLA measurement facts.
func (s *Service) Terms() SLATerms {
	return SLATerms{HeartbeatEvery: fleet.HeartbeatEvery, SilentAfter: s.silentAfter(), FreeIfFailsWithin: FreeIfFailsWithin, FlapWindow: fleet.FlapWindow}
}

// Fleet is the node side of the rental service: heartbeats, credentials
// and the agents' task queue, on the same database and hub.
func (s *Service) Fleet() *fleet.Fleet {
	return &fleet.Fleet{DB: s.DB, Hub: s.Hub, Credentials: s.Credentials, VerifyBaseURL: s.BaseURL}
}
