// Package standingorders runs standing orders (「有卡就租」, issue 18):
// "when GPUs matching these filters are free, rent them with this image
// and volume — or just tell me". An order is placed with its filters and
// what its rent needs; the market pass (Pass, run by the workers on every
// availability change and on a period) matches the open orders against
// the offers with free GPUs, fairly (rank), and rents each through
// rentals.Service.Rent exactly once, with the balance and spending limits
// of that moment. A refused rent fails the order with its reason; an
// order past its expiry expires. Every outcome is mailed and shown in the
// console.
package standingorders

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/catalog"
	"suanli/images"
	"suanli/models"
	"suanli/models/orderstore"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/workspace"
)

// The bounds of an order.
const (
	// MaxAhead is the latest expiry an order may have.
	MaxAhead = 30 * 24 * time.Hour
	// MaxOpenPerOrg is how many open orders an organisation may have.
	MaxOpenPerOrg = 100
	// MaxGPUs is the most GPUs one order asks for (a rental's most).
	MaxGPUs = 64
	// MaxLatencyMS is the largest latency bound an order takes.
	MaxLatencyMS = 1000
	// MaxPriceFen bounds a price or a bid per GPU-hour (¥100,000).
	MaxPriceFen = 10_000_000
)

// Service places, cancels and matches standing orders.
type Service struct {
	DB *models.DB
	// Rentals rents a matched order (Rent) and checks its volume; its
	// BaseURL is the mails' links.
	Rentals *rentals.Service
	// Accounts authorises the order's owner again when it is matched.
	Accounts *accounts.Service

	// mu guards open: the open orders, ranked, as of a version of them
	// (orderstore.Version), so a pass reads them again only when they
	// changed.
	mu   sync.Mutex
	open *openOrders
}

type openOrders struct {
	version int64
	wants   []*want
	byID    map[int64]*want
}

// Filters are what an order matches: a GPU model, where, how far, and
// at what price.
type Filters struct {
	// GPU is a catalogue slug (required).
	GPU string
	// City is the datacentre's city ("" any).
	City string
	// From and MaxLatencyMS bound the published latency from a city (0:
	// no bound).
	From         string
	MaxLatencyMS int
	// MaxPriceFen is an on-demand order's highest on-demand price per
	// GPU-hour (the student price for a lab that pays one).
	MaxPriceFen int64
	// Interruptible orders rent at BidPerGPUHourFen (bids.Check).
	Interruptible    bool
	BidPerGPUHourFen int64
}

// Input is an order as placed.
type Input struct {
	OrgID   int64
	Filters Filters
	GPUs    int
	// Action is orderstore.ActionRent or ActionNotify.
	Action string
	// For a rent: the SLA tier ("" standard), the image ("" the offer's
	// default), an existing volume of the organisation or the size of a
	// new one (0: the default), and the SSH key.
	SLA          string
	Image        string
	VolumeID     int64
	VolumeGB     int
	SSHPublicKey string
	// ExpiresAt is required: after now, at most MaxAhead.
	ExpiresAt time.Time
}

// Field names of an order's problems: the API's JSON paths.
const (
	FieldGPU          = "filters.gpu"
	FieldCity         = "filters.city"
	FieldFrom         = "filters.from"
	FieldMaxLatency   = "filters.max_latency_ms"
	FieldMaxPrice     = "filters.max_price_fen"
	FieldBid          = "filters.bid_per_gpu_hour_fen"
	FieldGPUs         = "gpus"
	FieldAction       = "action"
	FieldSLA          = "sla"
	FieldImage        = "image"
	FieldVolumeID     = "volume_id"
	FieldVolumeGB     = "volume_gb"
	FieldSSHPublicKey = "ssh_public_key"
	FieldExpiresAt    = "expires_at"
)

