package invoices

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/invoices"
	"suanli/models/invoicestore"
)

// Invoice is an invoice in the API.
type Invoice struct {
	ID    int64 `json:"id"`
	OrgID int64 `json:"org_id"`
	// Kind is normal (普票) or special (专票).
	Kind string `json:"kind"`
	// Status is requested, issued, voided, reversed, cancelled or rejected.
	Status      string `json:"status"`
	Title       string `json:"title"`
	TaxpayerID  string `json:"taxpayer_id"`
	Address     string `json:"address"`
	Phone       string `json:"phone"`
	Bank        string `json:"bank"`
	BankAccount string `json:"bank_account"`
	Email       string `json:"email"`
	Remark      string `json:"remark"`
	AmountFen   int64  `json:"amount_fen"`
	Currency    string `json:"currency"`
	// Number and IssueDate are the tax system's, once issued (null before).
	Number    *string `json:"number"`
	IssueDate *string `json:"issue_date"`
	// File is the issued invoice's file (null before it is issued).
	File *File `json:"file"`
	// RedNumber is the red-letter invoice's number of a reversed invoice.
	RedNumber *string `json:"red_number"`
	// Reason is why it was rejected, voided or reversed ("" none).
	Reason      string     `json:"reason"`
	RequestedBy int64      `json:"requested_by"`
	CreatedAt   time.Time  `json:"created_at"`
	IssuedAt    *time.Time `json:"issued_at"`
	EndedAt     *time.Time `json:"ended_at"`
}

// File is an issued invoice's file in the API.
type File struct {
	// Type is pdf or ofd.
	Type string `json:"type"`
	Size int64  `json:"size"`
	// URL downloads it (GET, with the same credentials).
	URL string `json:"url"`
}

// invoiceJSON is inv as the API shows it.
func invoiceJSON(c echo.Context, inv *invoicestore.Invoice) Invoice {
	out := Invoice{ID: inv.ID, OrgID: inv.OrgID, Kind: inv.Kind, Status: string(inv.Status), Title: inv.Title, TaxpayerID: inv.TaxpayerID,
		Address: inv.Address, Phone: inv.Phone, Bank: inv.Bank, BankAccount: inv.BankAccount, Email: inv.Email, Remark: inv.Remark,
		AmountFen: inv.AmountFen, Currency: "cny", Number: inv.Number, RedNumber: inv.RedNumber, Reason: inv.Reason,
		RequestedBy: inv.UserID, CreatedAt: inv.CreatedAt.UTC()}
	if inv.IssueDate != "" {
		d := inv.IssueDate
		out.IssueDate = &d
	}
	if inv.Status.HasFile() {
		out.File = &File{Type: inv.FileType, Size: inv.FileSize, URL: fileAPIURL(c, inv)}
	}
	if inv.IssuedAt != nil {
		t := inv.IssuedAt.UTC()
		out.IssuedAt = &t
	}
	if inv.EndedAt != nil {
		t := inv.EndedAt.UTC()
		out.EndedAt = &t
	}
	return out
}

// APIList is GET /api/v1/orgs/{id}/invoices (?month=YYYY-MM): the
// organisation's invoices, newest first (those of the month, by their
// date, when month is given), and what may still be invoiced, for anyone
// who may see its wallet.
func (h *Handler) APIList(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	list, err := h.svc().List(ctx, u, id)
	if err != nil {
		return err
	}
	invs := list.Invoices
	if month := c.QueryParam("month"); month != "" {
		if _, invs, err = h.svc().Month(ctx, u, id, month); err != nil {
			return err
		}
		// Newest first, as without a month.
		for i, j := 0, len(invs)-1; i < j; i, j = i+1, j-1 {
			invs[i], invs[j] = invs[j], invs[i]
		}
	}
	out := make([]Invoice, len(invs))
	for i := range invs {
		out[i] = invoiceJSON(c, &invs[i])
	}
	return c.JSON(http.StatusOK, map[string]any{"org_id": list.Org.ID, "invoices": out, "invoiceable_fen": list.InvoiceableFen, "currency": "cny"})
}

// InvoiceRequest is the body of POST /api/v1/orgs/{id}/invoices.
type InvoiceRequest struct {
	Kind        string `json:"kind"`
	Title       string `json:"title"`
	TaxpayerID  string `json:"taxpayer_id"`
	Address     string `json:"address"`
	Phone       string `json:"phone"`
	Bank        string `json:"bank"`
	BankAccount string `json:"bank_account"`
	Email       string `json:"email"`
	Remark      string `json:"remark"`
	AmountFen   int64  `json:"amount_fen"`
}

// APICreate is POST /api/v1/orgs/{id}/invoices: asks for an invoice, for
// the organisation's admins. Its fields are checked together: 422 naming
// each bad one (amount_fen above what may be invoiced, taxpayer_id that
// fails its check character…); 201 with the invoice, requested.
func (h *Handler) APICreate(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	var in InvoiceRequest
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		if e := apperr.WrongJSONType(err); e != nil {
			return e
		}
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: `want JSON {"kind":"normal"|"special","title":"…","taxpayer_id":"…","amount_fen":N,…}: ` + err.Error()}
	}
	inv, err := h.svc().Request(c.Request().Context(), handlers.CurrentUser(c), id, invoices.Input{Kind: in.Kind, Title: in.Title,
		TaxpayerID: in.TaxpayerID, Address: in.Address, Phone: in.Phone, Bank: in.Bank, BankAccount: in.BankAccount,
		Email: in.Email, Remark: in.Remark, AmountFen: in.AmountFen})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, invoiceJSON(c, inv))
}

// APIShow is GET /api/v1/orgs/{id}/invoices/{invoice_id}.
func (h *Handler) APIShow(c echo.Context) error {
	oid, iid, err := ids(c)
	if err != nil {
		return err
	}
	inv, err := h.svc().Get(c.Request().Context(), handlers.CurrentUser(c), oid, iid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, invoiceJSON(c, inv))
}

// APICancel is POST /api/v1/orgs/{id}/invoices/{invoice_id}/cancel:
// withdraws a requested invoice (409 once it is anything else), for who
// asked for it or the organisation's admins.
func (h *Handler) APICancel(c echo.Context) error {
	oid, iid, err := ids(c)
	if err != nil {
		return err
	}
	inv, err := h.svc().Cancel(c.Request().Context(), handlers.CurrentUser(c), oid, iid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, invoiceJSON(c, inv))
}

// APIFile is GET /api/v1/orgs/{id}/invoices/{invoice_id}/file: the issued
// invoice's PDF or OFD (404 before it is issued).
func (h *Handler) APIFile(c echo.Context) error {
	oid, iid, err := ids(c)
	if err != nil {
		return err
	}
	inv, f, err := h.svc().File(c.Request().Context(), handlers.CurrentUser(c), oid, iid)
	if err != nil {
		return err
	}
	return sendFile(c, inv, f)
}

// ids are the route's organisation and invoice.
func ids(c echo.Context) (org, invoice int64, err error) {
	if org, err = orgID(c); err != nil {
		return 0, 0, err
	}
	invoice, err = invoiceID(c)
	return org, invoice, err
}
