package sla

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/audit"
	"suanli/billing"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// SLA credits. A rental's SLA promise is about calendar months in
// Asia/Shanghai. For each month it ran in, and as soon as possible after
// it ends (the month it ended in: its "final" computation), its credit is
// computed from what it measured:
//
//   - the period is the rental's running span in the month: from
//     max(running since, month start) to min(stopped at (or now), month end);
//   - its downtime is the sum of its down intervals inside that span. A
//     down interval runs from an "incident" event on its timeline (a node
//     gone silent or a GPU failing its NVML checks, when billing stopped)
//     to the next event that ends it: running again on new GPUs
//     ("migrated"), a stop ("stop_requested", "stopped") or "failed";
//   - billed is what the wallet paid for the rental in the month: every
//     per-second charge posted in the month, and each term payment pro rata
//     over the term it pays for (7 or 30 days from when it was posted);
//   - the downtime's cost is what the downtime would have cost at the
//     rental's current rate (pricing.Accrue over each down interval);
//   - pricing.SLACredit applies the tier's table.
//
// Each computation is recorded once (sla_credits is unique per rental
// and period), zero credits included, and a credit is posted with it as
// one ledger transaction (kind "sla_credit", once-only key
// "sla/r<id>/<period>"): the wallet gets the credit and the provider's
// payable pays it (the provider's downtime pays for itself). Free rentals
// (GPUs failed within FreeIfFailsWithin of the start) paid nothing and
// get no credit on top.

// CreditKind is the ledger transaction kind of an SLA credit.
const CreditKind = "sla_credit"

// Month returns the "YYYY-MM" key of the month (Asia/Shanghai) that t
// falls in, and the month's bounds [start, end).
func Month(t time.Time) (key string, start, end time.Time) {
	l := t.In(pricing.Shanghai)
	start = time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, pricing.Shanghai)
	end = start.AddDate(0, 1, 0)
	return start.Format("2006-01"), start.UTC(), end.UTC()
}

// Computation is one period's SLA computation for a rental: what the
// rental page shows and what sla_credits records.
type Computation struct {
	Period string
	// From and To bound the rental's running span in the period.
	From, To time.Time
	Tier     pricing.Tier
	// PeriodSecs is the span's length; DowntimeSecs the downtime in it.
	PeriodSecs, DowntimeSecs int64
	UptimePct                float64
	CreditPct                int
	BilledFen                int64
	DowntimeCostFen          int64
	CreditFen                int64
	// Final is set for the month the rental ended in.
	Final bool
	// Recorded is set when the computation is recorded (settled);
	// TxnID is the ledger transaction that paid its credit, if any.
	Recorded bool
	TxnID    *int64
}

// interval is [from, to).
type interval struct{ from, to time.Time }

// downEnds are the timeline events that end a down interval.
var downEnds = map[string]bool{"running": true, "migrated": true, "stop_requested": true, "stopped": true, "failed": true}

// downIntervals reads a rental's down intervals from its timeline (see
// the package notes on SLA credits); one still open ends at until.
func downIntervals(events []models.RentalEvent, until time.Time) []interval {
	var out []interval
	var open *time.Time
	for _, e := range events {
		switch {
		case e.Kind == "incident" && open == nil:
			at := e.At
			open = &at
		case downEnds[e.Kind] && open != nil:
			if e.At.After(*open) {
				out = append(out, interval{*open, e.At})
			}
			open = nil
		}
	}
	if open != nil && until.After(*open) {
		out = append(out, interval{*open, until})
	}
	return out
}

// clipInterval intersects iv with [from, to); ok is false when empty.
func clipInterval(iv interval, from, to time.Time) (interval, bool) {
	if iv.from.Before(from) {
		iv.from = from
	}
	if iv.to.After(to) {
		iv.to = to
	}
	return iv, iv.to.After(iv.from)
}

// billedIn is what a rental's wallet paid for [from, to): charges posted
// in it, and term payments pro rata over the term each pays for.
func billedIn(r *models.Rental, charges []rentalstore.RentalCharge, from, to time.Time) int64 {
	var fen int64
	for _, c := range charges {
		if c.IdemKey != nil && strings.HasPrefix(*c.IdemKey, "term/") {
			cover := interval{c.At, pricing.TermEnd(r.Term, c.At)}
			if part, ok := clipInterval(cover, from, to); ok {
				fen += c.AmountFen * int64(part.to.Sub(part.from)/time.Second) / int64(cover.to.Sub(cover.from)/time.Second)
			}
			continue
		}
		if !c.At.Before(from) && c.At.Before(to) {
			fen += c.AmountFen
		}
	}
	return fen
}

// rentalEnded reports whether a rental has ended for good (its end is
// StoppedAt).
func rentalEnded(r *models.Rental) bool {
	return (r.Status == models.RentalStopped || r.Status == models.RentalFailed) && r.StoppedAt != nil
}

