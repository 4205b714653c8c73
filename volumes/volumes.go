// Package volumes owns renters' persistent volumes: an organisation's
// storage in one datacentre, mounted at /workspace in its rental's
// container, billed per GB and second while it exists, kept when its
// rental stops (for a stated number of days, with mails before) and
// deleted on the node when its owner or the platform says so. The rental
// use case attaches volumes to rentals and decides where they may run.
package volumes

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/billing"
	"suanli/fleet"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/offers"
	"suanli/pricing"
)

// Service runs volumes on the database; Hub wakes the agents asked to
// delete one.
type Service struct {
	DB  *models.DB
	Hub *fleet.Hub
	// KeepDays is how long a stopped rental's volume is kept without a
	// start (DefaultKeepDays if zero).
	KeepDays int
	// BaseURL is used in mails.
	BaseURL string
}

// meterBatch is how many volumes one storage meter transaction bills.
const meterBatch = 1000

// NewKey is a new name for a volume's files on a node.
func NewKey() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "ws-" + hex.EncodeToString(b)
}

// deletionMail tells a volume's owner when it will be deleted unless its
// rental starts again.
func deletionMail(u *models.User, v *models.Volume, baseURL string, now time.Time) *models.OutboxMail {
	lang := u.MailLang()
	at := v.DeleteAfter.In(pricing.Shanghai).Format("2006-01-02 15:04")
	return &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: now,
		Subject: locales.T(lang, "mail.volume_deletion.subject", fmt.Sprint(v.ID)),
		Body:    locales.T(lang, "mail.volume_deletion.body", fmt.Sprint(v.ID), at, fmt.Sprintf("%s/console", baseURL)),
	}
}

// Volume sizes, in GB (the offers' rule: quotes price the same volume
// a rent makes).
const (
	DefaultGB = offers.DefaultVolumeGB
	MaxGB     = offers.MaxVolumeGB
)

// DefaultKeepDays is how long a stopped rental's volume is kept
// without a start before it is deleted, unless the platform sets another.
const DefaultKeepDays = 7

// reminderDays are the days before deletion on which the owner of
// a stopped rental's volume is mailed.
var reminderDays = []int{3, 1}

// Days is how many days a stopped rental's volume is kept without a start.
func (s *Service) Days() int { return cmp.Or(s.KeepDays, DefaultKeepDays) }

// Input is a volume made ahead of a rental.
type Input struct {
	OrgID   int64
	OfferID int64
	SizeGB  int
	Name    string
}

// MaxFor is the largest volume an offer takes (offers.MaxVolumeGBOf).
func MaxFor(o *models.Offer) int { return offers.MaxVolumeGBOf(o) }

// Size checks a requested size against the offer's disk; 0 is the
// default size (offers.VolumeSize).
func Size(gb int, o *models.Offer) (int, error) { return offers.VolumeSize(gb, o) }

// New is a volume of the offer's datacentre at its storage price,
// not yet saved; pending (unbilled) until activated.
func New(tx *gorm.DB, o *models.Offer, orgID, userID int64, sizeGB int, name, key string, now time.Time) (*models.Volume, error) {
	price, storage, err := rentalstore.OfferStorage(tx, o.ID)
	if err != nil {
		return nil, err
	}
	node := o.NodeID
	return &models.Volume{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, DatacenterID: o.DatacenterID,
		NodeID: &node, Storage: cmp.Or(storage, models.StorageLocal), Name: name, WorkspaceKey: key, SizeGB: sizeGB,
		PricePerGBMonthFen: price, Status: models.VolumePending, CreatedAt: now}, nil
}

