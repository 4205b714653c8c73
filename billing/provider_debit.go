package billing

import (
	"gorm.io/gorm"

	"suanli/models/ledger"
)

// ProviderDebitLegs are the legs that take fen from a provider (an SLA
// credit it pays, a refund of what it was paid): from its payable as far
// as the balance, read under lock in tx, goes; the rest is what the
// provider owes the platform (its receivable), offset by the next payout.
// The payable never goes below zero, even after a payout has taken it.
func ProviderDebitLegs(tx *gorm.DB, providerID, fen int64) ([]ledger.Leg, error) {
	if fen <= 0 {
		return nil, nil
	}
	bal, err := ledger.LockPayable(tx, providerID)
	if err != nil {
		return nil, err
	}
	fromPayable := min(max(bal, 0), fen)
	var legs []ledger.Leg
	if fromPayable > 0 {
		legs = append(legs, ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: providerID, AmountFen: -fromPayable})
	}
	if owed := fen - fromPayable; owed > 0 {
		legs = append(legs, ledger.Leg{Kind: ledger.AccProviderReceivable, OrgID: providerID, AmountFen: -owed})
	}
	return legs, nil
}
