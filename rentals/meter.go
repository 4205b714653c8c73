package rentals

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"gorm.io/gorm"

	"suanli/billing"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
)

// chargeLegs splits an on-demand charge of fen after before fen already
// billed to the rental: the wallet pays, the provider earns the amount
// less the platform's commission (see billing.ShareLegs).
func chargeLegs(r *models.Rental, before, fen int64) []ledger.Leg {
	return billing.ShareLegs(ledger.Leg{Kind: ledger.AccWallet, OrgID: r.OrgID, AmountFen: -fen}, r.ProviderID, before, fen)
}

// postCharge posts one on-demand charge of fen for a rental in tx, before
// fen having been billed to it already.
func postCharge(tx *gorm.DB, r *models.Rental, before, fen int64, now time.Time) error {
	return ledger.Post(tx, chargeTxn(r, now), chargeLegs(r, before, fen)...)
}

// chargeTxn is the ledger transaction of an on-demand charge.
func chargeTxn(r *models.Rental, now time.Time) *ledger.LedgerTxn {
	return &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: fmt.Sprintf("rental #%d", r.ID), MemoMsg: locales.M("memo.rental", r.ID),
		RentalID: &r.ID, CreatedBy: &r.UserID, CreatedAt: now}
}

// chargeTerm posts the n-th up-front payment of a term rental, once. The
// money is the provider's only as the term runs: it goes to the
// provider's unearned account, from which earnTerms moves it.
func (s *Service) chargeTerm(tx *gorm.DB, r *models.Rental, now time.Time, n int) error {
	if r.TermPriceFen == nil || *r.TermPriceFen == 0 {
		return nil
	}
	key := ledger.TermKey(r.ID, n)
	price := *r.TermPriceFen
	txn := &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: fmt.Sprintf("rental #%d: %s term %d", r.ID, r.Term, n), IdemKey: &key,
		MemoMsg: locales.M("memo.term", r.ID, billing.TermMsg(r.Term), n), RentalID: &r.ID, CreatedBy: &r.UserID, CreatedAt: now}
	err := ledger.Post(tx, txn,
		ledger.Leg{Kind: ledger.AccWallet, OrgID: r.OrgID, AmountFen: -price},
		ledger.Leg{Kind: ledger.AccProviderUnearned, OrgID: r.ProviderID, AmountFen: price})
	if errors.Is(err, ledger.ErrDuplicate) {
		return nil
	}
	if err != nil {
		return err
	}
	r.BilledFen += price
	return ledger.SetRentalBilledFen(tx, r.ID, r.BilledFen)
}

// meterAmount is what a running on-demand rental owes from its last
// billed second to now: the new billed-until second, the whole fen and
// the new sub-fen carry. final (at stop) tops the rental up to the
// minimum billed time. ok is false when nothing is owed or the rental
// does not accrue (not running, a term, free).
func meterAmount(r *models.Rental, now time.Time, final bool) (to time.Time, fen, carry int64, ok bool) {
	if r.Status != models.RentalRunning || r.Term != pricing.OnDemand || r.BilledUntil == nil {
		return
	}
	to = now.Truncate(time.Second)
	if final && r.RunningSince != nil {
		// The minimum counts running time; downtime was never billed.
		ran := to.Sub(*r.RunningSince) - time.Duration(r.DowntimeSecs)*time.Second
		// The minimum is the one agreed at rent (the offer's minimum duration).
		minS := max(r.MinBilledS, pricing.MinimumSeconds)
		if short := time.Duration(minS)*time.Second - ran; short > 0 {
			to = to.Add(short)
		}
	}
	if !to.After(*r.BilledUntil) {
		return
	}
	fen, carry = pricing.Accrue(r.Rate(), *r.BilledUntil, to, r.CarryNum)
	if r.Free {
		fen, carry = 0, 0
	}
	return to, fen, carry, true
}

