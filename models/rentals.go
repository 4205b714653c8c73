package models

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/locales"
	"suanli/pricing"
)

// RentalStatus is where a rental is in its life: pending → provisioning →
// running → stopping → stopped, and failed (nothing charged), migrating
// (moving off a failing node) or interrupted (an interruptible rental whose
// GPUs went to a higher priority: it holds none and resumes by itself). rentalTransitions is the one table of the
// moves between them; the use cases change a status only along it.
type RentalStatus string

// Rental statuses.
const (
	RentalPending      RentalStatus = "pending"
	RentalProvisioning RentalStatus = "provisioning"
	RentalRunning      RentalStatus = "running"
	RentalMigrating    RentalStatus = "migrating"
	RentalStopping     RentalStatus = "stopping"
	RentalStopped      RentalStatus = "stopped"
	RentalFailed       RentalStatus = "failed"
	// RentalInterrupted: an interruptible rental gave its GPUs to an
	// on-demand rent, a term or a higher bid. Billing ended when its grace
	// began; it holds no GPUs, keeps its volume, and resumes (new NVML
	// checks) when GPUs at its bid are free, unless its renter stops it.
	RentalInterrupted RentalStatus = "interrupted"
)

// RentalStatuses are all the statuses, in the order of a rental's life.
var RentalStatuses = []RentalStatus{RentalPending, RentalProvisioning, RentalRunning, RentalMigrating, RentalStopping, RentalStopped, RentalFailed, RentalInterrupted}

// rentalTransitions lists, for each status, the statuses it may move to.
var rentalTransitions = map[RentalStatus][]RentalStatus{
	RentalPending:      {RentalProvisioning, RentalStopping, RentalInterrupted},
	RentalProvisioning: {RentalRunning, RentalFailed, RentalStopping, RentalInterrupted},
	// A week or month term whose price the balance cannot cover fails in
	// the transaction that set it running (FailUnpaidTerm).
	RentalRunning:   {RentalMigrating, RentalStopping, RentalFailed, RentalInterrupted},
	RentalMigrating: {RentalRunning, RentalStopped, RentalFailed, RentalStopping},
	RentalStopping:  {RentalStopped},
	// A stopped rental that ran may be switched or resized, which starts
	// it again.
	RentalStopped: {RentalProvisioning},
	// An interrupted rental resumes (provisioning, new checks) or is
	// stopped by its renter (then it waits for nothing).
	RentalInterrupted: {RentalProvisioning, RentalStopped},
}

// CanMoveTo reports whether the table allows a move from s to next (a
// status "moving" to itself changes nothing and is always allowed).
func (s RentalStatus) CanMoveTo(next RentalStatus) bool {
	return s == next || slices.Contains(rentalTransitions[s], next)
}

// Live reports whether a rental in this status holds GPUs or is about to.
func (s RentalStatus) Live() bool { return slices.Contains(LiveRentalStatuses, s) }

// Ended reports whether the rental is over (stopped or failed).
func (s RentalStatus) Ended() bool { return s == RentalStopped || s == RentalFailed }

// CanStop reports whether a rental in this status can be asked to stop
// (an interrupted one stops at once: it then no longer resumes).
func (s RentalStatus) CanStop() bool {
	return s == RentalInterrupted || (s != RentalStopping && s.CanMoveTo(RentalStopping))
}

// Interruptible reports whether the rental runs on a bid: its GPUs may
// go to an on-demand rent, a term or a higher bid.
func (r *Rental) Interruptible() bool { return r.BidPerGPUHourFen != nil }

// TermName is the rental's term as the API and pages name it:
// "interruptible" for a bid, else its pricing term.
func (r *Rental) TermName() string {
	if r.Interruptible() {
		return TermInterruptible
	}
	return string(r.Term)
}

// TermInterruptible is the API's term of a rental on a bid (stored as an
// on-demand term with a bid: it is billed per second like one).
const TermInterruptible = "interruptible"

