// Package invoices runs VAT invoices (发票, issue 21): an organisation asks
// for a 数电票, normal (普票) or special (专票), for cash it paid in; a
// platform admin issues it with the number, date and file the tax system
// produced, or rejects it; an issued invoice may later be voided (作废)
// or reversed by a red-letter invoice (红冲).
//
// What may be invoiced is the cash top-ups actually received, less what
// was refunded of them, less the organisation's active (requested or
// issued) invoices; promotional, trial and SLA credit never counts. A
// request locks the organisation's paid top-ups, as a refund does
// (ledger.RefundableTopups), and computes that amount again under the
// lock, so two requests, or a request and a refund, at once can never
// together take more than was paid. A refund of invoiced money waits for
// the invoice's reversal (billing.Wallet.RequestRefund says so).
package invoices

import (
	"context"
	"fmt"
	"strconv"

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

// ListLimit is how many of an organisation's invoices its page and the
// API list: the newest.
const ListLimit = 200

// Service asks for, issues and ends invoices.
type Service struct {
	DB *models.DB
	// Accounts decides who may act for an organisation.
	Accounts *accounts.Service
	// BaseURL makes the mails' links.
	BaseURL string
}

// PagePath is an organisation's invoices page, which mails link to.
func PagePath(orgID int64) string { return "/orgs/" + strconv.FormatInt(orgID, 10) + "/invoices" }

// subject names an invoice in the audit log.
func subject(id int64) string { return "invoice:" + strconv.FormatInt(id, 10) }

// invoiceable is what the organisation may still have invoiced, read in
// tx after its paid top-ups are locked (the lock a refund takes too):
// cash received less refunded, less its active invoices.
func invoiceable(tx *gorm.DB, orgID int64) (int64, error) {
	paid, err := ledger.RefundableTopups(tx, orgID)
	if err != nil {
		return 0, err
	}
	var cash int64
	for _, t := range paid {
		cash += *t.ReceivedFen - t.RefundedFen
	}
	active, err := invoicestore.ActiveSum(tx, orgID)
	if err != nil {
		return 0, err
	}
	return max(0, cash-active), nil
}

// Invoiceable is what an organisation may still have invoiced now (a
// request checks it again under lock).
func (s *Service) Invoiceable(ctx context.Context, orgID int64) (int64, error) {
	cash, err := ledger.PaidNotRefunded(ctx, s.DB, orgID)
	if err != nil {
		return 0, err
	}
	active, err := invoicestore.ActiveSumRead(ctx, s.DB, orgID)
	if err != nil {
		return 0, err
	}
	return max(0, cash-active), nil
}

// Request asks for an invoice of the organisation, for its admins (who
// manage its billing). Bad input, and an amount above what may be
// invoiced, are apperr.Fields naming the fields; nothing is stored then.
func (s *Service) Request(ctx context.Context, u *models.User, orgID int64, in Input) (*invoicestore.Invoice, error) {
	org, _, err := s.Accounts.Authorize(ctx, u, orgID, accounts.ManageBilling)
	if err != nil {
		return nil, err
	}
	inv, err := check(org, in)
	if err != nil {
		return nil, err
	}
	inv.UserID, inv.Status, inv.CreatedAt = u.ID, invoicestore.Requested, s.DB.Now().UTC()
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		avail, err := invoiceable(tx, org.ID)
		if err != nil {
			return err
		}
		if inv.AmountFen > avail {
			return apperr.Fields{apperr.Field(FieldAmount, "invoice.err.over_invoiceable", pricing.FenToYuanString(avail))}
		}
		if err := invoicestore.Insert(tx, inv); err != nil {
			return err
		}
		kind := locales.M("invoice.kind." + inv.Kind)
		return audit.Record(ctx, tx, audit.InvoiceRequested, subject(inv.ID), audit.Fen(inv.AmountFen),
			fmt.Sprintf("%s invoice for org %d, title %q", inv.Kind, org.ID, inv.Title),
			locales.M("audit.invoice_requested", kind, org.ID, inv.Title))
	})
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// OrgInvoices are an organisation's invoices as its page and the API
// show them.
type OrgInvoices struct {
	Org *models.Org
	// Invoices are the newest ListLimit, newest first.
	Invoices []invoicestore.Invoice
	// InvoiceableFen is what may still be invoiced.
	InvoiceableFen int64
	// CanRequest: the reader may ask for invoices (and cancel any).
	CanRequest bool
}

// List is the organisation's invoices, for anyone who may see its wallet.
func (s *Service) List(ctx context.Context, u *models.User, orgID int64) (*OrgInvoices, error) {
	org, _, err := s.Accounts.Authorize(ctx, u, orgID, accounts.ViewWallet)
	if err != nil {
		return nil, err
	}
	out := &OrgInvoices{Org: org}
	if out.Invoices, err = invoicestore.OfOrg(ctx, s.DB, org.ID, ListLimit); err != nil {
		return nil, err
	}
	if out.InvoiceableFen, err = s.Invoiceable(ctx, org.ID); err != nil {
		return nil, err
	}
	_, _, aerr := s.Accounts.Authorize(ctx, u, orgID, accounts.ManageBilling)
	out.CanRequest = aerr == nil
	return out, nil
}

