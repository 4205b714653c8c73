package rentals

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/billing"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
)

// commissionOn is the platform's commission on fen more of a rental's
// money after before fen: the commission on the running total less the
// commission already taken, so that rounding each charge down never
// loses the platform its share. Over a rental the commission is exactly
// CommissionPct of the total, rounded down once: within one fen.
func commissionOn(before, fen int64) int64 {
	return (before+fen)*CommissionPct/100 - before*CommissionPct/100
}

// chargeLegs splits an on-demand charge of fen after before fen already
// billed to the rental: the wallet pays, the provider earns the amount
// less the platform's commission (see commissionOn).
func chargeLegs(r *models.Rental, before, fen int64) []models.Leg {
	return shareLegs(models.Leg{Kind: models.AccWallet, OrgID: r.OrgID, AmountFen: -fen}, r.ProviderID, before, fen)
}

// shareLegs are the legs that take fen from the account of from and give
// it to the provider's payable (keyed by provider id) less the platform's
// commission (commissionOn, after before fen of the rental's).
func shareLegs(from models.Leg, providerID, before, fen int64) []models.Leg {
	commission := commissionOn(before, fen)
	legs := []models.Leg{from}
	if fen-commission != 0 {
		legs = append(legs, models.Leg{Kind: models.AccProviderPayable, OrgID: providerID, AmountFen: fen - commission})
	}
	if commission != 0 {
		legs = append(legs, models.Leg{Kind: models.AccPlatformRevenue, AmountFen: commission})
	}
	return legs
}

// postCharge posts one on-demand charge of fen for a rental in tx, before
// fen having been billed to it already.
func postCharge(tx *gorm.DB, r *models.Rental, before, fen int64, now time.Time) error {
	return models.Post(tx, chargeTxn(r, now), chargeLegs(r, before, fen)...)
}

// chargeTxn is the ledger transaction of an on-demand charge.
func chargeTxn(r *models.Rental, now time.Time) *models.LedgerTxn {
	return &models.LedgerTxn{Kind: billing.ChargeKind, Memo: fmt.Sprintf("rental #%d", r.ID), MemoMsg: locales.M("memo.rental", r.ID),
		RentalID: &r.ID, CreatedBy: &r.UserID, CreatedAt: now}
}