// CanChange reports whether the rental can be switched or resized: an
// on-demand one (not a bid) that is running, or stopped after having run.
func (r *Rental) CanChange() bool {
	// A bid is for its offer's GPUs at its price: a switch or resize is a
	// new rental (a new bid).
	if r.Term != pricing.OnDemand || r.Interruptible() || (r.NoGPU && r.Status == RentalRunning) {
		return false
	}
	return r.Status == RentalRunning || (r.Status == RentalStopped && r.RunningSince != nil)
}

// LiveRentalStatuses are the statuses in which a rental holds GPUs or is
// about to.
var LiveRentalStatuses = []RentalStatus{RentalPending, RentalProvisioning, RentalRunning, RentalMigrating, RentalStopping}

// Rental is one renter's use of GPUs of an offer.
type Rental struct {
	ID           int64
	OrgID        int64
	UserID       int64
	OfferID      int64
	ProviderID   int64
	NodeID       *int64
	GPUs         int `gorm:"column:gpus"`
	SLA          string
	Term         pricing.Term
	Status       RentalStatus
	SSHPublicKey string `gorm:"column:ssh_public_key"`
	WorkspaceID  string
	// The price agreed at the start.
	PricePerGPUHourFen int64 `gorm:"column:price_per_gpu_hour_fen"`
	OffpeakPct         int
	StudentPct         int
	SLASurchargePct    int    `gorm:"column:sla_surcharge_pct"`
	TermPriceFen       *int64 `gorm:"column:term_price_fen"`
	AutoRenew          bool
	// Access is JSON agent.Access once launched; Checks is JSON of the
	// NVML checks that passed before the GPUs were handed over.
	Access  string
	Checks  string
	Failure string
	// FailureMsg is Failure as a message (zero for rentals that failed
	// before it was stored).
	FailureMsg locales.Msg `gorm:"column:failure_msg"`
	StopReason string
	Attempts   int
	// Billing state: see the migration.
	RunningSince *time.Time
	BilledUntil  *time.Time
	CarryNum     int64
	BilledFen    int64
	// EarnedFen is how much of a term's BilledFen the provider has earned
	// so far (moved from its unearned account to its payable).
	EarnedFen        int64
	DowntimeSecs     int64
	DownSince        *time.Time
	Free             bool
	EndsAt           *time.Time
	LowBalanceMailed bool
	StoppedAt        *time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
	// MinBilledS is the least it is billed for, in seconds, agreed at rent
	// from the offer's minimum duration.
	MinBilledS int `gorm:"column:min_billed_s;default:60"`
	// Image is the container image reference the rental runs.
	Image string
	// VolumeID is the volume mounted at /workspace (nil for rentals from
	// before volumes, whose workspace was the node's).
	VolumeID *int64
	// ReleasedAt is set when the rental was released: stopped for good,
	// it never starts again.
	ReleasedAt *time.Time
	// NoGPU is set while the rental runs (or last ran) in no-GPU mode: its
	// container without GPUs, billed NoGPUPricePerHourFen an hour (the
	// offer's price at that start) instead of its GPU price.
	NoGPU                bool  `gorm:"column:no_gpu"`
	NoGPUPricePerHourFen int64 `gorm:"column:no_gpu_price_per_hour_fen"`
	// IdleStop is the renter's own idle-stop setting (zero: off); the
	// watch applies the stricter of it and the lab's policy (idlestop).
	IdleStop IdleStop `gorm:"embedded;embeddedPrefix:idle_stop_"`
	// IdleWarnedAt is when the renter was last warned that the rental
	// will stop for idling: once per idle streak.
	IdleWarnedAt *time.Time
	// Ports are the container ports the renter declared for the browser
	// (comma-separated, ascending: see ParsePorts), proxied at
	// /rentals/{id}/ports/{port}/.
	Ports string
	// BidPerGPUHourFen is an interruptible rental's bid (nil: not
	// interruptible), in the units of the offer's price (before the
	// off-peak and student discounts, which apply to it as to any price);
	// PricePerGPUHourFen equals it while it is one.
	BidPerGPUHourFen *int64 `gorm:"column:bid_per_gpu_hour_fen"`
	// InterruptedAt is when it was last interrupted (its grace began and
	// its billing ended), InterruptReason and InterruptMsg why, GraceUntil
	// when its container is stopped for good. Kept after a resume, so the
	// page can say what happened last.
	InterruptedAt   *time.Time
	InterruptReason string
	InterruptMsg    locales.Msg `gorm:"column:interrupt_msg"`
	GraceUntil      *time.Time
}

