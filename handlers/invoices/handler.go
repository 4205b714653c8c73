// Package invoices holds the handlers of VAT invoices (发票): the API of an
// organisation's invoices (/api/v1/orgs/{id}/invoices…), its invoices page
// with the request form and the accountant's monthly CSV, the download of
// an issued invoice's file, and the platform admins' queue and invoice
// page, where they issue (number, date, the tax system's PDF or OFD),
// reject, void (作废) or reverse (红冲) invoices. Each binds, calls package
// invoices and answers; the rules are there.
package invoices

import (
	"mime"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/invoices"
	"suanli/models/invoicestore"
	"suanli/routenames"
)

// Handler serves the invoice endpoints and pages.
type Handler struct{ *handlers.Handler }

// svc is the use case on the handler's services.
func (h *Handler) svc() *invoices.Service {
	return &invoices.Service{DB: h.DB, Accounts: h.Accounts, BaseURL: h.Accounts.BaseURL}
}

// orgID is the route's :id, an organisation.
func orgID(c echo.Context) (int64, error) { return handlers.ParseID(c, "id", "organisation") }

// invoiceID is the route's :invoice_id.
func invoiceID(c echo.Context) (int64, error) { return handlers.ParseID(c, "invoice_id", "invoice") }

// contentTypes are the files' media types: OFD's is registered as
// application/ofd (GB/T 33190).
var contentTypes = map[string]string{invoicestore.FilePDF: "application/pdf", invoicestore.FileOFD: "application/ofd"}

// sendFile answers an issued invoice's file as an attachment named for
// its number.
func sendFile(c echo.Context, inv *invoicestore.Invoice, f *invoicestore.File) error {
	name := "fapiao-" + inv.NumberOrEmpty() + "." + inv.FileType
	if inv.NumberOrEmpty() == "" {
		name = "fapiao-" + strconv.FormatInt(inv.ID, 10) + "." + inv.FileType
	}
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "private, no-store")
	ct := contentTypes[inv.FileType]
	if ct == "" {
		ct = "application/octet-stream"
	}
	return c.Blob(http.StatusOK, ct, f.Data)
}

// fileAPIURL is where the API downloads an issued invoice's file.
func fileAPIURL(c echo.Context, inv *invoicestore.Invoice) string {
	return c.Echo().Reverse(routenames.APIInvoicesFile, strconv.FormatInt(inv.OrgID, 10), strconv.FormatInt(inv.ID, 10))
}
