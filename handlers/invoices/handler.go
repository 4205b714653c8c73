// Package invoices holds the handlers of VAT invoices (发票): the API of an
// organisation's invoices (/api/v1/orgs/{id}/invoices…), its invoices page
// with the request form and the accountant's monthly CSV, the download of
// an issued invoice's file, and the platform admins' queue and invoice
// page, where they issue (number, date, the tax system's PDF or OFD),
// reject, void (作废) or reverse (红冲) invoices. Each binds, calls package
// invoices and answers; the rules are there.
package invoices

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

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

// fileCSP is the Content-Security-Policy of a served invoice file: a file
// an admin uploaded is never a page of this origin (sandbox: no script,
// no same-origin access) even if a browser opened it instead of saving it.
const fileCSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

// sendFile answers an issued invoice's file as an attachment named for
// its number, sandboxed and never cached.
func sendFile(c echo.Context, inv *invoicestore.Invoice, f *invoicestore.File) error {
	name := "fapiao-" + inv.NumberOrEmpty() + "." + inv.FileType
	if inv.NumberOrEmpty() == "" {
		name = "fapiao-" + strconv.FormatInt(inv.ID, 10) + "." + inv.FileType
	}
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentDisposition, attachment(name))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", fileCSP)
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

// attachment is a Content-Disposition that saves the file as name: a
// plain ASCII filename (every other character an underscore) for old
// clients, and the exact name in RFC 5987's filename* for the rest.
func attachment(name string) string {
	ascii := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_", r)) {
			return r
		}
		return '_'
	}, name)
	var ext strings.Builder
	for _, b := range []byte(name) {
		// RFC 5987 attr-char; everything else percent-encoded.
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!#$&+-.^_`|~", b) >= 0 {
			ext.WriteByte(b)
		} else {
			fmt.Fprintf(&ext, "%%%02X", b)
		}
	}
	return `attachment; filename="` + ascii + `"; filename*=UTF-8''` + ext.String()
}