// DeclaredPorts is r's Ports as numbers.
func (r *Rental) DeclaredPorts() []int { return ParsePorts(r.Ports) }

// ParsePorts reads a Rental.Ports value; a part that is not a number is
// skipped (the column is only written by FormatPorts).
func ParsePorts(s string) []int {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(part)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// FormatPorts is the Rental.Ports value of ports.
func FormatPorts(ports []int) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = strconv.Itoa(p)
	}
	return strings.Join(parts, ",")
}

// PortShare is a share link: one declared port of a rental opened to
// anyone holding the link's token until ExpiresAt or revocation. Only the
// token's hash is kept.
type PortShare struct {
	ID        int64
	RentalID  int64
	Port      int
	TokenHash string
	CreatedBy int64
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt *time.Time
}

// Live reports whether the link opens its port at now.
func (s *PortShare) Live(now time.Time) bool { return s.RevokedAt == nil && now.Before(s.ExpiresAt) }

// TunnelHolder records which web replica holds a node's tunnel.
type TunnelHolder struct {
	NodeID      int64 `gorm:"primaryKey;autoIncrement:false"`
	ReplicaURL  string
	ConnectedAt time.Time
}

// ManagedBy reports whether u may manage the rental (stop, start,
// release, change it, work in its container): its renter, or an admin or
// owner of its organisation (m is u's membership there, nil for none).
func (r *Rental) ManagedBy(u *User, m *Membership) bool {
	return u != nil && (r.UserID == u.ID || (m != nil && RoleRank(m.Role) >= RoleRank(RoleAdmin)))
}

// IdleStop is "stop when every GPU's utilisation stays below BelowPct %
// for Minutes minutes" (migration 00019): a rental's own setting, or
// a lab's policy for its members' rentals. The zero value is off.
type IdleStop struct {
	BelowPct int
	Minutes  int
}

// On reports whether the setting stops anything.
func (s IdleStop) On() bool { return s.Minutes > 0 }

// Released reports whether the rental was released (see ReleasedAt).
func (r *Rental) Released() bool { return r.ReleasedAt != nil }

// Startable reports whether a stopped or interrupted rental can start
// again: on demand, not released, with a volume that still exists.
func (r *Rental) Startable(v *Volume) bool {
	if r.ReleasedAt != nil || r.Term != pricing.OnDemand || v == nil {
		return false
	}
	switch r.Status {
	case RentalStopped:
		return v.Status == VolumeActive
	case RentalInterrupted:
		// One interrupted before it ever ran still has its new volume.
		return v.Status == VolumeActive || (v.Status == VolumePending && r.RunningSince == nil)
	}
	return false
}

// WorkspaceKey is the name the node knows the rental's files by: its
// volume's, or (before volumes) the rental's own workspace id.
func (r *Rental) WorkspaceKey(v *Volume) string {
	if v != nil {
		return v.WorkspaceKey
	}
	return r.WorkspaceID
}

// RentalGPU is a GPU held by a rental; ReleasedAt nil while held.
type RentalGPU struct {
	ID         int64
	RentalID   int64
	GPUID      int64 `gorm:"column:gpu_id"`
	NodeID     int64
	AttachedAt time.Time
	ReleasedAt *time.Time
}

// TableName implements gorm's tabler.
func (RentalGPU) TableName() string { return "rental_gpus" }

