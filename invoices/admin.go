package invoices

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/audit"
	"suanli/locales"
	"suanli/models"
	"suanli/models/invoicestore"
	"suanli/models/ledger"
	"suanli/pricing"
)

// IssueInput is what the tax system produced for an invoice.
type IssueInput struct {
	// Number is the 数电票's number (发票号码), NumberDigits digits.
	Number string
	// IssueDate is its date, YYYY-MM-DD: not before the request, not
	// after today (Asia/Shanghai).
	IssueDate string
	// File is its PDF or OFD, at most MaxFileBytes.
	File []byte
}

// Queue is the platform admins' list of every invoice, the requested ones
// first (oldest first), then the rest (newest first); waiting counts the
// requested ones.
func (s *Service) Queue(ctx context.Context, admin *models.User, offset, limit int) (invs []invoicestore.Invoice, total, waiting int64, err error) {
	if err := accounts.RequirePlatformAdmin(admin); err != nil {
		return nil, 0, 0, err
	}
	return invoicestore.Queue(ctx, s.DB, offset, limit)
}

// Admin is one invoice, for a platform admin.
func (s *Service) Admin(ctx context.Context, admin *models.User, id int64) (*invoicestore.Invoice, error) {
	if err := accounts.RequirePlatformAdmin(admin); err != nil {
		return nil, err
	}
	return invoicestore.ByID(ctx, s.DB, id)
}

// MonthAll is every organisation's invoices of a month (YYYY-MM), for the
// platform's accountant.
func (s *Service) MonthAll(ctx context.Context, admin *models.User, month string) ([]invoicestore.Invoice, error) {
	if err := accounts.RequirePlatformAdmin(admin); err != nil {
		return nil, err
	}
	m, err := ParseMonth(month)
	if err != nil {
		return nil, err
	}
	return invoicestore.InMonth(ctx, s.DB, 0, m)
}

// Issue records that a requested invoice was issued: its number, date and
// file. The requester is mailed (and the invoice's address, if it has one).
func (s *Service) Issue(ctx context.Context, admin *models.User, id int64, in IssueInput) (*invoicestore.Invoice, error) {
	if err := accounts.RequirePlatformAdmin(admin); err != nil {
		return nil, err
	}
	var bad apperr.Fields
	number := checkNumber(&bad, FieldNumber, in.Number)
	date, derr := time.ParseInLocation(dateLayout, in.IssueDate, pricing.Shanghai)
	if derr != nil {
		bad = append(bad, apperr.Field(FieldIssueDate, "invoice.err.date"))
	}
	typ := checkFile(&bad, in.File)
	if err := bad.OrNil(); err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	sum := sha256.Sum256(in.File)
	var inv *invoicestore.Invoice
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := invoicestore.Lock(tx, id)
		if err != nil {
			return err
		}
		if !cur.Status.Can(invoicestore.Issued) {
			return conflict(cur, invoicestore.Issued)
		}
		asked := cur.CreatedAt.In(pricing.Shanghai).Format(dateLayout)
		if today := now.In(pricing.Shanghai).Format(dateLayout); date.Format(dateLayout) > today || date.Format(dateLayout) < asked {
			return apperr.Fields{apperr.Field(FieldIssueDate, "invoice.err.date_range", asked, today)}
		}
		if taken, err := invoicestore.NumberTaken(tx, number, id); err != nil {
			return err
		} else if taken {
			return apperr.Fields{apperr.Field(FieldNumber, "invoice.err.number_taken", number)}
		}
		if inv, err = s.move(tx, id, invoicestore.Issued, map[string]any{"number": number, "issue_date": date.Format(dateLayout),
			"file_type": typ, "file_size": int64(len(in.File)), "issued_at": now, "issued_by": admin.ID}); err != nil {
			return err
		}
		if err := invoicestore.InsertFile(tx, &invoicestore.File{InvoiceID: id, Data: in.File, SHA256: hex.EncodeToString(sum[:]), CreatedAt: now}); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.InvoiceIssued, subject(id), audit.Fen(inv.AmountFen),
			fmt.Sprintf("number %s dated %s, %s %d bytes sha256 %s", number, inv.IssueDate, typ, len(in.File), hex.EncodeToString(sum[:])),
			locales.M("audit.invoice_issued", number, inv.IssueDate)); err != nil {
			return err
		}
		return s.mailRequester(tx, inv, now)
	})
	if err != nil && ledger.IsUniqueViolation(err) {
		// Another admin recorded the same number at the same moment.
		return nil, apperr.Fields{apperr.Field(FieldNumber, "invoice.err.number_taken", number)}
	}
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// Reject refuses a requested invoice, with the reason its requester is
// told; its amount may be invoiced again.
func (s *Service) Reject(ctx context.Context, admin *models.User, id int64, reason string) (*invoicestore.Invoice, error) {
	return s.end(ctx, admin, id, invoicestore.Rejected, "", reason, true)
}

