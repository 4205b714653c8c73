package billing

import (
	"context"
	"math"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
)

// ChargeKind is the ledger kind of money spent on rentals.
const ChargeKind = "charge"

// CheckSpend says whether spending amountFen more now stays within the
// organisation's limits: a lab's monthly budget (calendar month,
// Asia/Shanghai) and its cap per member, and any organisation's cap per
// rolling hour. Spending is the wallet's "charge" transactions; the
// member is the transaction's CreatedBy. The hourly cap also counts what
// the organisation's live on-demand rentals will spend in the coming hour
// at their rates (all but the rental numbered except, which a change
// replaces): charges already posted say little about rentals that have
// just started. Renting calls it before it starts, and again in its
// transaction with the organisation locked (CheckSpendTx); the meter
// charges at most Headroom.
func (w *Wallet) CheckSpend(ctx context.Context, org *models.Org, userID, amountFen, except int64, now time.Time) error {
	return CheckSpendTx(w.DB.W.WithContext(ctx), org, userID, amountFen, except, now)
}

// CheckSpendTx is CheckSpend in tx.
func CheckSpendTx(tx *gorm.DB, org *models.Org, userID, amountFen, except int64, now time.Time) error {
	for _, l := range limitsOf(org, userID, now) {
		spent, err := spent(tx, org.ID, l.userID, l.since)
		if err != nil {
			return err
		}
		if l.key == "err.limit_hourly" {
			// The coming hour at the live rentals' rates, or the past
			// hour's charges, whichever is more: both are an hour the cap
			// must hold for.
			coming, err := liveHourFen(tx, org.ID, except, now)
			if err != nil {
				return err
			}
			if coming > spent && coming+amountFen > l.limit {
				return limitErr("err.limit_hourly_live", l.limit, coming)
			}
		}
		if spent+amountFen > l.limit {
			return limitErr(l.key, l.limit, spent)
		}
	}
	return nil
}

// liveHourFen is what the organisation's live on-demand rentals (but the
// one numbered except) cost over the next hour at their agreed rates.
func liveHourFen(tx *gorm.DB, orgID, except int64, now time.Time) (int64, error) {
	live, err := models.LiveOnDemandRentals(tx, orgID, except)
	if err != nil {
		return 0, err
	}
	var fen int64
	for i := range live {
		if !live[i].Free {
			fen += pricing.HourFen(live[i].Rate(), now)
		}
	}
	return fen, nil
}

// Headroom is how much more the member may spend now under the
// organisation's limits, read in tx; limited is false when it has none.
func Headroom(tx *gorm.DB, org *models.Org, userID int64, now time.Time) (fen int64, limited bool, err error) {
	fen = math.MaxInt64
	for _, l := range limitsOf(org, userID, now) {
		spent, err := spent(tx, org.ID, l.userID, l.since)
		if err != nil {
			return 0, true, err
		}
		fen, limited = min(fen, max(l.limit-spent, 0)), true
	}
	return fen, limited, nil
}

// limit is one spending limit: at most limit since the time, for one
// member (userID) or the whole organisation (0).
type limit struct {
	key    string
	limit  int64
	userID int64
	since  time.Time
}

func limitsOf(org *models.Org, userID int64, now time.Time) []limit {
	l := now.In(pricing.Shanghai)
	month := time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, pricing.Shanghai).UTC()
	var ls []limit
	if org.MonthlyBudgetFen != nil {
		ls = append(ls, limit{"err.limit_budget", *org.MonthlyBudgetFen, 0, month})
	}
	if org.MemberCapFen != nil {
		ls = append(ls, limit{"err.limit_member", *org.MemberCapFen, userID, month})
	}
	if org.HourlyCapFen != nil {
		ls = append(ls, limit{"err.limit_hourly", *org.HourlyCapFen, 0, now.Add(-time.Hour).UTC()})
	}
	return ls
}

func limitErr(key string, limit, spent int64) error {
	// A spending limit is about the balance the payer may use: its message
	// stands beside the balance on the rent and change forms.
	return &apperr.Error{Code: apperr.EFORBIDDEN, Field: "balance", Message: "spending limit reached", Key: key,
		Args: []any{pricing.FenToYuanString(limit), pricing.FenToYuanString(spent)}}
}

// spent sums the organisation's charges since the time (one member's, if userID ≠ 0).
func spent(tx *gorm.DB, orgID, userID int64, since time.Time) (int64, error) {
	return ledger.WalletDebitsSince(tx, orgID, ChargeKind, userID, since)
}
