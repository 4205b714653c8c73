package market

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
	"suanli/pricing"
)

// chargeLegs splits a charge: the wallet pays, the provider earns the
// amount less the platform's commission.
func chargeLegs(orgID, providerID, fen int64) []models.Leg {
	commission := fen * CommissionPct / 100
	legs := []models.Leg{{Kind: models.AccWallet, OrgID: orgID, AmountFen: -fen}}
	// Provider payables are keyed by provider id (providers are not yet organisations).
	if fen-commission != 0 {
		legs = append(legs, models.Leg{Kind: models.AccProviderPayable, OrgID: providerID, AmountFen: fen - commission})
	}
	if commission != 0 {
		legs = append(legs, models.Leg{Kind: models.AccPlatformRevenue, AmountFen: commission})
	}
	return legs
}

// postCharge posts one charge for a rental in tx.
func postCharge(tx *gorm.DB, r *models.Rental, fen int64, memo string, key *string, now time.Time) error {
	txn := &models.LedgerTxn{Kind: ChargeKind, Memo: memo, IdemKey: key, RentalID: &r.ID, CreatedBy: &r.UserID, CreatedAt: now}
	return models.Post(tx, txn, chargeLegs(r.OrgID, r.ProviderID, fen)...)
}

// chargeTerm posts the n-th up-front payment of a term rental, once.
func (s *Rentals) chargeTerm(tx *gorm.DB, r *models.Rental, now time.Time, n int) error {
	if r.TermPriceFen == nil || *r.TermPriceFen == 0 {
		return nil
	}
	key := fmt.Sprintf("term/r%d/%d", r.ID, n)
	err := postCharge(tx, r, *r.TermPriceFen, fmt.Sprintf("rental #%d: %s term %d", r.ID, r.Term, n), &key, now)
	if errors.Is(err, models.ErrDuplicate) {
		return nil
	}
	if err != nil {
		return err
	}
	r.BilledFen += *r.TermPriceFen
	return tx.Model(&models.Rental{}).Where("id = ?", r.ID).Update("billed_fen", r.BilledFen).Error
}

// meterOne bills a running on-demand rental from its last billed second to
// now, carrying the sub-fen remainder. final (at stop) tops the rental up
// to the minimum billed time. If the wallet cannot pay it all, what it
// holds is taken and the rental is marked for stopping (stopBalance).
// Free rentals and term rentals accrue nothing here.
func (s *Rentals) meterOne(tx *gorm.DB, r *models.Rental, now time.Time, final bool) error {
	if r.Status != models.RentalRunning || r.Term != pricing.OnDemand || r.BilledUntil == nil {
		return nil
	}
	to := now.Truncate(time.Second)
	if final && r.RunningSince != nil {
		// The minimum counts running time; downtime was never billed.
		ran := to.Sub(*r.RunningSince) - time.Duration(r.DowntimeSecs)*time.Second
		if short := time.Duration(pricing.MinimumSeconds)*time.Second - ran; short > 0 {
			to = to.Add(short)
		}
	}
	if !to.After(*r.BilledUntil) {
		return nil
	}
	fen, carry := pricing.Accrue(rate(r), *r.BilledUntil, to, r.CarryNum)
	if r.Free {
		fen, carry = 0, 0
	}
	up := map[string]any{"billed_until": to, "carry_num": carry, "updated_at": now}
	if fen > 0 {
		err := postCharge(tx, r, fen, fmt.Sprintf("rental #%d", r.ID), nil, now)
		if errors.Is(err, models.ErrInsufficientFunds) {
			// Take what is left and stop: usage beyond the balance is the
			// provider's loss, never money invented.
			var bal int64
			if err := tx.Model(&models.LedgerAccount{}).Where("kind = ? AND org_id = ?", models.AccWallet, r.OrgID).Select("balance_fen").Scan(&bal).Error; err != nil {
				return err
			}
			fen = bal
			if fen > 0 {
				if err := postCharge(tx, r, fen, fmt.Sprintf("rental #%d (balance exhausted)", r.ID), nil, now); err != nil {
					return err
				}
			}
			up["stop_reason"] = StopBalance
		} else if err != nil {
			return err
		}
		up["billed_fen"] = gorm.Expr("billed_fen + ?", fen)
		r.BilledFen += fen
	}
	r.BilledUntil, r.CarryNum = &to, carry
	return tx.Model(&models.Rental{}).Where("id = ?", r.ID).Updates(up).Error
}

