package invoices

import (
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/locales"
	"suanli/models"
	"suanli/models/invoicestore"
	"suanli/pricing"
)

// mailRequester tells whoever asked for the invoice, in their language,
// what became of it: issued (with where to download it), rejected, voided
// or reversed. The address the request gave, if any, is told that it was
// issued, in the requester's language: a notice, not the file (the mail
// outbox carries no attachments), saying that the organisation's members
// download it and whom to ask, since the invoices page is members' only.
func (s *Service) mailRequester(tx *gorm.DB, inv *invoicestore.Invoice, now time.Time) error {
	u, err := models.UserByIDIn(tx, inv.UserID)
	if err != nil {
		return err
	}
	org, err := models.OrgByIDIn(tx, inv.OrgID)
	if err != nil {
		return err
	}
	lang := u.MailLang()
	link := strings.TrimRight(s.BaseURL, "/") + PagePath(inv.OrgID)
	kind := locales.T(lang, "invoice.kind."+inv.Kind)
	amount := pricing.FenToYuanString(inv.AmountFen)
	var subject, body string
	switch inv.Status {
	case invoicestore.Issued:
		subject = locales.T(lang, "invoice.mail.issued.subject", kind, inv.NumberOrEmpty())
		body = locales.T(lang, "invoice.mail.issued.body", kind, inv.Title, amount, inv.NumberOrEmpty(), inv.IssueDate, org.Name, link)
	case invoicestore.Rejected:
		subject = locales.T(lang, "invoice.mail.rejected.subject", inv.ID)
		body = locales.T(lang, "invoice.mail.rejected.body", inv.ID, kind, inv.Title, amount, inv.Reason, link)
	case invoicestore.Voided:
		subject = locales.T(lang, "invoice.mail.voided.subject", inv.NumberOrEmpty())
		body = locales.T(lang, "invoice.mail.voided.body", inv.NumberOrEmpty(), inv.Title, amount, inv.Reason, link)
	case invoicestore.Reversed:
		subject = locales.T(lang, "invoice.mail.reversed.subject", inv.NumberOrEmpty())
		body = locales.T(lang, "invoice.mail.reversed.body", inv.NumberOrEmpty(), inv.RedNumberOrEmpty(), inv.Title, amount, link)
	default:
		return nil
	}
	sig := locales.T(lang, "invoice.mail.signature")
	if err := models.EnqueueMail(tx, &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: now, Subject: subject, Body: body + sig}); err != nil {
		return err
	}
	if inv.Status != invoicestore.Issued || inv.Email == "" || inv.Email == models.NormalizeEmail(u.Email) {
		return nil
	}
	notice := locales.T(lang, "invoice.mail.issued.notice_body", kind, inv.Title, amount, inv.NumberOrEmpty(), inv.IssueDate, org.Name, u.Email)
	subject = locales.T(lang, "invoice.mail.issued.notice_subject", kind, org.Name, inv.NumberOrEmpty())
	return models.EnqueueMail(tx, &models.OutboxMail{ToAddr: inv.Email, Lang: lang, CreatedAt: now, Subject: subject, Body: notice + sig})
}
