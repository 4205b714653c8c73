package rentals

import (
	"cmp"
	"context"
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
)

// Volume sizes, in GB. A rental that names no volume gets a new one of
// DefaultVolumeGB (or the offer's disk, if smaller).
const (
	DefaultVolumeGB = 50
	MaxVolumeGB     = 10000
)

// DefaultVolumeKeepDays is how long a stopped rental's volume is kept
// without a start before it is deleted, unless the platform sets another.
const DefaultVolumeKeepDays = 7

// volumeReminderDays are the days before deletion on which the owner of
// a stopped rental's volume is mailed.
var volumeReminderDays = []int{3, 1}

func (s *Service) keepDays() int { return cmp.Or(s.VolumeKeepDays, DefaultVolumeKeepDays) }

// VolumeInput is a volume made ahead of a rental.
type VolumeInput struct {
	OrgID   int64
	OfferID int64
	SizeGB  int
	Name    string
}

// volumeSize checks a requested size against the offer's disk.
func volumeSize(gb int, o *models.Offer) (int, error) {
	most := MaxVolumeGB
	if o.DiskGB > 0 {
		most = min(most, o.DiskGB)
	}
	if gb == 0 {
		return min(DefaultVolumeGB, most), nil
	}
	if gb < 1 || gb > most {
		return 0, apperr.Field("volume_gb", "err.volume_size", most)
	}
	return gb, nil
}

// newVolume is a volume of the offer's datacentre at its storage price,
// not yet saved; pending (unbilled) until activated.
func newVolume(tx *gorm.DB, o *models.Offer, orgID, userID int64, sizeGB int, name, key string, now time.Time) (*models.Volume, error) {
	price, storage, err := rentalstore.OfferStorage(tx, o.ID)
	if err != nil {
		return nil, err
	}
	node := o.NodeID
	return &models.Volume{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, DatacenterID: o.DatacenterID,
		NodeID: &node, Storage: cmp.Or(storage, models.StorageLocal), Name: name, WorkspaceKey: key, SizeGB: sizeGB,
		PricePerGBMonthFen: price, Status: models.VolumePending, CreatedAt: now}, nil
}

// CreateVolume makes a volume ahead of a rental, in the offer's
// datacentre (on local storage: on the offer's node), billed from now.
func (s *Service) CreateVolume(ctx context.Context, u *models.User, org *models.Org, in VolumeInput) (*models.Volume, error) {
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
	size, err := volumeSize(in.SizeGB, &o)
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
		if v, err = newVolume(tx, &o, org.ID, u.ID, size, in.Name, newWorkspaceID(), now); err != nil {
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

// attachVolume gives a new rental its volume in tx: an existing one of
// the organisation (volumeID), which must be free and in the offer's
// datacentre (on local storage, on the offer's node), or a new pending
// one of sizeGB.
func attachVolume(tx *gorm.DB, r *models.Rental, o *models.Offer, volumeID int64, sizeGB int, now time.Time) (*models.Volume, error) {
	if volumeID == 0 {
		size, err := volumeSize(sizeGB, o)
		if err != nil {
			return nil, err
		}
		v, err := newVolume(tx, o, r.OrgID, r.UserID, size, "", r.WorkspaceID, now)
		if err != nil {
			return nil, err
		}
		if err := rentalstore.InsertVolume(tx, v); err != nil {
			return nil, err
		}
		return v, rentalstore.SetRentalVolume(tx, r.ID, v.ID)
	}
	v, err := rentalstore.VolumeForUpdate(tx, volumeID)
	if err != nil || v.OrgID != r.OrgID || v.Status != models.VolumeActive {
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return nil, err
		}
		return nil, apperr.Field("volume_id", "err.volume_unknown")
	}
	if v.DatacenterID != o.DatacenterID {
		return nil, apperr.Field("volume_id", "err.volume_datacenter")
	}
	if !v.Shared() && v.NodeID != nil && *v.NodeID != o.NodeID {
		return nil, apperr.Field("volume_id", "err.volume_node", *v.NodeID)
	}
	if other, err := rentalstore.VolumeRental(tx, v.ID); err != nil || other != 0 {
		if err != nil {
			return nil, err
		}
		return nil, apperr.Field("volume_id", "err.volume_in_use", other)
	}
	if err := rentalstore.SetVolumeDeleteAfter(tx, v.ID, nil); err != nil {
		return nil, err
	}
	if err := rentalstore.SetRentalVolume(tx, r.ID, v.ID); err != nil {
		if ledger.IsUniqueViolation(err) {
			return nil, apperr.Field("volume_id", "err.volume_in_use", 0)
		}
		return nil, err
	}
	return &v, nil
}

// rentalVolume reads the rental's volume in tx (nil without one).
func rentalVolume(tx *gorm.DB, r *models.Rental) (*models.Volume, error) {
	if r.VolumeID == nil {
		return nil, nil
	}
	v, err := rentalstore.ReadVolume(tx, *r.VolumeID)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// RentalVolume returns the rental's volume (nil without one).
func (s *Service) RentalVolume(ctx context.Context, r *models.Rental) (*models.Volume, error) {
	if r.VolumeID == nil {
		return nil, nil
	}
	return rentalstore.VolumeByID(ctx, s.DB, *r.VolumeID)
}

// Volumes lists an organisation's volumes.
func (s *Service) Volumes(ctx context.Context, orgID int64) ([]models.Volume, error) {
	return rentalstore.OrgVolumes(ctx, s.DB, orgID)
}

// Volume returns one of the organisation's volumes; another
// organisation's is ENOTFOUND.
func (s *Service) Volume(ctx context.Context, orgID, id int64) (*models.Volume, error) {
	v, err := rentalstore.VolumeByID(ctx, s.DB, id)
	if err != nil {
		return nil, err
	}
	if v.OrgID != orgID || v.Status == models.VolumeDeleted {
		return nil, apperr.NotFound("volume")
	}
	return v, nil
}

// keepVolume starts the countdown to deleting a stopped rental's volume
// in tx (nothing for a released rental or one without a volume).
func (s *Service) keepVolume(tx *gorm.DB, r *models.Rental, now time.Time) error {
	if r.VolumeID == nil || r.ReleasedAt != nil {
		return nil
	}
	return rentalstore.SetVolumeDeleteAfter(tx, *r.VolumeID, new(now.Add(time.Duration(s.keepDays())*24*time.Hour)))
}

// DeleteVolume deletes one of the organisation's volumes, really, on its
// node: its files are gone. A volume in use by a rental that is not
// stopped is refused; a stopped rental whose volume is deleted can no
// longer start.
func (s *Service) DeleteVolume(ctx context.Context, orgID, id int64, reason string) error {
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
		wake, err = s.deleteVolumeTx(tx, &v, rid, reason, s.DB.Now().UTC())
		return err
	})
	if wake != 0 {
		s.Hub.Signal(fleet.NodeKey(wake))
	}
	return err
}

