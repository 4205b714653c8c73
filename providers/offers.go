package providers

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/fleet"
	"suanli/models"
	"suanli/models/supply"
	"suanli/pricing"
)

// OfferInput is the offer form. Zero VCPUPerGPU, RAMGBPerGPU, DiskGB,
// MinDurationS, an empty Interconnect, no SLATiers and nil storage and
// no-GPU prices take defaults (8 vCPU, 64 GB, 500 GB, 60 s, NVLink for
// SXM parts else PCIe, every tier, models.DefaultStoragePricePerGBMonthFen
// and models.DefaultNoGPUPricePerHourFen). Images are catalogue slugs;
// none means every catalogue image (models.ImagesOfOffer).
type OfferInput struct {
	NodeID                                               int64
	GPU                                                  string
	MaxGPUs, VCPUPerGPU, RAMGBPerGPU, DiskGB             int
	Interconnect                                         string
	PricePerGPUHourFen                                   int64
	WeeklyPricePerGPUFen, MonthlyPricePerGPUFen          *int64
	OffpeakDiscountPct, StudentDiscountPct, MinDurationS int
	SLATiers                                             []string
	Paused                                               bool
	CustomImages                                         bool
	StoragePricePerGBMonthFen, NoGPUPricePerHourFen      *int64
	Images                                               []string
	// InterruptibleFloorPerGPUHourFen opts the offer into interruptible
	// rentals (竞价实例) with this lowest bid per GPU-hour, at most the
	// on-demand price; nil: not interruptible.
	InterruptibleFloorPerGPUHourFen *int64
}

// OfferPatch is a partial change of an offer; nil fields stay as they are.
// For the weekly and monthly prices a non-nil pointer to nil clears it.
// Status is "listed" or "paused".
type OfferPatch struct {
	MaxGPUs, VCPUPerGPU, RAMGBPerGPU, DiskGB             *int
	PricePerGPUHourFen                                   *int64
	WeeklyPricePerGPUFen, MonthlyPricePerGPUFen          **int64
	OffpeakDiscountPct, StudentDiscountPct, MinDurationS *int
	SLATiers                                             *[]string
	Status                                               *string
	CustomImages                                         *bool
	StoragePricePerGBMonthFen, NoGPUPricePerHourFen      *int64
	// Images replaces the offer's catalogue images; an empty list means
	// every catalogue image.
	Images *[]string
	// InterruptibleFloorPerGPUHourFen, when non-nil, sets the floor of
	// interruptible rentals (a pointer to nil: the offer takes no bids
	// any more). Bids already placed keep running at their bid.
	InterruptibleFloorPerGPUHourFen **int64
}

// FloorField is the API's name of an offer's interruptible floor.
const FloorField = "interruptible_floor_per_gpu_hour_fen"

// Offer limits.
const (
	MaxOfferGPUs = fleet.MaxNodeGPUs
	// MaxPricePerGPUHourFen is ¥10,000 per GPU-hour: anything above is a typo.
	MaxPricePerGPUHourFen = 1_000_000
	MaxDiscountPct        = 90
	MaxMinDurationS       = 30 * 24 * 3600
	// MaxStoragePricePerGBMonthFen is ¥10 per GB-month (cloud block
	// storage costs about a tenth of that): anything above is a typo.
	MaxStoragePricePerGBMonthFen = 1_000
	// MaxNoGPUPricePerHourFen is ¥100 an hour for a container without
	// GPUs, which needs no more than a few vCPUs.
	MaxNoGPUPricePerHourFen = 10_000
)

