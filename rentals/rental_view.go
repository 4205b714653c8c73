package rentals

import (
	"context"
	"fmt"
	"time"

	"suanli/agent"
	"suanli/images"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// RentalDetail is everything the renter's pages and the API show about a
// rental.
type RentalDetail struct {
	Rental models.Rental
	Offer  models.OfferRow
	Node   *models.Node
	GPUs   []models.GPU
	Access *agent.Access
	Checks *Checks
	Events []models.RentalEvent
	// Volume is the rental's volume (nil for rentals from before volumes);
	// VolumeNode names the node that holds it ("" if none).
	Volume     *models.Volume
	VolumeNode string
	// LeftVolume is the local volume the rental left on another node when
	// it moved without its files (nil when none is left, or it was
	// deleted or mounted again); LeftNode names its node, and LeftNodeUp
	// says whether that node is back (the rental can start there with it).
	LeftVolume *models.Volume
	LeftNode   string
	LeftNodeUp bool
	// RegistryUser is the username of the registry credential its custom
	// image is pulled with ("" when none): all that is shown of it.
	RegistryUser string
	// Progress is what the node said of the launch under way (an image
	// pull), nil when nothing was said.
	Progress *agent.Progress
	// CostFen is what the rental has cost up to now: what was posted plus
	// what accrued since the last meter pass (posted at the next one).
	CostFen int64
	// RateFenPerHour is what an hour costs now (0 when not billing).
	RateFenPerHour int64
	At             time.Time
}

// RegistryAuth is what is shown of the rental's registry credential (nil
// when it has none).
func (d *RentalDetail) RegistryAuth() *images.RegistryAuthShown {
	if d.RegistryUser == "" {
		return nil
	}
	return &images.RegistryAuthShown{Username: d.RegistryUser, Set: true}
}

// Startable reports whether the rental can start again (see
// models.Rental.Startable).
func (d *RentalDetail) Startable() bool { return d.Rental.Startable(d.Volume) }

// StartableOnLeft reports whether the rental can start now on the node
// its left volume is on, with that volume (Start with its VolumeID).
func (d *RentalDetail) StartableOnLeft() bool {
	return d.LeftVolume != nil && d.LeftNodeUp && d.Rental.Startable(d.LeftVolume)
}

// PublicStatus is the status renters see: a released rental says so.
func (d *RentalDetail) PublicStatus() string {
	if d.Rental.Released() && d.Rental.Status == models.RentalStopped {
		return "released"
	}
	return string(d.Rental.Status)
}

// Simulated reports whether the rental runs on a simulated node.
func (d *RentalDetail) Simulated() bool {
	return (d.Node != nil && d.Node.Simulated) || (d.Access != nil && d.Access.Simulated)
}

// Billing reports whether the rental accrues cost per second now.
func (d *RentalDetail) Billing() bool {
	r := &d.Rental
	return r.Status == models.RentalRunning && r.Term == pricing.OnDemand && !r.Free
}

// Detail loads a rental's detail.
func (s *Service) Detail(ctx context.Context, id int64) (*RentalDetail, error) {
	r, err := s.DB.RentalByID(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &RentalDetail{Rental: r, Access: Access(&r), Checks: RentalChecks(&r), At: s.DB.Now().UTC()}
	if d.Offer, err = s.DB.OfferByID(ctx, r.OfferID); err != nil {
		return nil, err
	}
	if r.NodeID != nil {
		if d.Node, err = rentalstore.NodeByID(ctx, s.DB, *r.NodeID); err != nil {
			return nil, err
		}
	}
	if d.GPUs, err = s.DB.RentalGPUs(ctx, r.ID); err != nil {
		return nil, err
	}
	if d.Events, err = s.DB.RentalEvents(ctx, r.ID); err != nil {
		return nil, err
	}
	if d.Volume, err = s.RentalVolume(ctx, &r); err != nil {
		return nil, err
	}
	if d.RegistryUser, err = rentalstore.RegistryUsername(ctx, s.DB, r.ID); err != nil {
		return nil, err
	}
	if v := d.Volume; v != nil && v.NodeID != nil {
		d.VolumeNode = fmt.Sprintf("#%d", *v.NodeID)
		if d.Node != nil && d.Node.ID == *v.NodeID {
			d.VolumeNode = d.Node.Name
		} else if n, err := rentalstore.NodeByID(ctx, s.DB, *v.NodeID); err == nil {
			d.VolumeNode = n.Name
		}
	}
	if d.LeftVolume, err = rentalstore.LeftVolume(ctx, s.DB, r.ID); err != nil {
		return nil, err
	}
	if v := d.LeftVolume; v != nil && v.NodeID != nil {
		d.LeftNode = fmt.Sprintf("#%d", *v.NodeID)
		if n, err := rentalstore.NodeByID(ctx, s.DB, *v.NodeID); err == nil {
			d.LeftNode = n.Name
		}
		if d.LeftNodeUp, err = rentalstore.NodeUp(s.DB.R.WithContext(ctx), *v.NodeID); err != nil {
			return nil, err
		}
	}
	if r.Status == models.RentalProvisioning || r.Status == models.RentalMigrating {
		if d.Progress, err = s.LaunchProgress(ctx, r.ID); err != nil {
			return nil, err
		}
	}
	d.CostFen = r.BilledFen
	if d.Billing() && r.BilledUntil != nil {
		fen, _ := pricing.Accrue(r.Rate(), *r.BilledUntil, d.At, r.CarryNum)
		d.CostFen += fen
		d.RateFenPerHour = pricing.HourFen(r.Rate(), d.At)
	}
	return d, nil
}