// check validates in for org and returns the order to store, or every
// problem at once (apperr.Fields, answered 422).
func (s *Service) check(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, in Input, now time.Time) (*orderstore.Order, error) {
	var bad apperr.Fields
	add := func(field, key string, args ...any) { bad = append(bad, apperr.Field(field, key, args...)) }
	f := in.Filters
	o := &orderstore.Order{OrgID: org.ID, UserID: u.ID, GPUModel: strings.TrimSpace(f.GPU), City: strings.TrimSpace(f.City),
		FromCity: strings.TrimSpace(f.From), MaxLatencyMS: f.MaxLatencyMS, GPUs: in.GPUs, Action: in.Action,
		Student: offers.StudentPrices(org, m), Status: orderstore.Open, ExpiresAt: in.ExpiresAt.UTC(), CreatedAt: now}
	if o.GPUModel == "" {
		add(FieldGPU, "so.err.gpu_missing")
	} else if _, ok := catalog.GPUModelBySlug(o.GPUModel); !ok {
		add(FieldGPU, "so.err.gpu_unknown", o.GPUModel)
	}
	if _, ok := catalog.CityBySlug(o.City); o.City != "" && !ok {
		add(FieldCity, "so.err.city_unknown", o.City)
	}
	if _, ok := catalog.CityBySlug(o.FromCity); o.FromCity != "" && !ok {
		add(FieldFrom, "so.err.city_unknown", o.FromCity)
	}
	switch {
	case o.MaxLatencyMS < 0 || o.MaxLatencyMS > MaxLatencyMS:
		add(FieldMaxLatency, "so.err.latency", MaxLatencyMS)
	case o.MaxLatencyMS > 0 && o.FromCity == "":
		add(FieldFrom, "so.err.from_missing")
	case o.MaxLatencyMS == 0 && o.FromCity != "":
		add(FieldMaxLatency, "so.err.latency_missing")
	}
	if f.Interruptible {
		if f.MaxPriceFen != 0 {
			add(FieldMaxPrice, "so.err.price_with_bid")
		}
		if f.BidPerGPUHourFen < 1 || f.BidPerGPUHourFen > MaxPriceFen {
			add(FieldBid, "so.err.bid", pricing.FenToYuanString(MaxPriceFen))
		} else {
			o.BidPerGPUHourFen = &f.BidPerGPUHourFen
		}
	} else {
		if f.BidPerGPUHourFen != 0 {
			add(FieldBid, "so.err.bid_without_interruptible")
		}
		if f.MaxPriceFen < 1 || f.MaxPriceFen > MaxPriceFen {
			add(FieldMaxPrice, "so.err.max_price", pricing.FenToYuanString(MaxPriceFen))
		} else {
			o.MaxPriceFen = &f.MaxPriceFen
		}
	}
	if in.GPUs < 1 || in.GPUs > MaxGPUs {
		add(FieldGPUs, "so.err.gpus", MaxGPUs)
	}
	switch {
	case in.ExpiresAt.IsZero():
		add(FieldExpiresAt, "so.err.expires_missing")
	case !in.ExpiresAt.After(now):
		add(FieldExpiresAt, "so.err.expires_past")
	case in.ExpiresAt.Sub(now) > MaxAhead:
		add(FieldExpiresAt, "so.err.expires_far", int(MaxAhead/(24*time.Hour)))
	}
	switch in.Action {
	case orderstore.ActionNotify:
		// It rents nothing: what a rent needs is not kept.
	case orderstore.ActionRent:
		bad = append(bad, s.checkRent(ctx, org, o, in)...)
	default:
		add(FieldAction, "so.err.action")
	}
	if len(bad) > 0 {
		return nil, bad
	}
	return o, nil
}