// Add makes a volume ahead of a rental, in the offer's
// datacentre (on local storage: on the offer's node), billed from now.
func (s *Service) Add(ctx context.Context, u *models.User, org *models.Org, in Input) (*models.Volume, error) {
	if !org.Usable() {
		return nil, &apperr.Error{Code: apperr.EFORBIDDEN, Field: "org_id", Message: "this organisation may not rent yet", Key: "err.org_not_usable"}
	}
	row, err := s.DB.OfferByID(ctx, in.OfferID)
	if err != nil {
		if apperr.Code(err) == apperr.ENOTFOUND {
			return nil, apperr.Field("offer_id", "err.volume_offer")
		}
		return nil, err
	}
	o := row.Offer
	if !o.Visible() {
		return nil, apperr.Field("offer_id", "err.volume_offer")
	}
	size, err := Size(in.SizeGB, &o)
	if err != nil {
		return nil, err
	}
	if len(in.Name) > 100 {
		return nil, apperr.Field("name", "err.volume_name")
	}
	now := s.DB.Now().UTC()
	var v *models.Volume
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		if v, err = New(tx, &o, org.ID, u.ID, size, in.Name, NewKey(), now); err != nil {
			return err
		}
		v.Status, v.BilledUntil = models.VolumeActive, new(now.Truncate(time.Second))
		return rentalstore.InsertVolume(tx, v)
	})
	if err != nil {
		return nil, err
	}
	slog.Info("volume created", "volume", v.ID, "org", org.ID, "gb", v.SizeGB, "storage", v.Storage)
	return v, nil
}

// List lists an organisation's volumes.
func (s *Service) List(ctx context.Context, orgID int64) ([]models.Volume, error) {
	return rentalstore.OrgVolumes(ctx, s.DB, orgID)
}

