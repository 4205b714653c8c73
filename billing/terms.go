package billing

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
)

// TermEarnedKind is the ledger kind of the part of a prepaid term that the
// provider has earned by running it: it moves from the provider's unearned
// account to its payable, less the platform's commission.
const TermEarnedKind = "term_earned"

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
	return ShareLegs(ledger.Leg{Kind: ledger.AccProviderUnearned, OrgID: r.ProviderID, AmountFen: -fen}, r.ProviderID, before, fen)
}

// earnBatch is how many term rentals one earning transaction moves.
const earnBatch = 500

// EarnTerms moves what term rentals have earned by now from their
// providers' unearned accounts to their payables, an hour's share or more
// at a time, a batch of rentals per transaction; the meter runs it on
// every pass, so a payout pays a term only as far as it has run. It returns how many rentals it moved money
// for and how much.
func EarnTerms(ctx context.Context, db *models.DB) (n int, fen int64, err error) {
	now := db.Now().UTC()
	var after int64
	for {
		var more bool
		err := db.Tx(ctx, func(tx *gorm.DB) error {
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
						MemoMsg: locales.M("memo.term_earned", r.ID, TermMsg(r.Term)), RentalID: &r.ID, CreatedAt: now},
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

// TermMsg names a rental's term ("week", "month") as a message.
func TermMsg(term pricing.Term) locales.Msg { return locales.M("msg.term." + string(term)) }
