package account

import (
	"suanli/models"
	"suanli/models/ledger"
	"suanli/views/accountpages"
)

// The account area's records become the plain view models its pages read.

func userVM(u *models.User) accountpages.User {
	return accountpages.User{Name: u.Name, Email: u.Email, Verified: u.Verified()}
}

func orgLinks(oms []models.OrgMembership) []accountpages.OrgLink {
	out := make([]accountpages.OrgLink, len(oms))
	for i, om := range oms {
		out[i] = accountpages.OrgLink{ID: om.Org.ID, Name: om.Org.Name, Kind: om.Org.Kind, Role: om.Membership.Role, Status: om.Org.Status}
	}
	return out
}

func tokenRows(ts []models.APIToken) []accountpages.Token {
	out := make([]accountpages.Token, len(ts))
	for i, t := range ts {
		out[i] = accountpages.Token{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Revoked: t.RevokedAt != nil, LastUsedAt: t.LastUsedAt}
	}
	return out
}

func invitationsTo(invs []models.InvitationTo) []accountpages.Invitation {
	out := make([]accountpages.Invitation, len(invs))
	for i, inv := range invs {
		out[i] = accountpages.Invitation{ID: inv.ID, OrgName: inv.OrgName, Role: inv.Role}
	}
	return out
}

func orgVM(o *models.Org) accountpages.Org {
	return accountpages.Org{
		ID: o.ID, Name: o.Name, Kind: o.Kind, Status: o.Status, StatusReason: o.StatusReason,
		Institution: o.Institution, Supervisor: o.Supervisor, EmailDomain: o.EmailDomain,
		MonthlyBudgetFen: o.MonthlyBudgetFen, MemberCapFen: o.MemberCapFen, HourlyCapFen: o.HourlyCapFen,
		InvoiceTitle: o.InvoiceTitle, TaxID: o.TaxID,
		IdlePolicy: accountpages.IdlePolicy{BelowPct: o.IdlePolicy.BelowPct, Minutes: o.IdlePolicy.Minutes},
	}
}

func meVM(m *models.Membership) *accountpages.Me {
	if m == nil {
		return nil
	}
	return &accountpages.Me{Confirmed: m.ConfirmedAt != nil, EduEmail: m.EduEmail}
}

func memberRows(ms []models.Member) []accountpages.Member {
	out := make([]accountpages.Member, len(ms))
	for i, m := range ms {
		out[i] = accountpages.Member{UserID: m.UserID, Name: m.User.Name, Email: m.User.Email, Role: m.Role, Confirmed: m.ConfirmedAt != nil}
	}
	return out
}

func topupVM(t *models.Topup) accountpages.Topup {
	return accountpages.Topup{
		ID: t.ID, Reference: t.Reference, Method: t.Method, Status: t.Status,
		AmountFen: t.AmountFen, ReceivedFen: t.ReceivedFen, PaidAt: t.PaidAt, Note: t.Note,
	}
}

func topupRows(ts []models.Topup) []accountpages.Topup {
	out := make([]accountpages.Topup, len(ts))
	for i := range ts {
		out[i] = topupVM(&ts[i])
	}
	return out
}

func refundRows(rs []models.Refund) []accountpages.Refund {
	out := make([]accountpages.Refund, len(rs))
	for i, r := range rs {
		out[i] = accountpages.Refund{AmountFen: r.AmountFen, Method: r.Method, Status: r.Status}
	}
	return out
}

func ledgerRows(ls []ledger.LedgerLine) []accountpages.LedgerLine {
	out := make([]accountpages.LedgerLine, len(ls))
	for i, l := range ls {
		out[i] = accountpages.LedgerLine{CreatedAt: l.CreatedAt, Kind: l.Kind, Memo: l.Memo, MemoMsg: l.MemoMsg, AmountFen: l.AmountFen}
	}
	return out
}
