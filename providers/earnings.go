package providers

import (
	"context"
	"sort"
	"time"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/supply"
	"suanli/pricing"
	"suanli/sla"
)

// EarningLine is one rental's money in a statement month: what renters
// paid (gross), the platform's commission, the provider's share (net =
// gross − commission, after any refunds) and SLA credits the provider paid.
type EarningLine struct {
	RentalID                                      int64
	GPUModel                                      string
	GPUs                                          int
	Start, End                                    time.Time // End is zero while it runs
	GrossFen, CommissionFen, NetFen, SLACreditFen int64
}

// Statement is a provider's monthly statement from the ledger. Gross is
// what the month earned: on-demand charges, and the part of prepaid terms
// that ran in it. NetFen is what the month added to the payable balance:
// the lines' net less their SLA credits. PayableBalanceFen is the balance
// now, UnearnedFen the prepaid term money not yet earned, OwedFen what
// the provider owes the platform (offset by the next payout); Months
// lists the months that can be asked for, newest first.
type Statement struct {
	Provider                                                         models.Provider
	Month                                                            string
	From, To                                                         time.Time
	Lines                                                            []EarningLine
	GrossFen, CommissionFen, SLACreditFen, NetFen, PayableBalanceFen int64
	UnearnedFen, OwedFen                                             int64
	Payouts                                                          []models.Payout
	Months                                                           []string
}

// monthRange parses YYYY-MM (Asia/Shanghai; "" is the month of now).
func monthRange(month string, now time.Time) (string, time.Time, time.Time, error) {
	var start time.Time
	if month == "" {
		l := now.In(pricing.Shanghai)
		start = time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, pricing.Shanghai)
	} else {
		t, err := time.ParseInLocation("2006-01", month, pricing.Shanghai)
		if err != nil || t.Year() < 2000 || t.Year() > 9999 {
			return "", time.Time{}, time.Time{}, apperr.Fields{apperr.Field("month", "providers.err.month")}
		}
		start = t
	}
	return start.Format("2006-01"), start, start.AddDate(0, 1, 0), nil
}

// Statement returns the provider's statement for a month (YYYY-MM,
// Asia/Shanghai; "" for the current one), from the ledger: the legs of
// charges and rental refunds to its payable (net) and to platform revenue
// (commission), and SLA credits debited from its payable.
func (p *Service) Statement(ctx context.Context, u *models.User, providerID int64, month string) (*Statement, error) {
	acc, err := p.access(ctx, u, providerID, false)
	if err != nil {
		return nil, err
	}
	now := p.DB.Now().UTC()
	m, from, to, err := monthRange(month, now)
	if err != nil {
		return nil, err
	}
	st := &Statement{Provider: acc.Provider, Month: m, From: from, To: to}
	legs, err := supply.EarningLegs(ctx, p.DB, acc.Provider.ID, from, to)
	if err != nil {
		return nil, err
	}
	byRental := map[int64]*EarningLine{}
	var ids []int64
	for _, l := range legs {
		line := byRental[l.RentalID]
		if line == nil {
			line = &EarningLine{RentalID: l.RentalID}
			byRental[l.RentalID] = line
			ids = append(ids, l.RentalID)
		}
		// The provider's side is its payable and what it owes (the part of
		// a debit a payout had already taken).
		provider := l.AccKind == ledger.AccProviderPayable || l.AccKind == ledger.AccProviderReceivable
		switch {
		case l.TxnKind == sla.CreditKind && provider:
			line.SLACreditFen -= l.AmountFen
		case provider:
			line.NetFen += l.AmountFen
		case l.AccKind == ledger.AccPlatformRevenue:
			line.CommissionFen += l.AmountFen
		}
	}
	if len(ids) > 0 {
		rentals, err := supply.RentalsWithModel(ctx, p.DB, ids)
		if err != nil {
			return nil, err
		}
		for _, r := range rentals {
			line := byRental[r.ID]
			line.GPUModel, line.GPUs, line.Start = r.GPUModel, r.GPUs, r.CreatedAt
			if r.RunningSince != nil {
				line.Start = *r.RunningSince
			}
			if r.StoppedAt != nil {
				line.End = *r.StoppedAt
			}
		}
	}
	for _, id := range ids {
		line := byRental[id]
		line.GrossFen = line.NetFen + line.CommissionFen
		st.Lines = append(st.Lines, *line)
		st.GrossFen += line.GrossFen
		st.CommissionFen += line.CommissionFen
		st.SLACreditFen += line.SLACreditFen
		st.NetFen += line.NetFen - line.SLACreditFen
	}
	sort.Slice(st.Lines, func(i, j int) bool { return st.Lines[i].RentalID < st.Lines[j].RentalID })
	if st.PayableBalanceFen, err = ledger.PayableBalance(ctx, p.DB, acc.Provider.ID); err != nil {
		return nil, err
	}
	if st.UnearnedFen, err = ledger.AccountBalance(ctx, p.DB, ledger.AccProviderUnearned, acc.Provider.ID); err != nil {
		return nil, err
	}
	if st.OwedFen, err = ledger.AccountBalance(ctx, p.DB, ledger.AccProviderReceivable, acc.Provider.ID); err != nil {
		return nil, err
	}
	st.OwedFen = -st.OwedFen
	if st.Payouts, err = ledger.PayoutsOfProvider(ctx, p.DB, acc.Provider.ID); err != nil {
		return nil, err
	}
	// Months from the provider's sign-up to now, newest first.
	l := now.In(pricing.Shanghai)
	cur := time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, pricing.Shanghai)
	c := acc.Provider.CreatedAt.In(pricing.Shanghai)
	first := time.Date(c.Year(), c.Month(), 1, 0, 0, 0, 0, pricing.Shanghai)
	for t := cur; !t.Before(first) && len(st.Months) < 120; t = t.AddDate(0, -1, 0) {
		st.Months = append(st.Months, t.Format("2006-01"))
	}
	return st, nil
}