// claimInterval moves the rental's billed-until second forward in tx, but
// only from the value this pass read: of two passes that race (a meter
// job rescued while the first still runs, a stop during a meter pass),
// exactly one bills an interval. It reports whether this one did.
func claimInterval(tx *gorm.DB, r *models.Rental, to time.Time, fen, carry int64, stop string, now time.Time) (bool, error) {
	ok, err := ledger.ClaimMeterInterval(tx, r.ID, *r.BilledUntil, to, fen, carry, stop, now)
	if err != nil || !ok {
		return false, err
	}
	r.BilledUntil, r.CarryNum, r.BilledFen = &to, carry, r.BilledFen+fen
	if stop != "" {
		r.StopReason = stop
	}
	return true, nil
}

// clip limits a charge to what may be spent: the wallet's balance and the
// spending limits' headroom. It returns the charge and, when it was cut,
// why the rental must stop: usage beyond either is the provider's loss,
// never money invented and never a limit overrun.
func clip(fen, balance, headroom int64) (int64, string) {
	switch {
	case fen > balance && balance <= headroom:
		return balance, StopBalance
	case fen > headroom:
		return headroom, StopSpendCap
	}
	return fen, ""
}

// meterOne bills one running on-demand rental up to now in tx (see
// meterAmount), clipped to the balance and spending limits (see clip).
func (s *Service) meterOne(tx *gorm.DB, r *models.Rental, now time.Time, final bool) error {
	to, fen, carry, ok := meterAmount(r, now, final)
	if !ok {
		return nil
	}
	bal, err := ledger.OrgWalletBalance(tx, r.OrgID)
	if err != nil {
		return err
	}
	org, err := models.OrgByIDIn(tx, r.OrgID)
	if err != nil {
		return err
	}
	room, _, err := billing.Headroom(tx, org, r.UserID, now)
	if err != nil {
		return err
	}
	fen, stop := clip(fen, bal, room)
	before := r.BilledFen
	claimed, err := claimInterval(tx, r, to, fen, carry, stop, now)
	if err != nil || !claimed || fen == 0 {
		return err
	}
	return postCharge(tx, r, before, fen, now)
}

// Stop reasons set by the platform.
const (
	StopBalance  = "balance exhausted"
	StopSpendCap = "spending limit reached"
	StopByUser   = "stopped by the renter"
	// StopTermEnded: a week or month term ended without renewing.
	StopTermEnded = "term ended"
)

// MeterResult counts what one meter pass did.
type MeterResult struct {
	Rentals  int
	Fen      int64
	Stopped  int
	Reminded int
	// Terms counts the term rentals whose providers earned EarnedFen more.
	Terms     int
	EarnedFen int64
	// Volumes counts the volumes billed for storage, VolumeFen what they
	// were billed, VolumesDeleted those deleted for not being started.
	Volumes        int
	VolumeFen      int64
	VolumesDeleted int
}

// meterBatch is about how many rentals one meter transaction bills, by
// dialect (whole organisations at a time, see ledger.MeterRanges): fewer
// on SQLite, whose one writer every other write waits for meanwhile.
var meterBatch = map[string]int{"postgres": 5000, "sqlite": 2000}

// meterWorkers is how many batches run at once, each in its own
// transaction: SQLite has one writer, its batches run one by one.
var meterWorkers = map[string]int{"postgres": 4, "sqlite": 1}

// meterRaceRetries is how often a pass bills a batch again that raced
// (ledger.MeterRaced) before it gives up (and the job's retry goes on).
const meterRaceRetries = 5