// GPUSample is one telemetry sample of a rented GPU, kept for a day (see
// migration 00017): what a rental's usage page and API show.
type GPUSample struct {
	ID         int64
	GPUID      int64 `gorm:"column:gpu_id"`
	At         time.Time
	UtilPct    int     `gorm:"column:util_pct"`
	MemUsedMiB int64   `gorm:"column:mem_used_mib"`
	PowerW     float64 `gorm:"column:power_w"`
	TempC      int     `gorm:"column:temp_c"`
	SMClockMHz int     `gorm:"column:sm_clock_mhz"`
}

// Agent task statuses.
const (
	TaskQueued = "queued"
	TaskSent   = "sent"
	TaskDone   = "done"
)

// AgentTask is work for a node's agent; Payload is JSON agent.Task and
// Result JSON agent.Result.
type AgentTask struct {
	ID        int64
	NodeID    int64
	RentalID  *int64
	Kind      string
	IdemKey   string
	Payload   string
	Status    string
	OK        *bool `gorm:"column:ok"`
	Result    string
	CreatedAt time.Time
	SentAt    *time.Time
	DoneAt    *time.Time
	// Progress is the last agent.Progress the agent posted (JSON), "" if none.
	Progress string
}

// Incident kinds.
const (
	IncidentNodeSilent = "node_silent"
	IncidentGPUFailing = "gpu_failing"
)

// Incident is a node gone silent or a GPU failing its checks.
type Incident struct {
	ID      int64
	NodeID  int64
	GPUID   int64 `gorm:"column:gpu_id"` // 0 for the whole node
	Kind    string
	Reasons string
	// ReasonsMsg is Reasons as a message, for the reader's language
	// (zero for incidents recorded before it was stored).
	ReasonsMsg locales.Msg `gorm:"column:reasons_msg"`
	OpenedAt   time.Time
	ClosedAt   *time.Time
}

// RentalEvent is one line of a rental's timeline.
type RentalEvent struct {
	ID       int64
	RentalID int64
	At       time.Time
	Kind     string
	Detail   string // English, as the API shows it
	// DetailMsg is Detail as a message, for the reader's language (zero:
	// Detail is shown as it is).
	DetailMsg  locales.Msg `gorm:"column:detail_msg"`
	IncidentID *int64
}

// RentalByID returns a rental.
func (db *DB) RentalByID(ctx context.Context, id int64) (Rental, error) {
	var r Rental
	err := db.R.WithContext(ctx).First(&r, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return r, apperr.NotFound("rental")
	}
	return r, err
}

// RentalGPUs returns the GPUs a rental holds now (or held last, when
// released is true and it holds none).
func (db *DB) RentalGPUs(ctx context.Context, rentalID int64) ([]GPU, error) {
	var gs []GPU
	err := db.R.WithContext(ctx).Raw(`SELECT g.* FROM gpus g JOIN rental_gpus rg ON rg.gpu_id = g.id
		WHERE rg.rental_id = ? AND rg.id IN (SELECT id FROM rental_gpus WHERE rental_id = ? AND released_at IS NULL)
		ORDER BY g.idx`, rentalID, rentalID).Scan(&gs).Error
	if err != nil || len(gs) > 0 {
		return gs, err
	}
	// Released: the last set it held (same attach time as the newest row).
	err = db.R.WithContext(ctx).Raw(`SELECT g.* FROM gpus g JOIN rental_gpus rg ON rg.gpu_id = g.id
		WHERE rg.rental_id = ? AND rg.attached_at = (SELECT MAX(attached_at) FROM rental_gpus WHERE rental_id = ?)
		ORDER BY g.idx`, rentalID, rentalID).Scan(&gs).Error
	return gs, err
}

// RentalEvents returns a rental's timeline, oldest first.
func (db *DB) RentalEvents(ctx context.Context, rentalID int64) ([]RentalEvent, error) {
	var es []RentalEvent
	err := db.R.WithContext(ctx).Where("rental_id = ?", rentalID).Order("id").Find(&es).Error
	return es, err
}