// checkRent checks, and copies into o, what a rent order's rent needs:
// its SLA tier, image, volume and SSH key.
func (s *Service) checkRent(ctx context.Context, org *models.Org, o *orderstore.Order, in Input) apperr.Fields {
	var bad apperr.Fields
	field := func(err error, name string) {
		if ae, ok := apperr.As(err); ok {
			ae = &apperr.Error{Code: ae.Code, Field: name, Message: ae.Message, Key: ae.Key, Args: ae.Args}
			bad = append(bad, ae)
			return
		}
		bad = append(bad, &apperr.Error{Code: apperr.EINVALID, Field: name, Message: err.Error()})
	}
	tier, ok := pricing.TierByName(in.SLA)
	if !ok {
		bad = append(bad, apperr.Field(FieldSLA, "err.quote_sla"))
	}
	o.SLA = tier.Name
	if key, err := workspace.CheckSSHKey(in.SSHPublicKey); err != nil {
		field(err, FieldSSHPublicKey)
	} else {
		o.SSHPublicKey = key
	}
	o.Image = strings.TrimSpace(in.Image)
	if err := s.checkImage(ctx, o.Image); err != nil {
		field(err, FieldImage)
	}
	switch {
	case in.VolumeID != 0 && in.VolumeGB != 0:
		bad = append(bad, apperr.Field(FieldVolumeGB, "so.err.volume_both"))
	case in.VolumeID < 0:
		bad = append(bad, apperr.Field(FieldVolumeID, "err.volume_unknown"))
	case in.VolumeID > 0:
		v, err := s.Rentals.Volumes().Live(ctx, in.VolumeID)
		if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			field(err, FieldVolumeID)
			break
		}
		if err != nil || v.OrgID != org.ID || v.Status != models.VolumeActive {
			bad = append(bad, apperr.Field(FieldVolumeID, "err.volume_unknown"))
			break
		}
		o.VolumeID, o.DatacenterID = &v.ID, &v.DatacenterID
		if !v.Shared() && v.NodeID != nil {
			o.NodeID = v.NodeID
		}
	case in.VolumeGB < 0 || in.VolumeGB > offers.MaxVolumeGB:
		bad = append(bad, apperr.Field(FieldVolumeGB, "so.err.volume_size", offers.MaxVolumeGB))
	default:
		o.VolumeGB = in.VolumeGB
	}
	return bad
}

// checkImage accepts "" (each offer's default), a catalogue image (its
// slug or reference) and a well-formed custom reference; whether an offer
// offers it is judged when the order matches one (an offer that does not
// is passed over).
func (s *Service) checkImage(ctx context.Context, ref string) error {
	if ref == "" {
		return nil
	}
	cat, err := images.Catalogue(ctx, s.DB)
	if err != nil {
		return err
	}
	for _, im := range cat {
		if ref == im.Slug || ref == im.Reference {
			return nil
		}
	}
	if !strings.ContainsAny(ref, ":@/") {
		return apperr.Field(FieldImage, "so.err.image_unknown", ref)
	}
	return images.CheckReference(ref)
}

// Place stores a new standing order of the organisation and matches the
// open orders at once (Pass), so that the answer shows whether GPUs were
// free. The user must be able to rent from the organisation now: a
// verified address and an organisation that may rent.
func (s *Service) Place(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, in Input) (*orderstore.Order, error) {
	if !u.Verified() {
		return nil, &apperr.Error{Code: apperr.EFORBIDDEN, Message: "verify your email before renting", Key: "err.verify_first_rent"}
	}
	if !org.Usable() {
		return nil, &apperr.Error{Code: apperr.EFORBIDDEN, Field: "org_id", Message: "this organisation may not rent yet", Key: "err.org_not_usable"}
	}
	now := s.DB.Now().UTC()
	o, err := s.check(ctx, u, org, m, in, now)
	if err != nil {
		return nil, err
	}
	n, err := orderstore.CountOpen(ctx, s.DB, []int64{org.ID})
	if err != nil {
		return nil, err
	}
	if n >= MaxOpenPerOrg {
		return nil, &apperr.Error{Code: apperr.ECONFLICT, Message: fmt.Sprintf("an organisation may have at most %d open standing orders", MaxOpenPerOrg),
			Key: "so.err.too_many", Args: []any{MaxOpenPerOrg}}
	}
	if err := s.DB.Tx(ctx, func(tx *gorm.DB) error { return orderstore.Insert(tx, o) }); err != nil {
		return nil, err
	}
	slog.Info("standing order placed", "order", o.ID, "org", org.ID, "user", u.ID, "gpu", o.GPUModel, "gpus", o.GPUs, "action", o.Action)
	if err := s.Pass(ctx); err != nil {
		// Stored: the workers' next pass matches it.
		slog.Error("standing orders: the pass after placing an order", "order", o.ID, "err", err)
	}
	got, err := orderstore.ByID(ctx, s.DB, o.ID)
	if err != nil {
		return nil, err
	}
	return &got, nil
}