// deleteVolumeTx bills a volume up to now, marks it deleted and asks a
// node to remove its files (the node that holds them; on shared storage
// any healthy node of the datacentre). It returns the node to wake.
func (s *Service) deleteVolumeTx(tx *gorm.DB, v *models.Volume, rentalID int64, reason string, now time.Time) (int64, error) {
	if v.Status == models.VolumeActive {
		if err := s.meterVolume(tx, v, now); err != nil {
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

// StorageFenPerDay is what a volume costs a day (rounded up).
func StorageFenPerDay(v *models.Volume) int64 {
	num := int64(v.SizeGB) * v.PricePerGBMonthFen * 86400
	return (num + models.StorageSecondsPerMonth - 1) / models.StorageSecondsPerMonth
}

// storageTxn is the ledger transaction of a storage charge. It is a
// charge like a rental's, so spending limits count it.
func storageTxn(v *models.Volume, now time.Time) *ledger.LedgerTxn {
	return &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: fmt.Sprintf("volume #%d storage", v.ID), MemoMsg: locales.M("memo.volume", v.ID),
		CreatedBy: &v.UserID, CreatedAt: now}
}

// meterVolume bills one active volume up to now in tx, clipped to the
// wallet's balance (storage beyond it is the provider's loss, never a
// negative wallet).
func (s *Service) meterVolume(tx *gorm.DB, v *models.Volume, now time.Time) error {
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
	return ledger.Post(tx, storageTxn(v, now), shareLegs(ledger.Leg{Kind: ledger.AccWallet, OrgID: v.OrgID, AmountFen: -fen}, v.ProviderID, before, fen)...)
}

// MeterVolumes bills every active volume up to now, a batch per
// transaction, and returns how many it billed and for how much.
func (s *Service) MeterVolumes(ctx context.Context) (n int, fen int64, err error) {
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
				if err := s.meterVolume(tx, v, now); err != nil {
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

// ExpireVolumes mails the owners of stopped rentals' volumes 3 days and
// 1 day before deletion, and deletes those whose time has come. It
// returns how many it deleted.
func (s *Service) ExpireVolumes(ctx context.Context) (int, error) {
	now := s.DB.Now().UTC()
	for _, days := range volumeReminderDays {
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
				return models.EnqueueMail(tx, volumeDeletionMail(u, v, s.BaseURL, now))
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
			wake, err = s.deleteVolumeTx(tx, &cur, rid, fmt.Sprintf("not started within %d days of stopping", s.keepDays()), now)
			return err
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

// LiveVolume returns a volume that is not deleted (a deleted one is
// ENOTFOUND); the caller checks the member's right to it.
func (s *Service) LiveVolume(ctx context.Context, id int64) (*models.Volume, error) {
	v, err := rentalstore.VolumeByID(ctx, s.DB, id)
	if err != nil {
		return nil, err
	}
	if v.Status == models.VolumeDeleted {
		return nil, apperr.NotFound("volume")
	}
	return v, nil
}

// VolumeRentals returns, for the volumes, the rental each is attached to
// (absent: none).
func (s *Service) VolumeRentals(ctx context.Context, vs []models.Volume) (map[int64]int64, error) {
	ids := make([]int64, len(vs))
	for i := range vs {
		ids[i] = vs[i].ID
	}
	return rentalstore.AttachedRentals(ctx, s.DB, ids)
}