// checkOffer validates an offer against the node; gpuCount is the node's
// reported GPU count (0: not reported yet).
func checkOffer(in OfferInput, n *models.Node, gpuCount int) (OfferInput, error) {
	var errs apperr.Fields
	m, ok := catalog.GPUModelBySlug(strings.TrimSpace(in.GPU))
	if strings.TrimSpace(in.GPU) == "" {
		errs = append(errs, apperr.Field("gpu", "providers.err.required"))
	} else if !ok {
		errs = append(errs, apperr.Field("gpu", "providers.err.gpu_unknown", in.GPU))
	} else {
		in.GPU = m.Slug
	}
	limit := MaxOfferGPUs
	if gpuCount > 0 && gpuCount < limit {
		limit = gpuCount
	}
	if in.MaxGPUs < 1 || in.MaxGPUs > limit {
		errs = append(errs, apperr.Field("gpus", "providers.err.max_gpus", limit))
	}
	defInt := func(field string, v *int, def, lo, hi int) {
		if *v == 0 {
			*v = def
		}
		if *v < lo || *v > hi {
			errs = append(errs, apperr.Field(field, "providers.err.range", lo, hi))
		}
	}
	defInt("vcpu_per_gpu", &in.VCPUPerGPU, 8, 1, 256)
	defInt("ram_gb_per_gpu", &in.RAMGBPerGPU, 64, 1, 4096)
	defInt("disk_gb", &in.DiskGB, 500, 10, 1_000_000)
	defInt("min_duration_s", &in.MinDurationS, pricing.MinimumSeconds, pricing.MinimumSeconds, MaxMinDurationS)
	in.Interconnect = strings.TrimSpace(in.Interconnect)
	if in.Interconnect == "" {
		in.Interconnect = catalog.InterconnectPCIe
		if ok && strings.HasPrefix(m.FormFactor, "SXM") {
			in.Interconnect = catalog.InterconnectNVLink
		}
	} else if !slices.Contains([]string{catalog.InterconnectPCIe, catalog.InterconnectNVLink, catalog.InterconnectNVLinkIB}, in.Interconnect) {
		errs = append(errs, apperr.Field("interconnect", "providers.err.interconnect"))
	}
	h := in.PricePerGPUHourFen
	if h < 1 || h > MaxPricePerGPUHourFen {
		errs = append(errs, apperr.Field("price_per_gpu_hour_fen", "providers.err.price", pricing.FenToYuanString(MaxPricePerGPUHourFen)))
		h = 0
	}
	// A term price must be cheaper than paying by the hour for the term.
	if w := in.WeeklyPricePerGPUFen; w != nil && (*w < 1 || (h > 0 && *w >= 7*24*h)) {
		errs = append(errs, apperr.Field("weekly_price_per_gpu_fen", "providers.err.weekly_price", pricing.FenToYuanString(7*24*h)))
	}
	if mo := in.MonthlyPricePerGPUFen; mo != nil && (*mo < 1 || (h > 0 && *mo >= 30*24*h)) {
		errs = append(errs, apperr.Field("monthly_price_per_gpu_fen", "providers.err.monthly_price", pricing.FenToYuanString(30*24*h)))
	}
	// A floor above the on-demand price would take no bid: an on-demand
	// rent costs that and is never interrupted (bids.Check).
	if f := in.InterruptibleFloorPerGPUHourFen; f != nil && (*f < 1 || (h > 0 && *f > h)) {
		errs = append(errs, apperr.Field(FloorField, "providers.err.interruptible_floor", pricing.FenToYuanString(max(h, 1))))
	}
	if in.OffpeakDiscountPct < 0 || in.OffpeakDiscountPct > MaxDiscountPct {
		errs = append(errs, apperr.Field("offpeak_discount_pct", "providers.err.range", 0, MaxDiscountPct))
	}
	if in.StudentDiscountPct < 0 || in.StudentDiscountPct > MaxDiscountPct {
		errs = append(errs, apperr.Field("student_discount_pct", "providers.err.range", 0, MaxDiscountPct))
	}
	tiers, err := checkTiers(in.SLATiers)
	if err != nil {
		errs = append(errs, err)
	}
	in.SLATiers = tiers
	defFen := func(field string, v **int64, def, hi int64, key string) {
		if *v == nil {
			d := def
			*v = &d
		}
		if **v < 0 || **v > hi {
			errs = append(errs, apperr.Field(field, key, pricing.FenToYuanString(hi)))
		}
	}
	defFen("storage_price_per_gb_month_fen", &in.StoragePricePerGBMonthFen, models.DefaultStoragePricePerGBMonthFen,
		MaxStoragePricePerGBMonthFen, "providers.err.storage_price")
	defFen("no_gpu_price_per_hour_fen", &in.NoGPUPricePerHourFen, models.DefaultNoGPUPricePerHourFen,
		MaxNoGPUPricePerHourFen, "providers.err.no_gpu_price")
	if n != nil && n.Status == models.NodeRemoved {
		errs = append(errs, apperr.Field("node_id", "providers.err.node_removed", n.Name))
	}
	return in, errs.OrNil()
}

