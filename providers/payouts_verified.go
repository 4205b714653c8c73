package providers

import (
	"context"

	"gorm.io/gorm"

	"suanli/config"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/models/ledger"
)

// The payout gate of real-name verification (issue 21): with
// --real-name required, a provider organisation that has not completed
// organisation verification (企业认证, package identity) is not paid out.
// Its payable balance stays where it is, untouched, and the next run
// after its verification pays it all.

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
	// BalanceFen is its payable balance, waiting.
	BalanceFen int64
}

// Held returns the providers whose positive payable balance waits for
// their organisation's verification, by provider id (none when the gate
// is off): the admin's payouts page lists them beside each run.
func (p *Payouts) Held(ctx context.Context) ([]HeldPayout, error) {
	if !p.Gated() {
		return nil, nil
	}
	provs, err := ledger.PayableProviders(ctx, p.DB)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(provs))
	for _, pr := range provs {
		ids = append(ids, *pr.OrgID)
	}
	verified, err := identitystore.VerifiedOrgs(ctx, p.DB, ids)
	if err != nil {
		return nil, err
	}
	var out []HeldPayout
	for _, pr := range provs {
		if !verified[*pr.OrgID] {
			out = append(out, HeldPayout{ProviderID: pr.ID, OrgID: *pr.OrgID, NameZH: pr.NameZH, NameEN: pr.NameEN, BalanceFen: pr.BalanceFen})
		}
	}
	return out, nil
}