// ofOrg is the invoice of the organisation, which the reader may see; an
// invoice of another organisation is ENOTFOUND, as one that does not exist.
func (s *Service) ofOrg(ctx context.Context, u *models.User, orgID, id int64) (*models.Org, *models.Membership, *invoicestore.Invoice, error) {
	org, m, err := s.Accounts.Authorize(ctx, u, orgID, accounts.ViewWallet)
	if err != nil {
		return nil, nil, nil, err
	}
	inv, err := invoicestore.ByID(ctx, s.DB, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if inv.OrgID != org.ID {
		return nil, nil, nil, apperr.NotFound("invoice")
	}
	return org, m, inv, nil
}

// Get is one invoice of the organisation.
func (s *Service) Get(ctx context.Context, u *models.User, orgID, id int64) (*invoicestore.Invoice, error) {
	_, _, inv, err := s.ofOrg(ctx, u, orgID, id)
	return inv, err
}

// File is an issued invoice's file (ENOTFOUND before it is issued), for
// anyone who may see the organisation's wallet.
func (s *Service) File(ctx context.Context, u *models.User, orgID, id int64) (*invoicestore.Invoice, *invoicestore.File, error) {
	_, _, inv, err := s.ofOrg(ctx, u, orgID, id)
	if err != nil {
		return nil, nil, err
	}
	if !inv.Status.HasFile() {
		return nil, nil, apperr.NotFound("invoice file")
	}
	f, err := invoicestore.FileOf(ctx, s.DB, inv.ID)
	if err != nil {
		return nil, nil, err
	}
	return inv, f, nil
}

// Cancel withdraws a requested invoice: by whoever asked for it, or by
// the organisation's admins. Its amount may be invoiced again.
func (s *Service) Cancel(ctx context.Context, u *models.User, orgID, id int64) (*invoicestore.Invoice, error) {
	org, m, inv, err := s.ofOrg(ctx, u, orgID, id)
	if err != nil {
		return nil, err
	}
	if m == nil || (inv.UserID != u.ID && models.RoleRank(m.Role) < models.RoleRank(models.RoleAdmin)) {
		return nil, apperr.Errorf(apperr.EFORBIDDEN, "only who asked for the invoice or the organisation's admins may cancel it")
	}
	now := s.DB.Now().UTC()
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := s.move(tx, inv.ID, invoicestore.Cancelled, map[string]any{"ended_at": now, "ended_by": u.ID})
		if err != nil {
			return err
		}
		inv = cur
		return audit.Record(ctx, tx, audit.InvoiceCancelled, subject(inv.ID), audit.Fen(inv.AmountFen),
			fmt.Sprintf("org %d", org.ID), locales.M("audit.invoice_cancelled", org.ID))
	})
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// move locks the invoice and moves it to to with the columns in set; a
// move its status does not allow is ECONFLICT (409). It returns the
// invoice as it now is.
func (s *Service) move(tx *gorm.DB, id int64, to invoicestore.Status, set map[string]any) (*invoicestore.Invoice, error) {
	inv, err := invoicestore.Lock(tx, id)
	if err != nil {
		return nil, err
	}
	if !inv.Status.Can(to) {
		return nil, conflict(inv, to)
	}
	changed, err := invoicestore.Move(tx, id, inv.Status, to, set)
	if err != nil {
		return nil, err
	}
	if !changed {
		return nil, conflict(inv, to)
	}
	return invoicestore.Lock(tx, id)
}

// conflict is the refusal of a move the invoice's status does not allow.
func conflict(inv *invoicestore.Invoice, to invoicestore.Status) error {
	return &apperr.Error{Code: apperr.ECONFLICT, Key: "invoice.err.status", Args: []any{inv.ID},
		Message: fmt.Sprintf("invoice %d is %s: it cannot become %s", inv.ID, inv.Status, to)}
}

// Month is the organisation's invoices of a month (YYYY-MM, by Date),
// for its accountant's CSV.
func (s *Service) Month(ctx context.Context, u *models.User, orgID int64, month string) (*models.Org, []invoicestore.Invoice, error) {
	org, _, err := s.Accounts.Authorize(ctx, u, orgID, accounts.ViewWallet)
	if err != nil {
		return nil, nil, err
	}
	m, err := ParseMonth(month)
	if err != nil {
		return nil, nil, err
	}
	invs, err := invoicestore.InMonth(ctx, s.DB, org.ID, m)
	return org, invs, err
}