// computeSLA computes a rental's SLA for the month with the key, as of
// now (a month not yet over is computed up to now).
func computeSLA(r *models.Rental, events []models.RentalEvent, charges []rentalstore.RentalCharge, month string, now time.Time) Computation {
	start, _ := time.ParseInLocation("2006-01", month, pricing.Shanghai)
	ps, pe := start.UTC(), start.AddDate(0, 1, 0).UTC()
	tier, ok := pricing.TierByName(r.SLA)
	if !ok {
		tier = pricing.Tiers[0]
	}
	c := Computation{Period: month, Tier: tier}
	end := now
	if r.StoppedAt != nil && r.StoppedAt.Before(end) {
		end = *r.StoppedAt
	}
	if rentalEnded(r) {
		key, _, _ := Month(*r.StoppedAt)
		c.Final = key == month
	}
	c.From, c.To = ps, pe
	if end.Before(pe) {
		c.To = end
	}
	if r.RunningSince != nil && r.RunningSince.After(c.From) {
		c.From = *r.RunningSince
	}
	c.From, c.To = c.From.Truncate(time.Second), c.To.Truncate(time.Second)
	if c.To.Before(c.From) {
		c.To = c.From
	}
	c.PeriodSecs = int64(c.To.Sub(c.From) / time.Second)
	var carry int64
	for _, iv := range downIntervals(events, end) {
		iv, ok := clipInterval(iv, c.From, c.To)
		if !ok {
			continue
		}
		c.DowntimeSecs += int64(iv.to.Truncate(time.Second).Sub(iv.from.Truncate(time.Second)) / time.Second)
		var fen int64
		fen, carry = pricing.Accrue(r.Rate(), iv.from, iv.to, carry)
		c.DowntimeCostFen += fen
	}
	c.BilledFen = billedIn(r, charges, ps, pe)
	c.UptimePct, c.CreditPct, c.CreditFen = pricing.SLACredit(tier, c.PeriodSecs, c.DowntimeSecs, c.BilledFen, c.DowntimeCostFen)
	return c
}

// slaMonths lists the months a rental's SLA is due for at now, oldest
// first: from the month it started running in to the month it ended in,
// or, while it is live, to the month before now's.
func slaMonths(r *models.Rental, now time.Time) []string {
	if r.RunningSince == nil {
		return nil
	}
	last := now
	if rentalEnded(r) {
		last = *r.StoppedAt
	} else {
		_, cur, _ := Month(now)
		last = cur.Add(-time.Second)
	}
	var out []string
	_, m, _ := Month(*r.RunningSince)
	for !m.After(last) {
		key, _, next := Month(m)
		out = append(out, key)
		m = next
	}
	return out
}

// Result counts what one SLA pass did.
type Result struct {
	Rentals, Recorded, Credits int
	Fen                        int64
}

// Settle records every due SLA computation and posts its credit, once:
// for rentals that ended, the months up to the one they ended in; for
// live rentals, the months before the current one. Running it again (or
// on two processes at once) records and posts nothing more.
func Settle(ctx context.Context, db *models.DB) (Result, error) {
	var res Result
	now := db.Now().UTC()
	_, cur, _ := Month(now)
	prev, _, _ := Month(cur.Add(-time.Second))
	ids, err := rentalstore.SLADue(ctx, db, cur, prev)
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		n, credits, fen, err := settleRental(ctx, db, id, now)
		if err != nil {
			return res, fmt.Errorf("SLA for rental %d: %w", id, err)
		}
		res.Rentals++
		res.Recorded += n
		res.Credits += credits
		res.Fen += fen
	}
	return res, nil
}

// settleRental records a rental's due computations in one transaction and
// posts their credits.
func settleRental(ctx context.Context, db *models.DB, id int64, now time.Time) (recorded, credits int, fen int64, err error) {
	err = db.Tx(ctx, func(tx *gorm.DB) error {
		recorded, credits, fen = 0, 0, 0
		r, err := rentalstore.ReadRental(tx, id)
		if err != nil {
			return err
		}
		if r.Free || r.RunningSince == nil {
			return nil
		}
		done, err := rentalstore.SLAPeriodsOfRental(tx, r.ID)
		if err != nil {
			return err
		}
		events, err := rentalstore.RentalEventsTx(tx, r.ID)
		if err != nil {
			return err
		}
		charges, err := rentalstore.RentalCharges(tx, r.ID)
		if err != nil {
			return err
		}
		for _, month := range slaMonths(&r, now) {
			if done[month] {
				continue
			}
			c := computeSLA(&r, events, charges, month, now)
			row := &models.SLACredit{RentalID: r.ID, Period: month, Tier: c.Tier.Name, PeriodSecs: c.PeriodSecs, DowntimeSecs: c.DowntimeSecs,
				UptimePct: c.UptimePct, CreditPct: c.CreditPct, BilledFen: c.BilledFen, CreditFen: c.CreditFen, CreatedAt: now}
			ok, err := rentalstore.InsertSLACredit(tx, row)
			if err != nil {
				return err
			}
			if !ok {
				continue // another pass recorded it
			}
			recorded++
			if c.CreditFen == 0 {
				continue
			}
			txnID, err := postSLACredit(tx, &r, &c, now)
			if err != nil {
				return err
			}
			if err := rentalstore.SetSLACreditTxn(tx, row.ID, txnID); err != nil {
				return err
			}
			if err := audit.Record(ctx, tx, audit.SLACredit, fmt.Sprintf("rental:%d", r.ID), audit.Fen(c.CreditFen), fmt.Sprintf("%s: uptime %.4f%%, %d%% credit; provider %d pays", month, c.UptimePct, c.CreditPct, r.ProviderID),
				locales.M("audit.sla_credit", month, c.UptimePct, c.CreditPct, r.ProviderID)); err != nil {
				return err
			}
			credits++
			fen += c.CreditFen
			slog.Info("SLA credit posted", "rental", r.ID, "period", month, "uptime_pct", c.UptimePct, "credit_pct", c.CreditPct, "fen", c.CreditFen)
		}
		return nil
	})
	return recorded, credits, fen, err
}