// checkTiers validates the SLA tiers sold and returns them in the order of
// pricing.Tiers; none means every tier.
func checkTiers(in []string) ([]string, *apperr.Error) {
	want := map[string]bool{}
	for _, t := range in {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if _, ok := pricing.TierByName(t); !ok {
			names := make([]string, len(pricing.Tiers))
			for i, t := range pricing.Tiers {
				names[i] = t.Name
			}
			return nil, apperr.Field("sla_tiers", "providers.err.sla_tier", t, strings.Join(names, ", "))
		}
		want[t] = true
	}
	var out []string
	for _, t := range pricing.Tiers {
		if len(want) == 0 || want[t.Name] {
			out = append(out, t.Name)
		}
	}
	return out, nil
}

// checkImages validates the catalogue slugs an offer offers and returns
// their ids and slugs in catalogue order (none: every catalogue image);
// problem names the first slug the catalogue does not have.
func checkImages(tx *gorm.DB, slugs []string) (ids []int64, clean []string, problem *apperr.Error, err error) {
	want := map[string]bool{}
	for _, sl := range slugs {
		if sl = strings.TrimSpace(sl); sl != "" {
			want[sl] = true
		}
	}
	if len(want) == 0 {
		return nil, nil, nil, nil
	}
	all, err := models.CatalogueImages(tx)
	if err != nil {
		return nil, nil, nil, err
	}
	known := make([]string, len(all))
	for i, im := range all {
		known[i] = im.Slug
		if want[im.Slug] {
			ids, clean = append(ids, im.ID), append(clean, im.Slug)
			delete(want, im.Slug)
		}
	}
	for _, sl := range slugs {
		if sl = strings.TrimSpace(sl); want[sl] {
			return nil, nil, apperr.Field("images", "providers.err.image_unknown", sl, strings.Join(known, ", ")), nil
		}
	}
	return ids, clean, nil, nil
}

// withImages fills in the offers' Images from offer_images, in tx.
func withImages(tx *gorm.DB, offers ...*models.Offer) error {
	ids := make([]int64, len(offers))
	for i, o := range offers {
		ids[i] = o.ID
	}
	slugs, err := models.OfferImageSlugs(tx, ids)
	if err != nil {
		return err
	}
	for _, o := range offers {
		o.Images = slugs[o.ID]
	}
	return nil
}

// ptrsOf points at each offer of os.
func ptrsOf(os []models.Offer) []*models.Offer {
	out := make([]*models.Offer, len(os))
	for i := range os {
		out[i] = &os[i]
	}
	return out
}