// Usable lists the organisation's volumes a new rental of the offer may
// mount: active, attached to no rental, in the offer's datacentre and,
// on local storage, on the offer's node (the rules rentals applies when
// it attaches one).
func (s *Service) Usable(ctx context.Context, orgID int64, o *models.Offer) ([]models.Volume, error) {
	vs, err := s.List(ctx, orgID)
	if err != nil {
		return nil, err
	}
	attached, err := s.Attachments(ctx, vs)
	if err != nil {
		return nil, err
	}
	var out []models.Volume
	for _, v := range vs {
		if v.DatacenterID != o.DatacenterID || v.Status != models.VolumeActive || attached[v.ID] != 0 {
			continue
		}
		if !v.Shared() && v.NodeID != nil && *v.NodeID != o.NodeID {
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// Record returns a volume whatever its status (a deleted one too, with
// what it was billed); the caller checks who may see it.
func (s *Service) Record(ctx context.Context, id int64) (*models.Volume, error) {
	return rentalstore.VolumeByID(ctx, s.DB, id)
}

// Keep starts the countdown to deleting a stopped rental's volume
// in tx (nothing for a released rental or one without a volume).
func (s *Service) Keep(tx *gorm.DB, r *models.Rental, now time.Time) error {
	if r.VolumeID == nil || r.ReleasedAt != nil {
		return nil
	}
	return rentalstore.SetVolumeDeleteAfter(tx, *r.VolumeID, new(now.Add(time.Duration(s.Days())*24*time.Hour)))
}

// Remove deletes one of the organisation's volumes, really, on its
// node: its files are gone. A volume in use by a rental that is not
// stopped is refused; a stopped rental whose volume is deleted can no
// longer start.
func (s *Service) Remove(ctx context.Context, orgID, id int64, reason string) error {
	var wake int64
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		v, err := rentalstore.VolumeForUpdate(tx, id)
		if err != nil {
			return err
		}
		if v.OrgID != orgID || v.Status == models.VolumeDeleted {
			return apperr.NotFound("volume")
		}
		rid, err := rentalstore.VolumeRental(tx, v.ID)
		if err != nil {
			return err
		}
		if rid != 0 {
			r, err := rentalstore.ReadRental(tx, rid)
			if err != nil {
				return err
			}
			if r.Status != models.RentalStopped {
				return &apperr.Error{Code: apperr.ECONFLICT, Message: fmt.Sprintf("rental #%d uses this volume: stop or release it first", rid), Key: "err.volume_busy", Args: []any{rid}}
			}
		}
		wake, err = s.DeleteTx(tx, &v, rid, reason, s.DB.Now().UTC())
		return err
	})
	if wake != 0 {
		s.Hub.Signal(fleet.NodeKey(wake))
	}
	return err
}

// DeleteTx bills a volume up to now, marks it deleted and asks a
// node to remove its files (the node that holds them; on shared storage
// any healthy node of the datacentre). It returns the node to wake.
func (s *Service) DeleteTx(tx *gorm.DB, v *models.Volume, rentalID int64, reason string, now time.Time) (int64, error) {
	if v.Status == models.VolumeActive {
		if err := s.meterOne(tx, v, now); err != nil {
			return 0, err
		}
	}
	ok, err := rentalstore.MarkVolumeDeleted(tx, v.ID, reason, now)
	if err != nil || !ok {
		return 0, err
	}
	var node, prefer int64
	if v.NodeID != nil {
		node, prefer = *v.NodeID, *v.NodeID
	}
	if v.Shared() {
		if node, err = rentalstore.ActiveNodeOfDatacenter(tx, v.DatacenterID, prefer); err != nil {
			return 0, err
		}
	}
	if node == 0 {
		slog.Warn("volume deleted with no node to remove its files", "volume", v.ID)
		return 0, nil
	}
	var rid *int64
	if rentalID != 0 {
		rid = &rentalID
	}
	_, err = fleet.EnqueueTask(tx, node, rid, fmt.Sprintf("v%d/delete", v.ID),
		agent.Task{Kind: agent.TaskDeleteVolume, RentalID: rentalID, WorkspaceID: v.WorkspaceKey}, now)
	slog.Info("volume deleted", "volume", v.ID, "node", node, "reason", reason)
	return node, err
}

// storageAccrue is what a volume owes for [from, to): SizeGB × price per
// GB-month per StorageSecondsPerMonth, in whole fen and a carry in units
// of 1/StorageSecondsPerMonth fen.
func storageAccrue(v *models.Volume, from, to time.Time, carry int64) (fen, newCarry int64) {
	secs := int64(to.Sub(from) / time.Second)
	if secs <= 0 {
		return 0, carry
	}
	num := int64(v.SizeGB)*v.PricePerGBMonthFen*secs + carry
	return num / models.StorageSecondsPerMonth, num % models.StorageSecondsPerMonth
}

// FenPerDay is what a volume costs a day, rounded to the fen as quotes
// round it (pricing.StorageFen), so the rental page and the volume
// listing say the figure the rent form quoted.
func FenPerDay(v *models.Volume) int64 {
	return pricing.StorageFen(v.SizeGB, v.PricePerGBMonthFen, 86400)
}

// storageTxn is the ledger transaction of a storage charge. It is a
// charge like a rental's, so spending limits count it.
func storageTxn(v *models.Volume, now time.Time) *ledger.LedgerTxn {
	return &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: fmt.Sprintf("volume #%d storage", v.ID), MemoMsg: locales.M("memo.volume", v.ID),
		CreatedBy: &v.UserID, CreatedAt: now}
}

// meterOne bills one active volume up to now in tx, clipped to the
// wallet's balance (storage beyond it is the provider's loss, never a
// negative wallet).
func (s *Service) meterOne(tx *gorm.DB, v *models.Volume, now time.Time) error {
	if v.Status != models.VolumeActive || v.BilledUntil == nil {
		return nil
	}
	to := now.Truncate(time.Second)
	if !to.After(*v.BilledUntil) {
		return nil
	}
	fen, carry := storageAccrue(v, *v.BilledUntil, to, v.CarryNum)
	bal, err := ledger.OrgWalletBalance(tx, v.OrgID)
	if err != nil {
		return err
	}
	fen = min(fen, max(bal, 0))
	ok, err := rentalstore.ClaimVolumeInterval(tx, v.ID, *v.BilledUntil, to, fen, carry)
	if err != nil || !ok || fen == 0 {
		return err
	}
	before := v.BilledFen
	v.BilledUntil, v.CarryNum, v.BilledFen = &to, carry, v.BilledFen+fen
	return ledger.Post(tx, storageTxn(v, now), billing.ShareLegs(ledger.Leg{Kind: ledger.AccWallet, OrgID: v.OrgID, AmountFen: -fen}, v.ProviderID, before, fen)...)
}