// RentalsOfOrg returns an organisation's rentals, newest first; live only
// when live is true.
func (db *DB) RentalsOfOrg(ctx context.Context, orgID int64, live bool, limit int) ([]Rental, error) {
	var rs []Rental
	q := db.R.WithContext(ctx).Where("org_id = ?", orgID)
	if live {
		q = q.Where("status IN ?", LiveRentalStatuses)
	} else {
		q = q.Where("status NOT IN ?", LiveRentalStatuses)
	}
	err := q.Order("id DESC").Limit(limit).Find(&rs).Error
	return rs, err
}

// AddRentalEvent appends to a rental's timeline in tx: detail in English
// (the API's), and msg, the same as a message for the pages (none when the
// detail is someone's own words, shown as they are).
func AddRentalEvent(tx *gorm.DB, rentalID int64, at time.Time, kind, detail string, incident *int64, msg ...locales.Msg) error {
	e := &RentalEvent{RentalID: rentalID, At: at, Kind: kind, Detail: detail, IncidentID: incident}
	if len(msg) > 0 {
		e.DetailMsg = msg[0]
	}
	return tx.Create(e).Error
}

// SQLTx returns the *sql.Tx under a gorm transaction, for River's InsertTx.
func SQLTx(tx *gorm.DB) (*sql.Tx, error) {
	switch p := tx.Statement.ConnPool.(type) {
	case *sql.Tx:
		return p, nil
	case *gorm.PreparedStmtTX:
		if t, ok := p.Tx.(*sql.Tx); ok {
			return t, nil
		}
	}
	return nil, errors.New("models: not inside a database/sql transaction")
}

// TermsToEarn returns up to limit week or month rentals after the id
// whose paid price the provider has not wholly earned yet, by id, in tx.
func TermsToEarn(tx *gorm.DB, afterID int64, limit int) ([]Rental, error) {
	var rs []Rental
	// Written as the partial index rentals_unearned is, so that it is
	// used: unearned is the generated column earned_fen < billed_fen
	// (migration 00037).
	err := tx.Where("term <> 'on_demand' AND unearned AND id > ?", afterID).Order("id").Limit(limit).Find(&rs).Error
	return rs, err
}

// ClaimEarned moves a term rental's earned amount from the value read to
// the new one in tx, if its billed amount is still the one read, and
// reports whether it did: of two passes that race, exactly one posts the
// earning, and none after a refund.
func ClaimEarned(tx *gorm.DB, rentalID, billed, from, to int64, now time.Time) (bool, error) {
	// billed too: a refund that committed meanwhile zeroes both, and must
	// not be followed by an earning of what it gave back.
	res := tx.Model(&Rental{}).Where("id = ? AND billed_fen = ? AND earned_fen = ?", rentalID, billed, from).Updates(map[string]any{"earned_fen": to, "updated_at": now})
	return res.RowsAffected == 1, res.Error
}

// LiveOnDemandRentals returns an organisation's on-demand rentals that hold
// GPUs or are about to (all but the one numbered except), in tx.
func LiveOnDemandRentals(tx *gorm.DB, orgID, except int64) ([]Rental, error) {
	var rs []Rental
	err := tx.Where("org_id = ? AND term = ? AND status IN ? AND status <> ? AND id <> ?", orgID, "on_demand", LiveRentalStatuses, RentalStopping, except).
		Find(&rs).Error
	return rs, err
}

// RentalForUpdate reads a rental in tx, locking its row on PostgreSQL, so
// that what is billed from it (a stop's final charge) cannot be overtaken
// by a meter pass's claim; a missing rental is ENOTFOUND.
func RentalForUpdate(tx *gorm.DB, id int64) (Rental, error) {
	var r Rental
	err := LockRow(tx).First(&r, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return r, apperr.NotFound("rental")
	}
	return r, err
}

func statusStrings(ss []RentalStatus) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
