package orgverify

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/locales"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/routenames"
	"suanli/views/orgverifypages"
)

// The view models other pages embed: each is what one component of
// package orgverifypages renders there.

// Card is the organisation page's verification card, for a reader that
// page has authorised; canManage is whether they are one of the
// organisation's owners or admins. A personal organisation has none.
func Card(c echo.Context, h *handlers.Handler, org *models.Org, canManage bool) (orgverifypages.Card, error) {
	if org.Personal {
		return orgverifypages.Card{}, nil
	}
	st, err := Orgs(h).StateOf(c.Request().Context(), org, canManage)
	if err != nil {
		return orgverifypages.Card{}, err
	}
	card := orgverifypages.Card{Show: true, OrgID: org.ID, Status: st.Status, CanSubmit: st.CanSubmit,
		PayoutsWait: payoutsWait(h, org)}
	if st.Latest != nil {
		card.Reason = st.Latest.Reason
	}
	return card, nil
}

// Queue is the admin hub's queue of submissions waiting for review,
// oldest first (at most limit of them, and how many wait in all).
func Queue(c echo.Context, h *handlers.Handler, limit int) (orgverifypages.Queue, error) {
	rows, n, err := identitystore.PendingOrgVerifications(c.Request().Context(), h.DB, limit)
	q := orgverifypages.Queue{Total: n}
	for _, r := range rows {
		q.Rows = append(q.Rows, orgverifypages.QueueRow{ID: r.ID, OrgID: r.OrgID, OrgName: r.OrgDisplayName, OrgKind: r.OrgKind,
			RegisteredName: r.OrgName, CreditCode: r.CreditCode, LegalRep: r.LegalRep, SubmittedAt: r.SubmittedAt})
	}
	return q, err
}

// PayoutHold is the provider earnings page's notice: whether the
// provider's payouts wait for its organisation's verification, and the
// way to it.
func PayoutHold(c echo.Context, h *handlers.Handler, pr *models.Provider) (orgverifypages.PayoutHold, error) {
	if h.Payouts == nil || pr.OrgID == nil {
		return orgverifypages.PayoutHold{}, nil
	}
	ctx := c.Request().Context()
	held, err := h.Payouts.AwaitsOrgVerification(ctx, pr)
	if err != nil || !held {
		return orgverifypages.PayoutHold{}, err
	}
	hold := orgverifypages.PayoutHold{Held: true, Status: orgverifypages.StatusUnverified,
		VerifyURL: c.Echo().Reverse(routenames.OrgVerify, strconv.FormatInt(*pr.OrgID, 10))}
	v, err := identitystore.LatestOrgVerification(ctx, h.DB, *pr.OrgID)
	if err == nil {
		hold.Status = string(v.Status)
	} else if apperr.Code(err) != apperr.ENOTFOUND {
		return hold, err
	}
	return hold, nil
}

// HeldRows are the providers whose payable, or a recorded payout's
// Stripe transfer, waits for their organisation's verification, for the
// admin's payouts page.
func HeldRows(c echo.Context, h *handlers.Handler) ([]orgverifypages.HeldRow, error) {
	if h.Payouts == nil {
		return nil, nil
	}
	held, err := h.Payouts.Held(c.Request().Context())
	if err != nil {
		return nil, err
	}
	lang := handlers.Lang(c)
	out := make([]orgverifypages.HeldRow, 0, len(held))
	for _, p := range held {
		name := p.NameZH
		if lang == locales.EN && p.NameEN != "" {
			name = p.NameEN
		}
		row := orgverifypages.HeldRow{ProviderName: name, OrgID: p.OrgID, BalanceFen: p.BalanceFen}
		for _, t := range p.Pending {
			row.Pending = append(row.Pending, orgverifypages.HeldTransfer{PayoutID: t.PayoutID, AmountFen: t.AmountFen})
		}
		out = append(out, row)
	}
	return out, nil
}
