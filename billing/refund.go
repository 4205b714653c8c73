package billing

import (
	"gorm.io/gorm"

	"suanli/models/ledger"
)

// RefundLegs reverse a rental's charges (sums: its net per account):
// each account gets back exactly what it was charged; the provider's side
// (payable and receivable together) as one amount, so that neither
// account crosses zero on the way.
func RefundLegs(tx *gorm.DB, sums []ledger.RentalAccountSum) ([]ledger.Leg, error) {
	var legs []ledger.Leg
	provider := map[int64]int64{}
	for _, s := range sums {
		switch {
		case s.Fen == 0:
		case s.Kind == ledger.AccProviderPayable || s.Kind == ledger.AccProviderReceivable:
			provider[s.OrgID] += s.Fen
		default:
			legs = append(legs, ledger.Leg{Kind: s.Kind, OrgID: s.OrgID, AmountFen: -s.Fen})
		}
	}
	for id, fen := range provider {
		var side []ledger.Leg
		var err error
		if fen > 0 {
			// What the provider was paid for the rental comes back from its
			// payable, or, where a payout has taken it, is owed.
			side, err = ProviderDebitLegs(tx, id, fen)
		} else {
			side, err = providerCreditLegs(tx, id, -fen)
		}
		if err != nil {
			return nil, err
		}
		legs = append(legs, side...)
	}
	return mergeLegs(legs), nil
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