// Meter bills every active volume up to now, a batch per
// transaction, and returns how many it billed and for how much.
func (s *Service) Meter(ctx context.Context) (n int, fen int64, err error) {
	now := s.DB.Now().UTC()
	var last int64
	for {
		var batch int
		err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			vs, err := rentalstore.ActiveVolumes(tx, last, meterBatch)
			if err != nil {
				return err
			}
			batch = len(vs)
			for i := range vs {
				v := &vs[i]
				last = v.ID
				before := v.BilledFen
				if err := s.meterOne(tx, v, now); err != nil {
					return err
				}
				if v.BilledFen != before {
					n++
					fen += v.BilledFen - before
				}
			}
			return nil
		})
		if err != nil || batch < meterBatch {
			return n, fen, err
		}
	}
}

// Expire mails the owners of stopped rentals' volumes 3 days and
// 1 day before deletion, and deletes those whose time has come. It
// returns how many it deleted.
func (s *Service) Expire(ctx context.Context) (int, error) {
	now := s.DB.Now().UTC()
	for _, days := range reminderDays {
		vs, err := rentalstore.VolumesToRemind(ctx, s.DB, now, days)
		if err != nil {
			return 0, err
		}
		for i := range vs {
			v := &vs[i]
			if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
				ok, err := rentalstore.MarkVolumeReminded(tx, v.ID, days)
				if err != nil || !ok {
					return err
				}
				u, err := models.UserByIDIn(tx, v.UserID)
				if err != nil {
					return err
				}
				return models.EnqueueMail(tx, deletionMail(u, v, s.BaseURL, now))
			}); err != nil {
				return 0, err
			}
		}
	}
	due, err := rentalstore.VolumesDueForDeletion(ctx, s.DB, now)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for i := range due {
		v := due[i]
		var wake int64
		err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			cur, err := rentalstore.VolumeForUpdate(tx, v.ID)
			if err != nil || cur.DeleteAfter == nil || cur.DeleteAfter.After(now) || cur.Status == models.VolumeDeleted {
				return err // started meanwhile, or already deleted
			}
			rid, err := rentalstore.VolumeRental(tx, cur.ID)
			if err != nil {
				return err
			}
			if wake, err = s.DeleteTx(tx, &cur, rid, fmt.Sprintf("not started within %d days of stopping", s.Days()), now); err != nil || rid == 0 {
				return err
			}
			// Without its volume the rental never starts again: its
			// registry credential, env and on-start script have no use.
			return rentalstore.ForgetLaunchSecrets(tx, rid)
		})
		if err != nil {
			return deleted, err
		}
		if wake != 0 {
			s.Hub.Signal(fleet.NodeKey(wake))
		}
		deleted++
	}
	return deleted, nil
}

// Live returns a volume that is not deleted (a deleted one is
// ENOTFOUND); the caller checks the member's right to it.
func (s *Service) Live(ctx context.Context, id int64) (*models.Volume, error) {
	v, err := rentalstore.VolumeByID(ctx, s.DB, id)
	if err != nil {
		return nil, err
	}
	if v.Status == models.VolumeDeleted {
		return nil, apperr.NotFound("volume")
	}
	return v, nil
}

// Attachments returns, for the volumes, the rental each is attached to
// (absent: none).
func (s *Service) Attachments(ctx context.Context, vs []models.Volume) (map[int64]int64, error) {
	ids := make([]int64, len(vs))
	for i := range vs {
		ids[i] = vs[i].ID
	}
	return rentalstore.AttachedRentals(ctx, s.DB, ids)
}
