package standingorders

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/locales"
	"suanli/models"
	"suanli/models/orderstore"
	"suanli/pricing"
	"suanli/rentals"
)

// expireBatch bounds the orders one pass expires (the next pass expires
// the rest).
const expireBatch = 500

// Pass is the standing orders' market pass: it expires the open orders
// past their expiry, then matches the others against the offers with free
// GPUs (run) and fills the matches. It reads the open orders only when
// they changed since its last pass (orderstore.Version) and the offers in
// one query, so most of its work is in memory; only a match costs a rent.
// Passes may run at once, in one process or several: an order is filled
// exactly once (the rent's transaction fills it only while it is open).
func (s *Service) Pass(ctx context.Context) error {
	now := s.DB.Now().UTC()
	if err := s.expire(ctx, now); err != nil {
		return err
	}
	ws, err := s.openOrders(ctx, now)
	if err != nil || len(ws) == 0 {
		return err
	}
	sup, err := s.supply(ctx, ws)
	if err != nil || len(sup.byModel) == 0 {
		return err
	}
	var errs []error
	users := map[int64]*models.User{}
	run(ws, sup, now, func(w *want, f *free, bid *int64) outcome {
		out, err := s.fill(ctx, users, w, f, bid, now)
		if err != nil {
			errs = append(errs, err)
		}
		return out
	})
	return errors.Join(errs...)
}

// openOrders are the open orders, ranked. They are kept between passes
// (an order's filters never change once placed) and checked against the
// version of the open orders: when it moved, the ids still open are read
// again, and only orders not kept yet are read whole.
func (s *Service) openOrders(ctx context.Context, now time.Time) ([]*want, error) {
	v, err := orderstore.Version(ctx, s.DB)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil && s.open.version == v {
		return s.open.wants, nil
	}
	ids, v, err := orderstore.OpenIDs(ctx, s.DB, now)
	if err != nil {
		return nil, err
	}
	kept := map[int64]*want{}
	if s.open != nil {
		kept = s.open.byID
	}
	var missing []int64
	for _, id := range ids {
		if kept[id] == nil {
			missing = append(missing, id)
		}
	}
	read, err := orderstore.ByIDs(ctx, s.DB, missing)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*want, len(ids))
	for i := range read {
		byID[read[i].ID] = wantOf(&read[i])
	}
	ws := make([]*want, 0, len(ids))
	for _, id := range ids {
		w := kept[id]
		if w == nil {
			w = byID[id]
		}
		if w != nil {
			byID[id] = w
			ws = append(ws, w)
		}
	}
	rank(ws)
	s.open = &openOrders{version: v, wants: ws, byID: byID}
	return ws, nil
}

// supply reads the offers with free GPUs of the models the orders want,
// and their latencies from the cities the orders measure from.
func (s *Service) supply(ctx context.Context, ws []*want) (*supply, error) {
	var gpuModels, cities []string
	for _, w := range ws {
		if !slices.Contains(gpuModels, w.order.GPUModel) {
			gpuModels = append(gpuModels, w.order.GPUModel)
		}
		if c := w.order.FromCity; c != "" && !slices.Contains(cities, c) {
			cities = append(cities, c)
		}
	}
	fs, err := orderstore.FreeOffers(ctx, s.DB, gpuModels)
	if err != nil || len(fs) == 0 {
		return &supply{}, err
	}
	var lats []models.DatacenterLatency
	if len(cities) > 0 {
		var dcs []int64
		for _, f := range fs {
			if !slices.Contains(dcs, f.DatacenterID) {
				dcs = append(dcs, f.DatacenterID)
			}
		}
		if lats, err = orderstore.Latencies(ctx, s.DB, dcs, cities); err != nil {
			return nil, err
		}
	}
	return newSupply(fs, lats), nil
}

// errGone: the order is no longer open (another pass filled it, or it
// was cancelled): the rent that would fill it is undone.
var errGone = errors.New("standing order no longer open")

// user reads an order's owner once per pass.
func (s *Service) user(ctx context.Context, users map[int64]*models.User, id int64) (*models.User, error) {
	if u := users[id]; u != nil {
		return u, nil
	}
	u, err := s.DB.UserByID(ctx, id)
	if err == nil {
		users[id] = u
	}
	return u, err
}

