package launch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/bids"
	"suanli/catalog"
	"suanli/models"
	"suanli/models/launchstore"
	"suanli/offers"
	"suanli/rentals"
	"suanli/secrets"
)

// Renter rents one offer: idlestop.Service (the lab's idle-stop policy,
// then rentals.Service.Rent) in the server, anything alike in tests.
type Renter interface {
	Rent(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, in rentals.RentInput) (*models.Rental, error)
}

// Service launches rentals with their spec, by offer or by instance type.
type Service struct {
	DB     *models.DB
	Index  *offers.Index
	Renter Renter
	// Box seals the environment and on-start script (the platform key's
	// box that seals registry passwords, bound to the rental and to the
	// part); nil where the platform keeps no secrets, and then a spec
	// with either is refused.
	Box *secrets.Box
}

// Target is a launch by instance type: the cheapest listed offer of the
// type, in Region or City when given, on no node of ExcludeNodes (a
// launcher's failover after a bad node: the rental is never placed on
// one, neither by this launch nor by a later retry, move or start), at
// most MaxPriceFen per GPU-hour (the price the renter pays) when set,
// whose disk takes a new volume of VolumeGB (0: the default size, which
// every offer takes), that takes the rent.
type Target struct {
	Type         InstanceType
	Region, City string
	ExcludeNodes []int64
	MaxPriceFen  *int64
	VolumeGB     int
}

// maxTries bounds the offers one launch tries: the index lists offers
// with the GPUs free, so a refusal is a race or a stale snapshot, and a
// market where ten in a row were just taken is full.
const maxTries = 10

// Check validates the target's filters (the type is parsed already): an
// EINVALID error naming the bad one.
func (t Target) Check() error {
	if t.Region != "" {
		if _, ok := catalog.RegionBySlug(t.Region); !ok {
			return apperr.Invalid("region", "unknown region "+strconv.Quote(clip(t.Region)))
		}
	}
	if t.City != "" {
		if _, ok := catalog.CityBySlug(t.City); !ok {
			return apperr.Invalid("city", "unknown city "+strconv.Quote(clip(t.City)))
		}
	}
	if len(t.ExcludeNodes) > 100 {
		return apperr.Invalid("exclude_nodes", "at most 100 nodes")
	}
	if slices.ContainsFunc(t.ExcludeNodes, func(n int64) bool { return n < 1 }) {
		return apperr.Invalid("exclude_nodes", "exclude_nodes lists node ids (node.id of a rental), each at least 1")
	}
	if t.VolumeGB > offers.MaxVolumeGB {
		return apperr.Invalid("volume_gb", fmt.Sprintf("no offer takes a volume over %d GB", offers.MaxVolumeGB))
	}
	if t.MaxPriceFen != nil && *t.MaxPriceFen < 1 {
		return apperr.Invalid("max_price_fen", "max_price_fen is a price per GPU-hour in fen, at least 1")
	}
	return nil
}

// Candidates are the offers a launch of t tries, cheapest first at the
// price the renter pays (student: a verified lab member's price): listed
// offers of the model with the GPUs free, in the region and city, on no
// excluded node, under the price cap, whose disk takes the volume; with
// a bid, only offers that take bids.
func (s *Service) Candidates(t Target, student, bid bool) []*offers.Listed {
	_, list := s.Index.ByPrice(student)
	var out []*offers.Listed
	for _, o := range list {
		switch {
		case o.GPUModel() != t.Type.GPU || o.MaxGPUs() < t.Type.GPUs || o.AvailableGPUs() < t.Type.GPUs:
		case t.Region != "" && (o.Datacenter == nil || o.Datacenter.Region != t.Region):
		case t.City != "" && (o.Datacenter == nil || o.Datacenter.City != t.City):
		case slices.Contains(t.ExcludeNodes, o.NodeID):
		case t.MaxPriceFen != nil && o.PriceFen(student) > *t.MaxPriceFen:
		case t.VolumeGB > 0 && o.MaxVolumeGB() < t.VolumeGB:
		case bid && o.Interruptible == nil:
		default:
			out = append(out, o)
		}
	}
	return out
}

