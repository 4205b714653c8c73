package invoices

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/invoices"
	"suanli/models"
	"suanli/models/invoicestore"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/invoicepages"
)

// formFields are the request form's fields: the API's, with the amount
// in yuan.
var formFields = []string{"kind", "title", "taxpayer_id", "address", "phone", "bank", "bank_account", "email", "remark", "amount"}

// row is an invoice as the pages list it; me is the reader, admin whether
// they administer its organisation (both only decide CanCancel).
func row(inv *invoicestore.Invoice, me *models.User, admin bool) invoicepages.Row {
	return invoicepages.Row{ID: inv.ID, OrgID: inv.OrgID, Kind: inv.Kind, Title: inv.Title, TaxpayerID: inv.TaxpayerID,
		Address: inv.Address, Phone: inv.Phone, Bank: inv.Bank, BankAccount: inv.BankAccount, Email: inv.Email, Remark: inv.Remark,
		AmountFen: inv.AmountFen, Status: string(inv.Status), Number: inv.NumberOrEmpty(), IssueDate: inv.IssueDate,
		RedNumber: inv.RedNumberOrEmpty(), Date: invoices.Date(inv), Reason: inv.Reason, FileType: inv.FileType, FileSize: inv.FileSize,
		CreatedAt: inv.CreatedAt, HasFile: inv.Status.HasFile(),
		CanCancel: inv.Status == invoicestore.Requested && me != nil && (admin || inv.UserID == me.ID)}
}

// thisMonth is the current month in Asia/Shanghai, YYYY-MM.
func (h *Handler) thisMonth() string { return h.DB.Now().In(pricing.Shanghai).Format("2006-01") }

// Page is GET /orgs/{id}/invoices.
func (h *Handler) Page(c echo.Context) error {
	return h.render(c, http.StatusOK, views.Form{Values: map[string]string{}, Errors: map[string]string{}})
}

// render renders the page with the form as given; an empty form is
// filled from the organisation's billing details and what may be invoiced.
func (h *Handler) render(c echo.Context, status int, f views.Form) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	u := handlers.CurrentUser(c)
	list, err := h.svc().List(c.Request().Context(), u, id)
	if err != nil {
		return err
	}
	if len(f.Values) == 0 {
		f.Values["kind"] = invoicestore.Normal
		f.Values["title"] = views.Or(list.Org.InvoiceTitle, list.Org.Name)
		f.Values["taxpayer_id"] = list.Org.TaxID
		if list.InvoiceableFen > 0 {
			f.Values["amount"] = pricing.FenToYuanString(list.InvoiceableFen)
		}
	}
	vm := invoicepages.PageVM{OrgID: list.Org.ID, OrgName: list.Org.Name, InvoiceableFen: list.InvoiceableFen, CanRequest: list.CanRequest,
		Form: f, Month: h.thisMonth()}
	for i := range list.Invoices {
		vm.Invoices = append(vm.Invoices, row(&list.Invoices[i], u, list.CanRequest))
	}
	return handlers.Render(c, status, invoicepages.Page(handlers.ViewCtx(c), vm))
}

// Create is POST /orgs/{id}/invoices: the request form. Bad input shows
// the page again (422) with each message beside its field.
func (h *Handler) Create(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, formFields...)
	fen, e := handlers.YuanField(f, "amount")
	if e != nil || fen == nil {
		f.Errors["amount"] = handlers.ViewCtx(c).T("err.amount")
		return h.render(c, http.StatusUnprocessableEntity, f)
	}
	_, err = h.svc().Request(c.Request().Context(), handlers.CurrentUser(c), id, invoices.Input{Kind: f.Get("kind"), Title: f.Get("title"),
		TaxpayerID: f.Get("taxpayer_id"), Address: f.Get("address"), Phone: f.Get("phone"), Bank: f.Get("bank"),
		BankAccount: f.Get("bank_account"), Email: f.Get("email"), Remark: f.Get("remark"), AmountFen: *fen})
	if err == nil {
		h.Flash(c, "invoice.requested")
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.InvoicesPage, strconv.FormatInt(id, 10)))
	}
	err = renamed(err, invoices.FieldAmount, "amount")
	f, ok := handlers.WithErrors(c, f, err)
	if !ok {
		return err
	}
	return h.render(c, http.StatusUnprocessableEntity, f)
}

// renamed renames a use case's field in its input errors to the form's.
func renamed(err error, from, to string) error {
	var fe apperr.Fields
	if errors.As(err, &fe) {
		for _, e := range fe {
			if e.Field == from {
				e.Field = to
			}
		}
	} else if ae, ok := apperr.As(err); ok && ae.Field == from {
		ae.Field = to
	}
	return err
}

// Cancel is POST /orgs/{id}/invoices/{invoice_id}/cancel.
func (h *Handler) Cancel(c echo.Context) error {
	oid, iid, err := ids(c)
	if err != nil {
		return err
	}
	if _, err := h.svc().Cancel(c.Request().Context(), handlers.CurrentUser(c), oid, iid); err != nil {
		return err
	}
	h.Flash(c, "invoice.cancelled")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.InvoicesPage, strconv.FormatInt(oid, 10)))
}

// File is GET /orgs/{id}/invoices/{invoice_id}/file: the issued invoice's
// PDF or OFD, for anyone who may see the organisation's wallet (and
// platform admins).
func (h *Handler) File(c echo.Context) error {
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

// csvHeader is the monthly CSV's header: what an accountant books.
var csvHeader = []string{"invoice_id", "number", "date", "kind", "title", "taxpayer_id", "amount_cny", "status", "red_number", "reason"}

// csvRow is one invoice as the monthly CSV writes it.
func csvRow(inv *invoicestore.Invoice) []string {
	return []string{strconv.FormatInt(inv.ID, 10), inv.NumberOrEmpty(), invoices.Date(inv), inv.Kind, handlers.CSVText(inv.Title),
		handlers.CSVText(inv.TaxpayerID), handlers.CSVYuan(inv.AmountFen), string(inv.Status), inv.RedNumberOrEmpty(), handlers.CSVText(inv.Reason)}
}

// CSV is GET /orgs/{id}/invoices.csv?month=YYYY-MM (this month without
// one): the organisation's invoices of the month, by their date.
func (h *Handler) CSV(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	month := views.Or(c.QueryParam("month"), h.thisMonth())
	_, invs, err := h.svc().Month(c.Request().Context(), handlers.CurrentUser(c), id, month)
	if err != nil {
		return err
	}
	w, err := handlers.CSVAttachment(c, "suanli-invoices-"+strconv.FormatInt(id, 10)+"-"+month+".csv", csvHeader...)
	if err != nil {
		return err
	}
	for i := range invs {
		_ = w.Write(csvRow(&invs[i]))
	}
	w.Flush()
	return w.Error()
}