// CreateOffer adds an offer on one of the provider's nodes (owners and
// admins). An offer for another model than the node's agent reports is
// refused; on a node that has not reported yet it is kept waiting, and
// the heartbeat that shows matching healthy GPUs lists it. Nothing shows
// in the public list before the provider is approved.
func (p *Service) CreateOffer(ctx context.Context, u *models.User, providerID int64, in OfferInput) (*models.Offer, error) {
	acc, err := p.access(ctx, u, providerID, true)
	if err != nil {
		return nil, err
	}
	now := p.DB.Now().UTC()
	var o *models.Offer
	err = p.DB.Tx(ctx, func(tx *gorm.DB) error {
		var n *models.Node
		var inv fleet.NodeInventory
		imageIDs, imageSlugs, imageProblem, err := checkImages(tx, in.Images)
		if err != nil {
			return err
		}
		// invalid adds the images' problem, if any, to the form's.
		invalid := func(err error) error {
			if imageProblem != nil {
				return withField(err, imageProblem)
			}
			return err
		}
		if in.NodeID == 0 {
			_, err := checkOffer(in, nil, 0)
			return invalid(withField(err, apperr.Field("node_id", "providers.err.required")))
		}
		n, err = supply.NodeOf(tx, acc.Provider.ID, in.NodeID)
		if apperr.Code(err) == apperr.ENOTFOUND {
			_, err := checkOffer(in, nil, 0)
			return invalid(withField(err, apperr.Field("node_id", "providers.err.node")))
		}
		if err != nil {
			return err
		}
		if inv, err = fleet.InventoryOf(tx, n); err != nil {
			return err
		}
		in, err := checkOffer(in, n, inv.GPUs)
		if err != nil || imageProblem != nil {
			return invalid(err)
		}
		// The model must be what NVML reports on the node.
		if inv.GPUs > 0 && n.GPUModel != in.GPU {
			if n.GPUModel == "" {
				return apperr.Fields{apperr.Field("gpu", "providers.err.gpu_unknown_node", n.Name, inv.GPUs, inv.Name)}
			}
			return apperr.Fields{fleet.Mismatch(n, inv, in.GPU)}
		}
		o = &models.Offer{ProviderID: acc.Provider.ID, NodeID: n.ID, DatacenterID: n.DatacenterID, GPUModel: in.GPU,
			MaxGPUs: in.MaxGPUs, VCPUPerGPU: in.VCPUPerGPU, RAMGBPerGPU: in.RAMGBPerGPU, DiskGB: in.DiskGB, Interconnect: in.Interconnect,
			PricePerGPUHourFen: in.PricePerGPUHourFen, WeeklyPricePerGPUFen: in.WeeklyPricePerGPUFen, MonthlyPricePerGPUFen: in.MonthlyPricePerGPUFen,
			OffpeakDiscountPct: in.OffpeakDiscountPct, StudentDiscountPct: in.StudentDiscountPct, MinDurationS: in.MinDurationS,
			SLATiers: strings.Join(in.SLATiers, ","), Status: models.OfferListed, CreatedAt: now, UpdatedAt: now,
			CustomImages: in.CustomImages, StoragePricePerGBMonthFen: *in.StoragePricePerGBMonthFen, NoGPUPricePerHourFen: *in.NoGPUPricePerHourFen,
			InterruptibleFloorPerGPUHourFen: in.InterruptibleFloorPerGPUHourFen}
		if in.Paused {
			o.Status = models.OfferPaused
		}
		if o.AwaitingNode, o.ListingNote, err = fleet.ListingOf(tx, o, n); err != nil {
			return err
		}
		if err := supply.InsertOffer(tx, o); err != nil {
			return err
		}
		// A price of 0 is the column's default on insert (gorm leaves
		// zero values out); free storage or no-GPU time is set after.
		if *in.StoragePricePerGBMonthFen == 0 || *in.NoGPUPricePerHourFen == 0 {
			o.StoragePricePerGBMonthFen, o.NoGPUPricePerHourFen = *in.StoragePricePerGBMonthFen, *in.NoGPUPricePerHourFen
			if err := supply.SetOfferTerms(tx, o, false); err != nil {
				return err
			}
		}
		if err := models.SetOfferImages(tx, o.ID, imageIDs); err != nil {
			return err
		}
		o.Images = imageSlugs
		if err := supply.RefreshNodeAvailability(tx, n.ID, now); err != nil {
			return err
		}
		return models.OffersChanged(tx, models.OfferScope{Offers: []int64{o.ID}})
	})
	if err != nil {
		return nil, err
	}
	slog.Info("offer created", "provider", acc.Provider.ID, "offer", o.ID, "node", o.NodeID, "gpu", o.GPUModel, "awaiting", o.AwaitingNode, "user", u.ID)
	return p.decorated(ctx, acc, o)
}

// withField adds a problem to a validation error (or makes one).
func withField(err error, e *apperr.Error) error {
	if f, ok := err.(apperr.Fields); ok {
		return append(apperr.Fields{e}, f...)
	}
	if err != nil {
		return err
	}
	return apperr.Fields{e}
}

