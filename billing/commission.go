package billing

import "suanli/models/ledger"

// CommissionPct is the platform's share of every charge a renter pays a
// provider (GPU time and storage).
const CommissionPct = 12

// commissionOn is the platform's commission on fen more of a rental's
// (or volume's) money after before fen: the commission on the running
// total less the commission already taken, so that rounding each charge
// down never loses the platform its share. Over a rental the commission
// is exactly CommissionPct of the total, rounded down once: within one fen.
func commissionOn(before, fen int64) int64 {
	return (before+fen)*CommissionPct/100 - before*CommissionPct/100
}

// ShareLegs are the legs that take fen from the account of from and give
// it to the provider's payable (keyed by provider id) less the platform's
// commission (after before fen already charged for the same rental or
// volume).
func ShareLegs(from ledger.Leg, providerID, before, fen int64) []ledger.Leg {
	commission := commissionOn(before, fen)
	legs := []ledger.Leg{from}
	if fen-commission != 0 {
		legs = append(legs, ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: providerID, AmountFen: fen - commission})
	}
	if commission != 0 {
		legs = append(legs, ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: commission})
	}
	return legs
}