// postSLACredit posts a computation's credit in tx and returns the ledger
// transaction's id: the wallet gets it, the provider's payable pays it.
func postSLACredit(tx *gorm.DB, r *models.Rental, c *Computation, now time.Time) (int64, error) {
	key := fmt.Sprintf("sla/r%d/%s", r.ID, c.Period)
	txn := &ledger.LedgerTxn{Kind: CreditKind, IdemKey: &key, RentalID: &r.ID, CreatedAt: now,
		Memo:    fmt.Sprintf("rental #%d: SLA credit for %s (%s tier, uptime %.4f%%, %d%%)", r.ID, c.Period, c.Tier.Name, c.UptimePct, c.CreditPct),
		MemoMsg: locales.M("memo.sla_credit", r.ID, c.Period, locales.M("sla.tier."+c.Tier.Name), c.UptimePct, c.CreditPct)}
	// The provider pays from its payable; what a payout already took is
	// owed and offset by the next payout (the payable never goes negative).
	debit, err := billing.ProviderDebitLegs(tx, r.ProviderID, c.CreditFen)
	if err != nil {
		return 0, err
	}
	err = ledger.Post(tx, txn, append([]ledger.Leg{{Kind: ledger.AccWallet, OrgID: r.OrgID, AmountFen: c.CreditFen}}, debit...)...)
	if errors.Is(err, ledger.ErrDuplicate) {
		return rentalstore.LedgerTxnIDByKey(tx, key)
	}
	return txn.ID, err
}

// RentalTerms is a rental's SLA section: its tier and its computations,
// recorded or not yet.
type RentalTerms struct {
	Tier pricing.Tier
	// Free is set for a free rental: no credit on top.
	Free bool
	// Periods are the months the rental ran in, oldest first: recorded
	// ones as recorded (the span and the downtime's cost computed again
	// from the timeline), the others as they stand now. The last may be
	// the current month of a live rental (Open).
	Periods []Computation
}

// Open reports whether the computation is of a month still running for a
// live rental: figures so far, recorded after the month ends.
func (c *Computation) Open(r *models.Rental, now time.Time) bool {
	_, _, end := Month(c.From)
	return !rentalEnded(r) && now.Before(end)
}

// OfRental builds a rental's SLA section at now.
func OfRental(ctx context.Context, db *models.DB, r *models.Rental, events []models.RentalEvent, now time.Time) (*RentalTerms, error) {
	tier, ok := pricing.TierByName(r.SLA)
	if !ok {
		tier = pricing.Tiers[0]
	}
	out := &RentalTerms{Tier: tier, Free: r.Free}
	if r.RunningSince == nil || r.Free {
		return out, nil
	}
	rows, err := rentalstore.SLACreditsOfRental(ctx, db, r.ID)
	if err != nil {
		return nil, err
	}
	charges, err := rentalstore.RentalCharges(db.R.WithContext(ctx), r.ID)
	if err != nil {
		return nil, err
	}
	recorded := map[string]models.SLACredit{}
	for _, row := range rows {
		recorded[row.Period] = row
	}
	months := slaMonths(r, now)
	if !rentalEnded(r) {
		key, _, _ := Month(now)
		months = append(months, key)
	}
	for _, m := range months {
		c := computeSLA(r, events, charges, m, now)
		if row, ok := recorded[m]; ok {
			// What was recorded is what was paid.
			c.PeriodSecs, c.DowntimeSecs, c.UptimePct, c.CreditPct, c.BilledFen, c.CreditFen = row.PeriodSecs, row.DowntimeSecs, row.UptimePct, row.CreditPct, row.BilledFen, row.CreditFen
			if t, ok := pricing.TierByName(row.Tier); ok {
				c.Tier = t
			}
			c.Recorded, c.TxnID = true, row.TxnID
		}
		out.Periods = append(out.Periods, c)
	}
	return out, nil
}