// UpdateOffer changes an offer (owners and admins): any field but its node
// and model, and listing or pausing it.
func (p *Service) UpdateOffer(ctx context.Context, u *models.User, providerID, offerID int64, patch OfferPatch) (*models.Offer, error) {
	acc, err := p.access(ctx, u, providerID, true)
	if err != nil {
		return nil, err
	}
	now := p.DB.Now().UTC()
	var o *models.Offer
	err = p.DB.Tx(ctx, func(tx *gorm.DB) error {
		o, err = supply.OfferOf(tx, acc.Provider.ID, offerID)
		if err != nil {
			return err
		}
		n, err := supply.NodeOf(tx, acc.Provider.ID, o.NodeID)
		if err != nil {
			return err
		}
		inv, err := fleet.InventoryOf(tx, n)
		if err != nil {
			return err
		}
		in := OfferInput{NodeID: o.NodeID, GPU: o.GPUModel, MaxGPUs: o.MaxGPUs, VCPUPerGPU: o.VCPUPerGPU, RAMGBPerGPU: o.RAMGBPerGPU,
			DiskGB: o.DiskGB, Interconnect: o.Interconnect, PricePerGPUHourFen: o.PricePerGPUHourFen,
			WeeklyPricePerGPUFen: o.WeeklyPricePerGPUFen, MonthlyPricePerGPUFen: o.MonthlyPricePerGPUFen,
			OffpeakDiscountPct: o.OffpeakDiscountPct, StudentDiscountPct: o.StudentDiscountPct, MinDurationS: o.MinDurationS,
			SLATiers: strings.Split(o.SLATiers, ","), Paused: o.Status == models.OfferPaused,
			CustomImages: o.CustomImages, StoragePricePerGBMonthFen: &o.StoragePricePerGBMonthFen, NoGPUPricePerHourFen: &o.NoGPUPricePerHourFen,
			InterruptibleFloorPerGPUHourFen: o.InterruptibleFloorPerGPUHourFen}
		setInt := func(dst *int, v *int) {
			if v != nil {
				*dst = *v
			}
		}
		setInt(&in.MaxGPUs, patch.MaxGPUs)
		setInt(&in.VCPUPerGPU, patch.VCPUPerGPU)
		setInt(&in.RAMGBPerGPU, patch.RAMGBPerGPU)
		setInt(&in.DiskGB, patch.DiskGB)
		setInt(&in.OffpeakDiscountPct, patch.OffpeakDiscountPct)
		setInt(&in.StudentDiscountPct, patch.StudentDiscountPct)
		setInt(&in.MinDurationS, patch.MinDurationS)
		if patch.PricePerGPUHourFen != nil {
			in.PricePerGPUHourFen = *patch.PricePerGPUHourFen
		}
		if patch.WeeklyPricePerGPUFen != nil {
			in.WeeklyPricePerGPUFen = *patch.WeeklyPricePerGPUFen
		}
		if patch.MonthlyPricePerGPUFen != nil {
			in.MonthlyPricePerGPUFen = *patch.MonthlyPricePerGPUFen
		}
		if patch.CustomImages != nil {
			in.CustomImages = *patch.CustomImages
		}
		if patch.StoragePricePerGBMonthFen != nil {
			in.StoragePricePerGBMonthFen = patch.StoragePricePerGBMonthFen
		}
		if patch.NoGPUPricePerHourFen != nil {
			in.NoGPUPricePerHourFen = patch.NoGPUPricePerHourFen
		}
		if patch.InterruptibleFloorPerGPUHourFen != nil {
			in.InterruptibleFloorPerGPUHourFen = *patch.InterruptibleFloorPerGPUHourFen
		}
		if patch.SLATiers != nil {
			in.SLATiers = *patch.SLATiers
			if len(in.SLATiers) == 0 {
				return apperr.Fields{apperr.Field("sla_tiers", "providers.err.sla_none")}
			}
		}
		status := o.Status
		var errs apperr.Fields
		var imageIDs []int64
		if patch.Images != nil {
			var problem *apperr.Error
			if imageIDs, _, problem, err = checkImages(tx, *patch.Images); err != nil {
				return err
			}
			if problem != nil {
				errs = append(errs, problem)
			}
		}
		if patch.Status != nil {
			switch *patch.Status {
			case models.OfferListed, models.OfferPaused:
				status = *patch.Status
			default:
				errs = append(errs, apperr.Field("status", "providers.err.offer_status"))
			}
		}
		// A patch that does not touch max GPUs is not refused because the
		// node since reported fewer GPUs; the rent checks free GPUs anyway.
		count := inv.GPUs
		if patch.MaxGPUs == nil {
			count = 0
		}
		node := n
		if status == models.OfferPaused {
			node = nil // pausing an offer on a removed node is fine
		}
		in, err = checkOffer(in, node, count)
		if err != nil {
			f, _ := err.(apperr.Fields)
			return append(f, errs...)
		}
		if err := errs.OrNil(); err != nil {
			return err
		}
		next := *o
		next.MaxGPUs, next.VCPUPerGPU, next.RAMGBPerGPU, next.DiskGB = in.MaxGPUs, in.VCPUPerGPU, in.RAMGBPerGPU, in.DiskGB
		next.Interconnect, next.PricePerGPUHourFen = in.Interconnect, in.PricePerGPUHourFen
		next.WeeklyPricePerGPUFen, next.MonthlyPricePerGPUFen = in.WeeklyPricePerGPUFen, in.MonthlyPricePerGPUFen
		next.OffpeakDiscountPct, next.StudentDiscountPct, next.MinDurationS = in.OffpeakDiscountPct, in.StudentDiscountPct, in.MinDurationS
		next.SLATiers, next.Status, next.UpdatedAt = strings.Join(in.SLATiers, ","), status, now
		next.CustomImages, next.StoragePricePerGBMonthFen, next.NoGPUPricePerHourFen = in.CustomImages, *in.StoragePricePerGBMonthFen, *in.NoGPUPricePerHourFen
		next.InterruptibleFloorPerGPUHourFen = in.InterruptibleFloorPerGPUHourFen
		relisted := status == models.OfferListed && o.Status != models.OfferListed
		if relisted {
			// Listed again: it waits for the node like a new offer (judged
			// on the offer as it was).
			cp := *o
			if next.AwaitingNode, next.ListingNote, err = fleet.ListingOf(tx, &cp, n); err != nil {
				return err
			}
		}
		if err := supply.SetOfferTerms(tx, &next, relisted); err != nil {
			return err
		}
		if patch.Images != nil {
			if err := models.SetOfferImages(tx, o.ID, imageIDs); err != nil {
				return err
			}
		}
		stored, err := supply.OfferOf(tx, o.ProviderID, o.ID)
		if err != nil {
			return err
		}
		*o = *stored
		if err := withImages(tx, o); err != nil {
			return err
		}
		return models.OffersChanged(tx, models.OfferScope{Offers: []int64{o.ID}})
	})
	if err != nil {
		return nil, err
	}
	slog.Info("offer updated", "provider", acc.Provider.ID, "offer", o.ID, "status", o.Status, "user", u.ID)
	return p.decorated(ctx, acc, o)
}