// Stop reasons set by the platform.
const (
	StopBalance  = "balance exhausted"
	StopSpendCap = "spending limit reached"
	StopByUser   = "stopped by the renter"
)

// MeterResult counts what one meter pass did.
type MeterResult struct {
	Rentals  int
	Fen      int64
	Stopped  int
	Reminded int
}

// Meter bills every running on-demand rental up to now, in batches of one
// transaction each. Rentals that ran out of balance or hit a spending
// limit are stopped; renters with less than an hour of balance left are
// mailed once per rental.
func (s *Rentals) Meter(ctx context.Context) (MeterResult, error) {
	var res MeterResult
	now := s.DB.Now().UTC()
	var lastID int64
	for {
		var rs []models.Rental
		if err := s.DB.W.WithContext(ctx).Where("status = ? AND term = ? AND id > ?", models.RentalRunning, pricing.OnDemand, lastID).
			Order("id").Limit(500).Find(&rs).Error; err != nil {
			return res, err
		}
		if len(rs) == 0 {
			break
		}
		lastID = rs[len(rs)-1].ID
		var toStop []int64
		var toStopWhy []string
		err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			for i := range rs {
				r := &rs[i]
				before := r.BilledFen
				if err := s.meterOne(tx, r, now, false); err != nil {
					return fmt.Errorf("meter rental %d: %w", r.ID, err)
				}
				res.Rentals++
				res.Fen += r.BilledFen - before
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		// Limits and reminders, outside the billing transaction.
		for i := range rs {
			r := &rs[i]
			why, remind, err := s.afterCharge(ctx, r, now)
			if err != nil {
				return res, err
			}
			if why != "" {
				toStop = append(toStop, r.ID)
				toStopWhy = append(toStopWhy, why)
			}
			if remind {
				res.Reminded++
			}
		}
		for i, id := range toStop {
			if _, err := s.Stop(ctx, id, toStopWhy[i]); err != nil {
				return res, err
			}
			res.Stopped++
		}
	}
	return res, nil
}

// afterCharge says whether a just-metered rental must stop (balance gone,
// spending limit reached) and mails the renter once when less than an
// hour of balance is left.
func (s *Rentals) afterCharge(ctx context.Context, r *models.Rental, now time.Time) (stop string, reminded bool, err error) {
	var cur models.Rental
	if err := s.DB.W.WithContext(ctx).Select("stop_reason", "low_balance_mailed").First(&cur, r.ID).Error; err != nil {
		return "", false, err
	}
	if cur.StopReason == StopBalance {
		return StopBalance, false, nil
	}
	org, err := s.DB.OrgByID(ctx, r.OrgID)
	if err != nil {
		return "", false, err
	}
	// Not one more fen may be spent: the limit is reached.
	if err := s.Wallet.CheckSpend(ctx, org, r.UserID, 1, now); err != nil {
		if apperr.Code(err) == apperr.EFORBIDDEN {
			return StopSpendCap, false, nil
		}
		return "", false, err
	}
	if cur.LowBalanceMailed {
		return "", false, nil
	}
	bal, err := s.DB.WalletBalance(ctx, r.OrgID)
	if err != nil {
		return "", false, err
	}
	if bal >= pricing.HourFen(rate(r), now) {
		return "", false, nil
	}
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&models.Rental{}).Where("id = ? AND NOT low_balance_mailed", r.ID).Update("low_balance_mailed", true)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var u models.User
		if err := tx.First(&u, r.UserID).Error; err != nil {
			return err
		}
		return models.EnqueueMail(tx, lowBalanceMail(&u, r, bal, s.BaseURL, now))
	})
	if err == nil {
		slog.Info("low balance mailed", "rental", r.ID, "org", r.OrgID, "balance_fen", bal)
	}
	return "", err == nil, err
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
	for _, s := range sums {
		if s.Fen != 0 {
			legs = append(legs, models.Leg{Kind: s.Kind, OrgID: s.OrgID, AmountFen: -s.Fen})
		}
	}
	if len(legs) == 0 {
		return nil
	}
	key := fmt.Sprintf("rental_refund/r%d", r.ID)
	err := models.Post(tx, &models.LedgerTxn{Kind: "rental_refund", Memo: fmt.Sprintf("rental #%d: GPUs failed within %s, the rental is free", r.ID, FreeIfFailsWithin),
		IdemKey: &key, RentalID: &r.ID, CreatedAt: now}, legs...)
	if errors.Is(err, models.ErrDuplicate) {
		return nil
	}
	return err
}
