package admin

import (
	"strconv"

	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/platform"
	"suanli/views/adminpages"
)

// The console's view models are plain: these map the records the
// queries return onto them, so that adminpages never sees models.

func orgVMs(orgs []models.Org) []adminpages.Org {
	out := make([]adminpages.Org, 0, len(orgs))
	for _, o := range orgs {
		out = append(out, adminpages.Org{ID: o.ID, Kind: o.Kind, Name: o.Name, Personal: o.Personal, Status: o.Status,
			Institution: o.Institution, Supervisor: o.Supervisor, EmailDomain: o.EmailDomain, SuspendedAt: o.SuspendedAt})
	}
	return out
}

func applicantVMs(aps map[int64]platform.Applicant) map[int64]adminpages.Applicant {
	out := make(map[int64]adminpages.Applicant, len(aps))
	for id, a := range aps {
		out[id] = adminpages.Applicant{Name: a.Name, Email: a.Email, Verified: a.EmailVerifiedAt != nil,
			EduEmail: a.EduEmail, ConfirmedAt: a.ConfirmedAt}
	}
	return out
}

func providerVMs(ps map[int64]models.Provider) map[int64]adminpages.ProviderProfile {
	out := make(map[int64]adminpages.ProviderProfile, len(ps))
	for id, p := range ps {
		out[id] = adminpages.ProviderProfile{LicenceNo: p.LicenceNo,
			ContactName: p.ContactName, ContactPhone: p.ContactPhone, ContactEmail: p.ContactEmail,
			BankName: p.BankName, BankAccountName: p.BankAccountName, BankAccountNo: p.BankAccountNo}
	}
	return out
}

func topupVMs(ts []models.Topup) []adminpages.Topup {
	out := make([]adminpages.Topup, 0, len(ts))
	for _, t := range ts {
		out = append(out, adminpages.Topup{ID: t.ID, OrgID: t.OrgID, Reference: t.Reference, AmountFen: t.AmountFen})
	}
	return out
}

func refundVMs(rs []models.Refund) []adminpages.Refund {
	out := make([]adminpages.Refund, 0, len(rs))
	for _, r := range rs {
		out = append(out, adminpages.Refund{ID: r.ID, OrgID: r.OrgID, AmountFen: r.AmountFen, Method: r.Method})
	}
	return out
}

func stripeEventVMs(es []models.StripeEvent) []adminpages.StripeEvent {
	out := make([]adminpages.StripeEvent, 0, len(es))
	for _, e := range es {
		out = append(out, adminpages.StripeEvent{ID: e.ID, Type: e.Type, Note: e.Note, ReceivedAt: e.ReceivedAt})
	}
	return out
}

// incidentVMs names each incident's provider in lang (Chinese when it
// has no English name).
func incidentVMs(ins []platform.OpenIncident, lang string) []adminpages.Incident {
	out := make([]adminpages.Incident, 0, len(ins))
	for _, in := range ins {
		name := in.ProviderNameZH
		if lang == "en" && in.ProviderNameEN != "" {
			name = in.ProviderNameEN
		}
		out = append(out, adminpages.Incident{ID: in.ID, OpenedAt: in.OpenedAt, NodeID: in.NodeID, NodeName: in.NodeName,
			ProviderName: name, GPUID: in.GPUID, Kind: in.Kind, Reasons: in.Reasons, ReasonsMsg: in.ReasonsMsg})
	}
	return out
}

// payoutVMs names each payout's provider in lang; a pending bank payout
// is the one an admin marks paid or failed.
func payoutVMs(rows []ledger.PayoutRow, lang string) []adminpages.Payout {
	out := make([]adminpages.Payout, 0, len(rows))
	for _, r := range rows {
		out = append(out, adminpages.Payout{ID: r.ID, ProviderName: r.ProviderName(lang), Period: r.Period, AmountFen: r.AmountFen,
			Method: r.Method, Status: r.Status, BankReference: r.BankReference, StripeTransferID: r.StripeTransferID,
			Failure: r.Failure, PaidAt: r.PaidAt, AwaitsBank: r.Status == models.PayoutPending && r.Method == models.PayoutBank})
	}
	return out
}

func userVMs(us []models.User) []adminpages.User {
	out := make([]adminpages.User, 0, len(us))
	for _, u := range us {
		perDay := ""
		if u.OrgsPerDay != nil {
			perDay = strconv.Itoa(*u.OrgsPerDay)
		}
		out = append(out, adminpages.User{ID: u.ID, Email: u.Email, Name: u.Name, PlatformAdmin: u.PlatformAdmin,
			Verified: u.EmailVerifiedAt != nil, CreatedAt: u.CreatedAt, SuspendedAt: u.SuspendedAt, OrgsPerDay: perDay})
	}
	return out
}

func mailVMs(ms []models.OutboxMail) []adminpages.Mail {
	out := make([]adminpages.Mail, 0, len(ms))
	for _, m := range ms {
		out = append(out, adminpages.Mail{ToAddr: m.ToAddr, Subject: m.Subject, Body: m.Body,
			CreatedAt: m.CreatedAt, SentAt: m.SentAt, LastError: m.LastError})
	}
	return out
}

func failedJobVMs(js []platform.FailedJob) []adminpages.FailedJob {
	out := make([]adminpages.FailedJob, 0, len(js))
	for _, j := range js {
		out = append(out, adminpages.FailedJob{ID: j.ID, Kind: j.Kind, State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
			ScheduledAt: j.ScheduledAt, FinalizedAt: j.FinalizedAt, LastError: j.LastError(), ErrorCount: len(j.Errors)})
	}
	return out
}

// auditEntryVMs names each entry's actor from actors (the users who
// acted, by id): email and id, "#id" for one not found, "" for the system.
func auditEntryVMs(es []models.AuditEntry, actors map[int64]models.User) []adminpages.AuditEntry {
	out := make([]adminpages.AuditEntry, 0, len(es))
	for _, e := range es {
		actor := ""
		if e.ActorID != nil {
			if u, ok := actors[*e.ActorID]; ok {
				actor = u.Email + " (#" + strconv.FormatInt(u.ID, 10) + ")"
			} else {
				actor = "#" + strconv.FormatInt(*e.ActorID, 10)
			}
		}
		out = append(out, adminpages.AuditEntry{ID: e.ID, At: e.At, Actor: actor, ActorIP: e.ActorIP, Action: e.Action,
			Subject: e.Subject, AmountFen: e.AmountFen, Detail: e.Detail, DetailMsg: e.DetailMsg})
	}
	return out
}