// Void records that an issued invoice was voided (作废) in the tax
// system, with why; its amount may be invoiced (or refunded) again.
func (s *Service) Void(ctx context.Context, admin *models.User, id int64, reason string) (*invoicestore.Invoice, error) {
	return s.end(ctx, admin, id, invoicestore.Voided, "", reason, true)
}

// Reverse records that an issued invoice was cancelled by a red-letter
// invoice (红冲) of the number redNumber; its amount may be invoiced (or
// refunded) again.
func (s *Service) Reverse(ctx context.Context, admin *models.User, id int64, redNumber, reason string) (*invoicestore.Invoice, error) {
	return s.end(ctx, admin, id, invoicestore.Reversed, redNumber, reason, false)
}

// end moves an invoice to a final status by a platform admin's decision,
// audits it and tells the requester.
func (s *Service) end(ctx context.Context, admin *models.User, id int64, to invoicestore.Status, redNumber, reason string, reasonRequired bool) (*invoicestore.Invoice, error) {
	if err := accounts.RequirePlatformAdmin(admin); err != nil {
		return nil, err
	}
	var bad apperr.Fields
	if to == invoicestore.Reversed {
		redNumber = checkNumber(&bad, FieldRedNumber, redNumber)
	}
	reason = checkReason(&bad, reason, reasonRequired)
	if err := bad.OrNil(); err != nil {
		return nil, err
	}
	now := s.DB.Now().UTC()
	set := map[string]any{"reason": reason, "ended_at": now, "ended_by": admin.ID}
	var inv *invoicestore.Invoice
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if to == invoicestore.Reversed {
			cur, err := invoicestore.Lock(tx, id)
			if err != nil {
				return err
			}
			if !cur.Status.Can(to) {
				return conflict(cur, to)
			}
			if taken, err := invoicestore.NumberTaken(tx, redNumber, 0); err != nil {
				return err
			} else if taken {
				return apperr.Fields{apperr.Field(FieldRedNumber, "invoice.err.number_taken", redNumber)}
			}
			set["red_number"] = redNumber
		}
		var err error
		if inv, err = s.move(tx, id, to, set); err != nil {
			return err
		}
		action, detail, msg := audit.InvoiceRejected, "rejected: "+reason, locales.M("audit.invoice_rejected", reason)
		switch to {
		case invoicestore.Voided:
			action, detail, msg = audit.InvoiceVoided, fmt.Sprintf("number %s voided: %s", inv.NumberOrEmpty(), reason),
				locales.M("audit.invoice_voided", inv.NumberOrEmpty(), reason)
		case invoicestore.Reversed:
			action, detail, msg = audit.InvoiceReversed, fmt.Sprintf("number %s reversed by red-letter invoice %s: %s", inv.NumberOrEmpty(), redNumber, reason),
				locales.M("audit.invoice_reversed", inv.NumberOrEmpty(), redNumber, reason)
		}
		if err := audit.Record(ctx, tx, action, subject(id), audit.Fen(inv.AmountFen), detail, msg); err != nil {
			return err
		}
		return s.mailRequester(tx, inv, now)
	})
	if err != nil && ledger.IsUniqueViolation(err) {
		return nil, apperr.Fields{apperr.Field(FieldRedNumber, "invoice.err.number_taken", redNumber)}
	}
	if err != nil {
		return nil, err
	}
	return inv, nil
}