// decorated sets, on a copy of a listed offer that is not waiting for its
// node, the note saying why the public list still does not show it: the
// provider is not approved yet, or its node is draining or removed.
func (p *Service) decorated(ctx context.Context, acc *Account, o *models.Offer) (*models.Offer, error) {
	if o.Status != models.OfferListed || o.AwaitingNode {
		return o, nil
	}
	n, err := supply.NodeOf(p.DB.R.WithContext(ctx), o.ProviderID, o.NodeID)
	if err != nil {
		return nil, err
	}
	decorate(acc, n, o)
	return o, nil
}

func decorate(acc *Account, n *models.Node, o *models.Offer) {
	if o.Status != models.OfferListed || o.AwaitingNode {
		return
	}
	switch {
	case acc.Org.Status != models.OrgApproved:
		o.ListingNote = "not shown until the provider is verified (" + acc.Org.Status + ")"
	case acc.Org.SuspendedAt != nil:
		o.ListingNote = "not shown: the provider is suspended"
	case n.Status != models.NodeActive:
		o.ListingNote = "not shown: node " + n.Name + " is " + string(n.Status)
	}
}

// OfferPublic reports whether a provider's offer, as Offers returns it,
// shows in the public list.
func OfferPublic(o *models.Offer) bool {
	return o.Status == models.OfferListed && !o.AwaitingNode && o.ListingNote == ""
}

// Offers returns the provider's offers, newest first; ListingNote says
// why a listed offer does not show in the public list.
func (p *Service) Offers(ctx context.Context, u *models.User, providerID int64) ([]models.Offer, error) {
	acc, err := p.access(ctx, u, providerID, false)
	if err != nil {
		return nil, err
	}
	offers, err := supply.OffersOfProvider(ctx, p.DB, acc.Provider.ID)
	if err != nil {
		return nil, err
	}
	if err := withImages(p.DB.R.WithContext(ctx), ptrsOf(offers)...); err != nil {
		return nil, err
	}
	nodes, err := supply.NodesOfProvider(ctx, p.DB, acc.Provider.ID)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*models.Node{}
	for i := range nodes {
		byID[nodes[i].ID] = &nodes[i]
	}
	for i := range offers {
		if n := byID[offers[i].NodeID]; n != nil {
			decorate(acc, n, &offers[i])
		}
	}
	return offers, nil
}

// Offer returns one of the provider's offers.
func (p *Service) Offer(ctx context.Context, u *models.User, providerID, offerID int64) (*models.Offer, error) {
	acc, err := p.access(ctx, u, providerID, false)
	if err != nil {
		return nil, err
	}
	o, err := supply.OfferOf(p.DB.R.WithContext(ctx), acc.Provider.ID, offerID)
	if err != nil {
		return nil, err
	}
	if err := withImages(p.DB.R.WithContext(ctx), o); err != nil {
		return nil, err
	}
	return p.decorated(ctx, acc, o)
}
