package providers

import (
	"cmp"
	"context"
	"slices"

	"gorm.io/gorm"

	"suanli/config"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/models/ledger"
	"suanli/models/supply"
)

// The payout gate of real-name verification (issue 21): with
// --real-name required, a provider organisation that has not completed
// organisation verification (企业认证, package identity) is not paid out.
// Its payable balance stays where it is, untouched, and the next run
// after its verification pays it all. A Stripe payout recorded before its
// verification was reset is not transferred either: it stays pending, its
// money in clearing, until a run after the organisation is verified again.

// Gated reports whether payouts wait for organisation verification: the
// default, unless RealName is config.RealNameOff.
func (p *Payouts) Gated() bool { return p.RealName != config.RealNameOff }

// heldIn reports, in a payout's transaction, whether the provider's
// payout waits for its organisation's verification.
func (p *Payouts) heldIn(tx *gorm.DB, pr *models.Provider) (bool, error) {
	if !p.Gated() || pr.OrgID == nil {
		return false, nil
	}
	ok, err := identitystore.OrgVerifiedIn(tx, *pr.OrgID)
	return !ok && err == nil, err
}

// AwaitsOrgVerification reports whether the provider's payouts wait for
// its organisation's verification (what its earnings page says).
func (p *Payouts) AwaitsOrgVerification(ctx context.Context, pr *models.Provider) (bool, error) {
	return p.heldIn(p.DB.R.WithContext(ctx), pr)
}

// HeldPayout is a provider a payout run would pay but for its
// organisation's verification.
type HeldPayout struct {
	ProviderID, OrgID int64
	NameZH, NameEN    string
	// BalanceFen is its payable balance, waiting (0 when only a recorded
	// payout waits).
	BalanceFen int64
	// Pending are its Stripe payouts recorded but not transferred (its
	// verification was reset after they were recorded): their money waits
	// in clearing, and a run transfers them once it is verified again.
	Pending []PendingTransfer
}

// PendingTransfer is a recorded Stripe payout whose transfer is held.
type PendingTransfer struct {
	PayoutID, AmountFen int64
}

// Held returns the providers whose payouts wait for their
// organisation's verification, by provider id (none when the gate is
// off): a positive payable balance that a run does not pay out, or a
// recorded Stripe payout that it does not transfer. The admin's payouts
// page lists them beside each run.
func (p *Payouts) Held(ctx context.Context) ([]HeldPayout, error) {
	if !p.Gated() {
		return nil, nil
	}
	provs, err := ledger.PayableProviders(ctx, p.DB)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*HeldPayout{}
	for _, pr := range provs {
		byID[pr.ID] = &HeldPayout{ProviderID: pr.ID, OrgID: *pr.OrgID, NameZH: pr.NameZH, NameEN: pr.NameEN, BalanceFen: pr.BalanceFen}
	}
	pending, err := ledger.PendingStripePayouts(ctx, p.DB)
	if err != nil {
		return nil, err
	}
	for _, po := range pending {
		h := byID[po.ProviderID]
		if h == nil {
			pr, err := supply.ProviderByID(ctx, p.DB, po.ProviderID)
			if err != nil {
				return nil, err
			}
			if pr.OrgID == nil {
				continue
			}
			h = &HeldPayout{ProviderID: pr.ID, OrgID: *pr.OrgID, NameZH: pr.NameZH, NameEN: pr.NameEN}
			byID[pr.ID] = h
		}
		h.Pending = append(h.Pending, PendingTransfer{PayoutID: po.ID, AmountFen: po.AmountFen})
	}
	ids := make([]int64, 0, len(byID))
	for _, h := range byID {
		ids = append(ids, h.OrgID)
	}
	verified, err := identitystore.VerifiedOrgs(ctx, p.DB, ids)
	if err != nil {
		return nil, err
	}
	var out []HeldPayout
	for _, h := range byID {
		if !verified[h.OrgID] {
			out = append(out, *h)
		}
	}
	slices.SortFunc(out, func(a, b HeldPayout) int { return cmp.Compare(a.ProviderID, b.ProviderID) })
	return out, nil
}