// Meter bills every running on-demand rental up to now, a batch per
// transaction (one ledger transaction per rental, posted together).
// Rentals that ran out of balance or reached a spending limit are
// stopped; a renter with less than an hour of balance left is mailed once
// per rental. Term rentals are paid up front; the pass moves what their
// providers have earned since the last one (EarnTerms). Volumes are
// billed for storage (MeterVolumes), and those of rentals stopped too
// long are deleted, after reminders (ExpireVolumes).
func (s *Service) Meter(ctx context.Context) (MeterResult, error) {
	res, err := s.meterOnDemand(ctx)
	if err != nil {
		return res, err
	}
	if res.Terms, res.EarnedFen, err = billing.EarnTerms(ctx, s.DB); err != nil {
		return res, err
	}
	if res.Volumes, res.VolumeFen, err = s.Volumes().Meter(ctx); err != nil {
		return res, err
	}
	res.VolumesDeleted, err = s.Volumes().Expire(ctx)
	return res, err
}

// meterOnDemand is Meter's pass over on-demand rentals: batches of whole
// organisations, meterWorkers at a time.
func (s *Service) meterOnDemand(ctx context.Context) (MeterResult, error) {
	var res MeterResult
	now := s.DB.Now().UTC()
	ranges, err := ledger.MeterRanges(ctx, s.DB, meterBatch[s.DB.Dialect])
	if err != nil {
		return res, err
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(meterWorkers[s.DB.Dialect])
	for _, o := range ranges {
		g.Go(func() error {
			r, err := s.meterRange(ctx, o, now)
			mu.Lock()
			defer mu.Unlock()
			res.Rentals, res.Fen, res.Stopped, res.Reminded = res.Rentals+r.Rentals, res.Fen+r.Fen, res.Stopped+r.Stopped, res.Reminded+r.Reminded
			return err
		})
	}
	return res, g.Wait()
}

// meterRange bills the running on-demand rentals of the organisations in
// g in one transaction (one that raced, see ledger.MeterRaced, is rolled
// back and billed again, read afresh: a whole pass must not fail over
// one rental), then stops and mails (afterMeter).
func (s *Service) meterRange(ctx context.Context, g ledger.OrgRange, now time.Time) (res MeterResult, err error) {
	var billed []models.Rental
	var balances map[int64]int64
	for attempt := 0; ; attempt++ {
		err = s.DB.Tx(ctx, func(tx *gorm.DB) (err error) {
			billed, balances, res.Fen, err = s.meterBatchTx(tx, g, now)
			return err
		})
		if !ledger.MeterRaced(err) || attempt == meterRaceRetries {
			break
		}
		slog.Debug("meter batch raced; billing it again", "attempt", attempt+1, "orgs_from", g.From, "orgs_to", g.To)
	}
	if err != nil {
		return MeterResult{}, err
	}
	res.Rentals = len(billed)
	res.Stopped, res.Reminded, err = s.afterMeter(ctx, billed, balances, now)
	return res, err
}

// meterBatchTx bills one batch in tx: it returns the rentals it billed,
// the wallets' balances after, and the fen it charged. Its claims are
// billed together (ledger.BillMeterBatch), in a fixed handful of
// statements; a claim that a stop or another pass won is billed by that.
// Organisations with spending limits (rare) come last, and each of their
// charges is posted at once: a headroom is read after the charges before.
func (s *Service) meterBatchTx(tx *gorm.DB, g ledger.OrgRange, now time.Time) (billed []models.Rental, balances map[int64]int64, sum int64, err error) {
	// Read inside the transaction: what another pass billed meanwhile is seen.
	b, err := ledger.ReadMeterBatch(tx, g)
	if err != nil {
		return nil, nil, 0, err
	}
	var rs, pending []*models.Rental
	for _, last := range []bool{false, true} {
		for i := range b.Rentals {
			if (b.Limited[b.Rentals[i].OrgID] != nil) == last {
				rs = append(rs, &b.Rentals[i])
			}
		}
	}
	var claims []ledger.MeterClaim
	bill := func() error {
		won, err := ledger.BillMeterBatch(tx, claims, now)
		for i, r := range pending {
			if won[r.ID] {
				billed, sum = append(billed, *r), sum+claims[i].Fen
			} else {
				b.Balances[r.OrgID] += claims[i].Fen
			}
		}
		claims, pending = claims[:0], pending[:0]
		return err
	}
	for _, r := range rs {
		to, fen, carry, ok := meterAmount(r, now, false)
		if !ok {
			continue
		}
		org := b.Limited[r.OrgID]
		room := int64(math.MaxInt64)
		if org != nil {
			if room, _, err = billing.Headroom(tx, org, r.UserID, now); err != nil {
				return nil, nil, 0, err
			}
		}
		fen, stop := clip(fen, b.Balances[r.OrgID], room)
		c := ledger.MeterClaim{RentalID: r.ID, Prev: *r.BilledUntil, To: to, Carry: carry, Fen: fen, Stop: stop}
		if fen > 0 {
			c.Charge = &ledger.Posting{Txn: chargeTxn(r, now), Legs: chargeLegs(r, r.BilledFen, fen)}
		}
		r.BilledUntil, r.CarryNum, r.BilledFen, r.StopReason = &to, carry, r.BilledFen+fen, cmp.Or(stop, r.StopReason)
		b.Balances[r.OrgID] -= fen
		claims, pending = append(claims, c), append(pending, r)
		if org != nil {
			if err := bill(); err != nil {
				return nil, nil, 0, err
			}
		}
	}
	return billed, b.Balances, sum, bill()
}

// afterMeter stops the just-billed rentals whose charge was cut by the
// balance or a spending limit, and mails renters with less than an hour
// of balance left (once per rental).
func (s *Service) afterMeter(ctx context.Context, billed []models.Rental, balances map[int64]int64, now time.Time) (stopped, reminded int, err error) {
	for i := range billed {
		r := &billed[i]
		why := r.StopReason // set by clip when the charge was cut
		if why != "" {
			if _, err := s.Stop(ctx, r.ID, why); err != nil {
				return stopped, reminded, err
			}
			stopped++
			continue
		}
		if r.LowBalanceMailed || balances[r.OrgID] >= pricing.HourFen(r.Rate(), now) {
			continue
		}
		if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			ok, err := ledger.MarkLowBalanceMailed(tx, r.ID)
			if err != nil || !ok {
				return err
			}
			u, err := models.UserByIDIn(tx, r.UserID)
			if err != nil {
				return err
			}
			return models.EnqueueMail(tx, lowBalanceMail(u, r, balances[r.OrgID], s.BaseURL, now))
		}); err != nil {
			return stopped, reminded, err
		}
		reminded++
		slog.Info("low balance mailed", "rental", r.ID, "org", r.OrgID, "balance_fen", balances[r.OrgID])
	}
	return stopped, reminded, nil
}