// Get is an order the user may see: one of an organisation they are a
// member of (or, as for rentals, any for a platform admin); others are
// ENOTFOUND, as an order that does not exist.
func (s *Service) Get(ctx context.Context, u *models.User, id int64) (*orderstore.Order, *models.Membership, error) {
	o, err := orderstore.ByID(ctx, s.DB, id)
	if err != nil {
		return nil, nil, err
	}
	_, m, err := s.Accounts.Authorize(ctx, u, o.OrgID, accounts.ViewRentals)
	if err != nil {
		if apperr.Code(err) == apperr.ENOTFOUND {
			return nil, nil, apperr.NotFound("standing order")
		}
		return nil, nil, err
	}
	return &o, m, nil
}

// CanCancel reports whether the user may cancel (delete) the order: the
// member who placed it or an admin of its organisation.
func CanCancel(o *orderstore.Order, u *models.User, m *models.Membership) bool {
	return m != nil && (o.UserID == u.ID || models.RoleRank(m.Role) >= models.RoleRank(models.RoleAdmin))
}

// Cancel deletes an order for the member who placed it or an admin of
// its organisation (others of the organisation: EFORBIDDEN; anyone else,
// platform admins included: ENOTFOUND). An open order never fires after
// this; a filled, failed or expired one leaves the list (its rental, if
// any, is not touched). It returns the order as it stood when deleted:
// open, or what it had done already (a pass that filled it first wins).
func (s *Service) Cancel(ctx context.Context, u *models.User, id int64) (*orderstore.Order, error) {
	o, m, err := s.Get(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, apperr.NotFound("standing order")
	}
	if !CanCancel(o, u, m) {
		return nil, &apperr.Error{Code: apperr.EFORBIDDEN, Message: "only the member who placed this standing order or an admin of the organisation may cancel it", Key: "so.err.cancel_forbidden"}
	}
	var was orderstore.Order
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		// Locked: a pass filling it meanwhile has filled it or waits.
		if was, err = orderstore.ForUpdate(tx, id); err != nil {
			return err
		}
		_, err := orderstore.Delete(tx, &was)
		return err
	})
	if err != nil {
		return nil, err
	}
	slog.Info("standing order cancelled", "order", id, "status", was.Status, "user", u.ID)
	return &was, nil
}

// List is a page of the organisations' orders, open first, then newest
// first (status "" is every status), with their total.
func (s *Service) List(ctx context.Context, orgIDs []int64, status orderstore.Status, offset, limit int) ([]orderstore.Order, int64, error) {
	return orderstore.OfOrgs(ctx, s.DB, orgIDs, status, offset, limit)
}

// NoticeDays is how long an ended order is shown as a notice on the
// console.
const NoticeDays = 7

// Notices are what the console shows of the organisations' orders: how
// many are open, and those that ended in the last NoticeDays days, newest
// first.
func (s *Service) Notices(ctx context.Context, orgIDs []int64) (open int64, ended []orderstore.Order, err error) {
	if open, err = orderstore.CountOpen(ctx, s.DB, orgIDs); err != nil {
		return 0, nil, err
	}
	ended, err = orderstore.EndedSince(ctx, s.DB, orgIDs, s.DB.Now().UTC().Add(-NoticeDays*24*time.Hour), 10)
	return open, ended, err
}