// fill tries the order on the offer: a notify order tells its owner; a
// rent order rents (at bid, nil on demand), filling the order in the
// rent's transaction. A refusal that concerns the order (the balance, a
// spending limit, the owner's rights) fails it; one that concerns the
// offer passes it over; a lost race for the GPUs moves on to the next
// offer.
func (s *Service) fill(ctx context.Context, users map[int64]*models.User, w *want, f *free, bid *int64, now time.Time) (outcome, error) {
	o := w.order
	u, err := s.user(ctx, users, o.UserID)
	if err != nil {
		return done, err
	}
	if o.Action == orderstore.ActionNotify {
		err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			if ok, err := orderstore.Fill(tx, o.ID, nil, f.offer.ID, now); err != nil || !ok {
				return cmpErr(err, errGone)
			}
			return models.EnqueueMail(tx, s.notifyMail(u, o, f, now))
		})
		if errors.Is(err, errGone) {
			return done, nil
		}
		if err != nil {
			return done, err
		}
		slog.Info("standing order told its owner", "order", o.ID, "offer", f.offer.ID)
		return told, nil
	}
	org, m, err := s.Accounts.Authorize(ctx, u, o.OrgID, accounts.Rent)
	if err != nil {
		return s.refused(ctx, u, o, f, err, now)
	}
	in := rentals.RentInput{OrgID: o.OrgID, OfferID: f.offer.ID, GPUs: o.GPUs, SLA: o.SLA, Term: pricing.OnDemand,
		SSHPublicKey: o.SSHPublicKey, Image: o.Image, VolumeGB: o.VolumeGB, Bid: bid,
		Also: func(tx *gorm.DB, r *models.Rental) error {
			if ok, err := orderstore.Fill(tx, o.ID, &r.ID, f.offer.ID, now); err != nil || !ok {
				return cmpErr(err, errGone)
			}
			return models.EnqueueMail(tx, s.filledMail(u, o, r, f, now))
		}}
	if o.VolumeID != nil {
		in.VolumeID = *o.VolumeID
	}
	r, err := s.Rentals.Rent(ctx, u, org, m, in)
	if err == nil {
		slog.Info("standing order rented", "order", o.ID, "rental", r.ID, "offer", f.offer.ID, "gpus", o.GPUs)
		return took, nil
	}
	return s.refused(ctx, u, o, f, err, now)
}

// cmpErr is err, or else alt.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// Offer-side refusals of a rent: the offer cannot take this order, but
// another offer might.
var (
	// Keys of a lost race or an offer gone: no order gets it in this pass.
	goneKeys = []string{"err.no_free_gpus", "err.offer_not_listed", "providers.err.node_not_renting"}
	// Fields and keys of a mismatch between this order and this offer.
	offerFields = []string{"image", "sla", "gpus", "term", "volume_gb", "bid_per_gpu_hour_fen"}
	offerKeys   = []string{"err.volume_datacenter", "err.volume_node"}
)

// refused decides what a refused rent means for the order (see fill).
func (s *Service) refused(ctx context.Context, u *models.User, o *orderstore.Order, f *free, err error, now time.Time) (outcome, error) {
	if errors.Is(err, errGone) {
		return done, nil
	}
	ae, ok := apperr.As(err)
	switch {
	case !ok || ae.Code == apperr.EINTERNAL || ae.Code == apperr.EUNAVAILABLE:
		// Not a refusal: the order stays open for the next pass.
		return done, err
	case slices.Contains(goneKeys, ae.Key):
		return noneFree, nil
	case slices.Contains(offerFields, ae.Field) || slices.Contains(offerKeys, ae.Key):
		slog.Debug("standing order passed an offer over", "order", o.ID, "offer", f.offer.ID, "why", ae.Message)
		return passOver, nil
	}
	var msg locales.Msg
	if ae.Key != "" {
		msg = locales.M(ae.Key, ae.Args...)
	}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		ok, err := orderstore.Fail(tx, o.ID, f.offer.ID, ae.Code, ae.Message, msg, now)
		if err != nil || !ok {
			return err
		}
		failed := *o
		failed.FailureCode, failed.Failure, failed.FailureMsg = ae.Code, ae.Message, msg
		return models.EnqueueMail(tx, s.failedMail(u, &failed, f, now))
	})
	if err != nil {
		return done, err
	}
	slog.Info("standing order failed", "order", o.ID, "offer", f.offer.ID, "code", ae.Code, "why", ae.Message)
	return done, nil
}

// expire ends the open orders whose expiry has come, mailing each owner.
func (s *Service) expire(ctx context.Context, now time.Time) error {
	due, err := orderstore.DueToExpire(ctx, s.DB, now, expireBatch)
	if err != nil || len(due) == 0 {
		return err
	}
	users := map[int64]*models.User{}
	for i := range due {
		o := &due[i]
		u, err := s.user(ctx, users, o.UserID)
		if err != nil {
			return err
		}
		if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			ok, err := orderstore.Expire(tx, o.ID, now)
			if err != nil || !ok {
				return err
			}
			return models.EnqueueMail(tx, s.expiredMail(u, o, now))
		}); err != nil {
			return err
		}
	}
	slog.Info("standing orders expired", "count", len(due))
	return nil
}