// refundRental reverses every charge of a rental in tx (a rental whose
// GPUs failed in its first minutes is free): each account gets back
// exactly what it was charged.
func refundRental(tx *gorm.DB, r *models.Rental, now time.Time) error {
	sums, err := ledger.RentalAccountSums(tx, r.ID)
	if err != nil {
		return err
	}
	legs, err := billing.RefundLegs(tx, sums)
	if err != nil {
		return err
	}
	// The rental's page shows what it cost: nothing, now; and the provider
	// has earned nothing of its term.
	r.BilledFen, r.EarnedFen = 0, 0
	if err := ledger.ClearRentalMoney(tx, r.ID); err != nil {
		return err
	}
	if len(legs) == 0 {
		return nil
	}
	key := fmt.Sprintf("rental_refund/r%d", r.ID)
	err = ledger.Post(tx, &ledger.LedgerTxn{Kind: "rental_refund", Memo: fmt.Sprintf("rental #%d: GPUs failed within %s, the rental is free", r.ID, FreeIfFailsWithin),
		MemoMsg: locales.M("memo.rental_refund", r.ID, int(FreeIfFailsWithin/time.Minute)), IdemKey: &key, RentalID: &r.ID, CreatedAt: now}, legs...)
	if errors.Is(err, ledger.ErrDuplicate) {
		return nil
	}
	return err
}