// chargeTerm posts the n-th up-front payment of a term rental, once. The
// money is the provider's only as the term runs: it goes to the
// provider's unearned account, from which earnTerms moves it.
func (s *Service) chargeTerm(tx *gorm.DB, r *models.Rental, now time.Time, n int) error {
	if r.TermPriceFen == nil || *r.TermPriceFen == 0 {
		return nil
	}
	key := fmt.Sprintf("term/r%d/%d", r.ID, n)
	price := *r.TermPriceFen
	txn := &models.LedgerTxn{Kind: billing.ChargeKind, Memo: fmt.Sprintf("rental #%d: %s term %d", r.ID, r.Term, n), IdemKey: &key,
		MemoMsg: locales.M("memo.term", r.ID, termMsg(r.Term), n), RentalID: &r.ID, CreatedBy: &r.UserID, CreatedAt: now}
	err := models.Post(tx, txn,
		models.Leg{Kind: models.AccWallet, OrgID: r.OrgID, AmountFen: -price},
		models.Leg{Kind: models.AccProviderUnearned, OrgID: r.ProviderID, AmountFen: price})
	if errors.Is(err, models.ErrDuplicate) {
		return nil
	}
	if err != nil {
		return err
	}
	r.BilledFen += price
	return tx.Model(&models.Rental{}).Where("id = ?", r.ID).Update("billed_fen", r.BilledFen).Error
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
	up := map[string]any{"billed_until": to, "carry_num": carry, "billed_fen": gorm.Expr("billed_fen + ?", fen), "updated_at": now}
	if stop != "" {
		up["stop_reason"] = stop
	}
	res := tx.Model(&models.Rental{}).Where("id = ? AND status = ? AND billed_until = ?", r.ID, models.RentalRunning, *r.BilledUntil).Updates(up)
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
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

// claim is one rental's billed interval in a batch.
type claim struct {
	id         int64
	prev, to   time.Time
	carry, fen int64
	stop       string
}

// errMeterRace is a batch in which another pass billed some rental first;
// the batch is rolled back and the job's retry bills what is left.
var errMeterRace = errors.New("meter: another pass billed some of these rentals; retrying")

// claimAll claims many rentals' intervals in one statement per 1,000 (as
// claimInterval does one): a statement per rental was most of a pass's
// time on PostgreSQL. If any rental was claimed by someone else, the
// batch fails with errMeterRace.
func claimAll(tx *gorm.DB, dialect string, cs []claim, now time.Time) error {
	cast := func(p, typ string) string {
		if dialect == "postgres" {
			return p + "::" + typ
		}
		return p
	}
	for i := 0; i < len(cs); i += meterBatch {
		part := cs[i:min(i+meterBatch, len(cs))]
		var sb strings.Builder
		args := make([]any, 0, len(part)*6+1)
		sb.WriteString("WITH v(id, prev, upto, carry, fen, stop) AS (VALUES ")
		for j, c := range part {
			if j > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(" + cast("?", "bigint") + ", " + cast("?", "timestamptz") + ", " + cast("?", "timestamptz") + ", " +
				cast("?", "bigint") + ", " + cast("?", "bigint") + ", " + cast("?", "text") + ")")
			args = append(args, c.id, c.prev, c.to, c.carry, c.fen, c.stop)
		}
		sb.WriteString(`) UPDATE rentals SET billed_until = v.upto, carry_num = v.carry, billed_fen = rentals.billed_fen + v.fen,
			stop_reason = CASE WHEN v.stop = '' THEN rentals.stop_reason ELSE v.stop END, updated_at = ` + cast("?", "timestamptz") + `
			FROM v WHERE rentals.id = v.id AND rentals.status = 'running' AND rentals.billed_until = v.prev RETURNING rentals.id`)
		args = append(args, now)
		var got []int64
		if err := tx.Raw(sb.String(), args...).Scan(&got).Error; err != nil {
			return err
		}
		if len(got) != len(part) {
			return errMeterRace
		}
	}
	return nil
}

// meterOne bills one running on-demand rental up to now in tx (see
// meterAmount), clipped to the balance and spending limits (see clip).
func (s *Service) meterOne(tx *gorm.DB, r *models.Rental, now time.Time, final bool) error {
	to, fen, carry, ok := meterAmount(r, now, final)
	if !ok {
		return nil
	}
	var bal int64
	if err := tx.Model(&models.LedgerAccount{}).Where("kind = ? AND org_id = ?", models.AccWallet, r.OrgID).Select("balance_fen").Scan(&bal).Error; err != nil {
		return err
	}
	var org models.Org
	if err := tx.First(&org, r.OrgID).Error; err != nil {
		return err
	}
	room, _, err := billing.Headroom(tx, &org, r.UserID, now)
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
}

// meterBatch is how many rentals one meter transaction bills.
const meterBatch = 1000

// meterRaceRetries is how often a pass bills a batch again that raced a
// stop or another pass before it gives up (and the job's retry goes on).
const meterRaceRetries = 5

// Meter bills every running on-demand rental up to now, a batch per
// transaction (one ledger transaction per rental, posted together).
// Rentals that ran out of balance or reached a spending limit are
// stopped; a renter with less than an hour of balance left is mailed once
// per rental. Term rentals are paid up front; the pass moves what their
// providers have earned since the last one (EarnTerms).
func (s *Service) Meter(ctx context.Context) (MeterResult, error) {
	res, err := s.meterOnDemand(ctx)
	if err != nil {
		return res, err
	}
	res.Terms, res.EarnedFen, err = s.EarnTerms(ctx)
	return res, err
}

// meterOnDemand is Meter's pass over on-demand rentals.
func (s *Service) meterOnDemand(ctx context.Context) (MeterResult, error) {
	var res MeterResult
	now := s.DB.Now().UTC()
	var lastID int64
	for {
		var ids []int64
		if err := s.DB.W.WithContext(ctx).Model(&models.Rental{}).Where("status = ? AND term = ? AND id > ?", models.RentalRunning, pricing.OnDemand, lastID).
			Order("id").Limit(meterBatch).Pluck("id", &ids).Error; err != nil {
			return res, err
		}
		if len(ids) == 0 {
			return res, nil
		}
		lastID = ids[len(ids)-1]
		var (
			billed   []models.Rental
			balances map[int64]int64
			n        int
			fenSum   int64
			err      error
		)
		// A batch that raced a stop or another pass is rolled back and
		// billed again, read afresh: under churn (rentals stopping every
		// second) a whole pass must not fail over one of them.
		for attempt := 0; ; attempt++ {
			billed, balances, n, fenSum = nil, map[int64]int64{}, 0, 0
			err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
				// Read inside the transaction: what another pass billed meanwhile is seen.
				var rs []models.Rental
				if err := tx.Where("id BETWEEN ? AND ? AND status = ? AND term = ?", ids[0], lastID, models.RentalRunning, pricing.OnDemand).
					Order("id").Find(&rs).Error; err != nil {
					return err
				}
				orgs := make([]int64, 0, len(rs))
				for _, r := range rs {
					orgs = append(orgs, r.OrgID)
				}
				var accs []models.LedgerAccount
				if err := tx.Select("org_id", "balance_fen").Where("kind = ? AND org_id IN ?", models.AccWallet, orgs).Find(&accs).Error; err != nil {
					return err
				}
				for _, a := range accs {
					balances[a.OrgID] = a.BalanceFen
				}
				// Spending limits: only organisations that have one are read.
				var limitedOrgs []models.Org
				if err := tx.Where("id IN ? AND (monthly_budget_fen IS NOT NULL OR member_cap_fen IS NOT NULL OR hourly_cap_fen IS NOT NULL)", orgs).
					Find(&limitedOrgs).Error; err != nil {
					return err
				}
				limited := map[int64]*models.Org{}
				for i := range limitedOrgs {
					limited[limitedOrgs[i].ID] = &limitedOrgs[i]
				}
				var posts []models.Posting
				var claims []claim
				for i := range rs {
					r := &rs[i]
					to, fen, carry, ok := meterAmount(r, now, false)
					if !ok {
						continue
					}
					org := limited[r.OrgID]
					room := int64(math.MaxInt64)
					if org != nil {
						// Read after this pass's earlier charges, which such
						// organisations post at once (below): they are rare.
						var err error
						if room, _, err = billing.Headroom(tx, org, r.UserID, now); err != nil {
							return err
						}
					}
					fen, stop := clip(fen, balances[r.OrgID], room)
					before := r.BilledFen
					if org != nil {
						claimed, err := claimInterval(tx, r, to, fen, carry, stop, now)
						if err != nil {
							return err
						}
						if !claimed {
							continue
						}
						if fen > 0 {
							if err := postCharge(tx, r, before, fen, now); err != nil {
								return err
							}
						}
					} else {
						claims = append(claims, claim{id: r.ID, prev: *r.BilledUntil, to: to, carry: carry, fen: fen, stop: stop})
						r.BilledUntil, r.CarryNum, r.BilledFen, r.StopReason = &to, carry, r.BilledFen+fen, cmp.Or(stop, r.StopReason)
						if fen > 0 {
							posts = append(posts, models.Posting{
								Txn:  chargeTxn(r, now),
								Legs: chargeLegs(r, before, fen)})
						}
					}
					balances[r.OrgID] -= fen
					billed = append(billed, *r)
					n++
					fenSum += fen
				}
				if err := claimAll(tx, s.DB.Dialect, claims, now); err != nil {
					return err
				}
				return models.PostMany(tx, posts)
			})
			if !errors.Is(err, errMeterRace) || attempt == meterRaceRetries {
				break
			}
			slog.Debug("meter batch raced; billing it again", "attempt", attempt+1, "from", ids[0], "to", lastID)
		}
		if err != nil {
			return res, err
		}
		res.Rentals += n
		res.Fen += fenSum
		stopped, reminded, err := s.afterMeter(ctx, billed, balances, now)
		res.Stopped += stopped
		res.Reminded += reminded
		if err != nil {
			return res, err
		}
	}
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
			res := tx.Model(&models.Rental{}).Where("id = ? AND NOT low_balance_mailed", r.ID).Update("low_balance_mailed", true)
			if res.Error != nil || res.RowsAffected == 0 {
				return res.Error
			}
			var u models.User
			if err := tx.First(&u, r.UserID).Error; err != nil {
				return err
			}
			return models.EnqueueMail(tx, lowBalanceMail(&u, r, balances[r.OrgID], s.BaseURL, now))
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
	type sum struct {
		Kind  string
		OrgID int64
		Fen   int64
	}
	var sums []sum
	if err := tx.Raw(`SELECT a.kind AS kind, a.org_id AS org_id, SUM(e.amount_fen) AS fen FROM ledger_entries e
		JOIN ledger_txns t ON t.id = e.txn_id JOIN ledger_accounts a ON a.id = e.account_id
		WHERE t.rental_id = ? GROUP BY a.kind, a.org_id`, r.ID).Scan(&sums).Error; err != nil {
		return err
	}
	var legs []models.Leg
	// The provider's side (payable and receivable together) is reversed
	// as one amount, so that neither account crosses zero on the way.
	provider := map[int64]int64{}
	for _, s := range sums {
		switch {
		case s.Fen == 0:
		case s.Kind == models.AccProviderPayable || s.Kind == models.AccProviderReceivable:
			provider[s.OrgID] += s.Fen
		default:
			legs = append(legs, models.Leg{Kind: s.Kind, OrgID: s.OrgID, AmountFen: -s.Fen})
		}
	}
	for id, fen := range provider {
		var side []models.Leg
		var err error
		if fen > 0 {
			// What the provider was paid for the rental comes back from its
			// payable, or, where a payout has taken it, is owed.
			side, err = billing.ProviderDebitLegs(tx, id, fen)
		} else {
			side, err = providerCreditLegs(tx, id, -fen)
		}
		if err != nil {
			return err
		}
		legs = append(legs, side...)
	}
	legs = mergeLegs(legs)
	// The rental's page shows what it cost: nothing, now; and the provider
	// has earned nothing of its term.
	r.BilledFen, r.EarnedFen = 0, 0
	if err := tx.Model(&models.Rental{}).Where("id = ?", r.ID).Updates(map[string]any{"billed_fen": 0, "earned_fen": 0}).Error; err != nil {
		return err
	}
	if len(legs) == 0 {
		return nil
	}
	key := fmt.Sprintf("rental_refund/r%d", r.ID)
	err := models.Post(tx, &models.LedgerTxn{Kind: "rental_refund", Memo: fmt.Sprintf("rental #%d: GPUs failed within %s, the rental is free", r.ID, FreeIfFailsWithin),
		MemoMsg: locales.M("memo.rental_refund", r.ID, int(FreeIfFailsWithin/time.Minute)), IdemKey: &key, RentalID: &r.ID, CreatedAt: now}, legs...)
	if errors.Is(err, models.ErrDuplicate) {
		return nil
	}
	return err
}