// Launch rents with the spec: the offer in.OfferID when target is nil,
// else the first candidate of target that takes the rent (in.GPUs is the
// type's, and target's VolumeGB the new volume's size), trying the next
// when one was taken meanwhile. The spec, and the target's excluded
// nodes, are checked first and stored in the rent's own transaction (the
// spec's secrets sealed).
//
// Errors: the spec's EINVALID; EOFFERTAKEN for a named offer whose GPUs
// were taken; ENOCAPACITY when no candidate took it (a refusal particular
// to every offer tried — an image none of them can run, say — is returned
// instead), on the field volume_gb when offers had the GPUs free but no
// disk that takes the volume; anything the rent refuses for the renter's
// own reasons (EINSUFFICIENTFUNDS, EFORBIDDEN, …) at once.
func (s *Service) Launch(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, in rentals.RentInput, spec Spec, target *Target) (*models.Rental, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if !spec.Secrets().Empty() && s.Box == nil {
		field := "env"
		if len(spec.Env) == 0 {
			field = "onstart"
		}
		return nil, apperr.Invalid(field, "this server keeps no secrets (no platform key is configured): launch without env and onstart")
	}
	var exclude []int64
	if target != nil {
		t := *target
		if in.VolumeID == 0 {
			t.VolumeGB = in.VolumeGB
		}
		if err := t.Check(); err != nil {
			return nil, err
		}
		target, exclude = &t, t.ExcludeNodes
	}
	if !spec.Empty() || len(exclude) > 0 {
		also := in.Also
		in.Also = func(tx *gorm.DB, r *models.Rental) error {
			if also != nil {
				if err := also(tx, r); err != nil {
					return err
				}
			}
			if err := launchstore.SaveExcludedNodes(tx, r.ID, exclude); err != nil {
				return err
			}
			return launchstore.Save(tx, s.Box, r.ID, spec.Name, spec.Labels, spec.Secrets(), r.CreatedAt)
		}
	}
	if target == nil {
		return s.Renter.Rent(ctx, u, org, m, in)
	}
	in.GPUs = target.Type.GPUs
	student := offers.StudentPrices(org, m)
	cands := s.Candidates(*target, student, in.Bid != nil)
	if len(cands) == 0 && target.VolumeGB > 0 {
		anyDisk := *target
		anyDisk.VolumeGB = 0
		if err := noDisk(s.Candidates(anyDisk, student, in.Bid != nil), *target); err != nil {
			return nil, err
		}
	}
	var particular error
	gone := 0
	for i, o := range cands {
		if i == maxTries {
			break
		}
		in.OfferID = o.ID
		r, err := s.Renter.Rent(ctx, u, org, m, in)
		switch {
		case err == nil:
			return r, nil
		case offerGone(err):
			gone++
		case offerParticular(err):
			if particular == nil {
				particular = err
			}
		default:
			return nil, err
		}
	}
	if particular != nil && gone == 0 {
		return nil, particular
	}
	return nil, noCapacity(*target)
}

// offerGone reports whether a rent was refused because the offer's GPUs
// went meanwhile (taken, outbid) or the offer did: the next may take it.
func offerGone(err error) bool {
	ae, ok := apperr.As(err)
	if !ok {
		return false
	}
	return ae.Code == apperr.EOFFERTAKEN || errors.Is(err, bids.ErrOutbid) ||
		slices.Contains([]string{"err.offer_not_listed", "providers.err.node_not_renting"}, ae.Key)
}

// offerParticular reports whether a rent was refused for something of
// that offer that another may not share: the image it cannot run, the
// SLA tier or term it does not sell, the bid it does not take, the
// volume's datacentre.
func offerParticular(err error) bool {
	ae, ok := apperr.As(err)
	if !ok {
		return false
	}
	return ae.Code == apperr.EIMAGEINCOMPATIBLE ||
		ae.Code == apperr.EINVALID && slices.Contains([]string{"image", "sla", "term", "gpus", bids.Field}, ae.Field) ||
		slices.Contains([]string{"err.volume_datacenter", "err.volume_node"}, ae.Key)
}

// noDisk is the ENOCAPACITY error on volume_gb of a launch of t none of
// whose candidates takes its volume, given free, the candidates it would
// have had with any disk: they have the GPUs free but too small a disk.
// nil when free is empty (the market has no capacity at all).
func noDisk(free []*offers.Listed, t Target) error {
	if len(free) == 0 {
		return nil
	}
	most := 0
	for _, o := range free {
		most = max(most, o.MaxVolumeGB())
	}
	return &apperr.Error{Code: apperr.ENOCAPACITY, Field: "volume_gb",
		Message: fmt.Sprintf("no offer of %s with %d GPUs free takes a volume of %d GB: the largest takes %d GB; ask for less, or try another region or instance type",
			t.Type, t.Type.GPUs, t.VolumeGB, most)}
}

// noCapacity is the ENOCAPACITY error of a launch of t.
func noCapacity(t Target) error {
	where := ""
	switch {
	case t.City != "":
		where = " in " + t.City
	case t.Region != "":
		where = " in region " + t.Region
	}
	return &apperr.Error{Code: apperr.ENOCAPACITY, Field: "instance_type",
		Message: fmt.Sprintf("no offer of %s%s has %d GPUs free now; try another region or instance type, or later", t.Type, where, t.Type.GPUs)}
}
