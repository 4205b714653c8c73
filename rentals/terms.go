package rentals

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"suanli/billing"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
)

// TermEarnedKind is the ledger kind of the part of a prepaid term that the
// provider has earned by running it: it moves from the provider's unearned
// account to its payable, less the platform's commission.
const TermEarnedKind = "term_earned"

// ReceivableOffsetKind is the ledger kind of a payout run's offset of what
// a provider owed the platform against its payable.
const ReceivableOffsetKind = "receivable_offset"

// termStart is when the term period ending at end began.
func termStart(term pricing.Term, end time.Time) time.Time {
	if term == pricing.Month {
		return end.AddDate(0, 0, -30)
	}
	return end.AddDate(0, 0, -7)
}

// earnedBy is how much of a term rental's paid price the provider has
// earned at now: every period before the current one whole, and the
// current one (the last paid, ending at EndsAt) in proportion to the
// seconds it has run. A term stopped early is earned all the same: the
// renter was told that stopping refunds nothing, and the GPUs stay held to
// the end. A term that has not started has earned nothing.
func earnedBy(r *models.Rental, now time.Time) int64 {
	if r.Term == pricing.OnDemand || r.EndsAt == nil || r.BilledFen <= 0 {
		return 0
	}
	unearned := int64(0)
	if r.TermPriceFen != nil && now.Before(*r.EndsAt) {
		start := termStart(r.Term, *r.EndsAt)
		total := int64(r.EndsAt.Sub(start) / time.Second)
		left := int64(r.EndsAt.Sub(now) / time.Second)
		left = min(left, total)
		// Rounded up: what is left unearned is never less than its share.
		unearned = (*r.TermPriceFen*left + total - 1) / total
	}
	return min(max(r.BilledFen-unearned, 0), r.BilledFen)
}

// hourShare is what an hour of the rental's current term period earns
// (at least a fen).
func hourShare(r *models.Rental) int64 {
	if r.TermPriceFen == nil {
		return 1
	}
	total := int64(7 * 24)
	if r.Term == pricing.Month {
		total = 30 * 24
	}
	return max(*r.TermPriceFen/total, 1)
}

// earnLegs moves fen of a term rental's price from the provider's unearned
// account to its payable, the commission on it (carried over the rental's
// earned total, as charges carry theirs) to platform revenue.
func earnLegs(r *models.Rental, before, fen int64) []ledger.Leg {
	return billing.ShareLegs(ledger.Leg{Kind: ledger.AccProviderUnearned, OrgID: r.ProviderID, AmountFen: -fen}, r.ProviderID, before, fen)
}

// earnBatch is how many term rentals one earning transaction moves.
const earnBatch = 500

// EarnTerms moves what term rentals have earned by now from their
// providers' unearned accounts to their payables, an hour's share or more
// at a time, a batch of rentals per transaction; the meter runs it on
// every pass, so a payout pays a term only as far as it has run. It returns how many rentals it moved money
// for and how much.
func (s *Service) EarnTerms(ctx context.Context) (n int, fen int64, err error) {
	now := s.DB.Now().UTC()
	var after int64
	for {
		var more bool
		err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
			rs, err := models.TermsToEarn(tx, after, earnBatch)
			if err != nil {
				return err
			}
			more = len(rs) == earnBatch
			var posts []ledger.Posting
			for i := range rs {
				r := &rs[i]
				after = r.ID
				target := earnedBy(r, now)
				d := target - r.EarnedFen
				// An hour's share at a time (and what is left at the end):
				// a posting per rental per meter pass would be tens of
				// thousands of ledger rows per term, and payouts are monthly.
				if d <= 0 || (d < hourShare(r) && target < r.BilledFen) {
					continue
				}
				ok, err := models.ClaimEarned(tx, r.ID, r.BilledFen, r.EarnedFen, r.EarnedFen+d, now)
				if err != nil {
					return err
				}
				if !ok {
					continue // another pass moved it first
				}
				posts = append(posts, ledger.Posting{
					Txn: &ledger.LedgerTxn{Kind: TermEarnedKind, Memo: fmt.Sprintf("rental #%d: %s term earned", r.ID, r.Term),
						MemoMsg: locales.M("memo.term_earned", r.ID, termMsg(r.Term)), RentalID: &r.ID, CreatedAt: now},
					Legs: earnLegs(r, r.EarnedFen, d)})
				n++
				fen += d
			}
			return ledger.PostMany(tx, posts)
		})
		if err != nil || !more {
			return n, fen, err
		}
	}
}

// mergeLegs sums legs on the same account and drops those that come to
// zero (a refund's receivable leg meets the receivable the rental's own
// earlier debits left).
func mergeLegs(legs []ledger.Leg) []ledger.Leg {
	type key struct {
		kind string
		org  int64
	}
	sum := map[key]int64{}
	var order []key
	for _, l := range legs {
		k := key{l.Kind, l.OrgID}
		if _, ok := sum[k]; !ok {
			order = append(order, k)
		}
		sum[k] += l.AmountFen
	}
	out := make([]ledger.Leg, 0, len(order))
	for _, k := range order {
		if sum[k] != 0 {
			out = append(out, ledger.Leg{Kind: k.kind, OrgID: k.org, AmountFen: sum[k]})
		}
	}
	return out
}

// providerCreditLegs are the legs that give a provider fen back (the
// reversal of an SLA credit it paid): first what it owes the platform is
// forgiven, read under lock in tx, then the rest goes to its payable.
func providerCreditLegs(tx *gorm.DB, providerID, fen int64) ([]ledger.Leg, error) {
	if fen <= 0 {
		return nil, nil
	}
	recv, err := ledger.LockBalance(tx, ledger.AccProviderReceivable, providerID)
	if err != nil {
		return nil, err
	}
	toReceivable := min(max(-recv, 0), fen)
	var legs []ledger.Leg
	if toReceivable > 0 {
		legs = append(legs, ledger.Leg{Kind: ledger.AccProviderReceivable, OrgID: providerID, AmountFen: toReceivable})
	}
	if rest := fen - toReceivable; rest > 0 {
		legs = append(legs, ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: providerID, AmountFen: rest})
	}
	return legs, nil
}
