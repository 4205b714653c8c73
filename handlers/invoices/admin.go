package invoices

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/invoices"
	"suanli/models/invoicestore"
	"suanli/models/platform"
	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/invoicepages"
)

// Admin list sizes.
const (
	// adminPerPage is the queue page's length.
	adminPerPage = 100
	// cardRows is how many waiting invoices the hub's card lists.
	cardRows = 10
)

// adminRows are invoices with their organisations' names.
func (h *Handler) adminRows(c echo.Context, invs []invoicestore.Invoice) ([]invoicepages.AdminRow, error) {
	ids := make([]int64, 0, len(invs))
	for _, inv := range invs {
		ids = append(ids, inv.OrgID)
	}
	names, err := platform.OrgNames(c.Request().Context(), h.DB, ids)
	if err != nil {
		return nil, err
	}
	out := make([]invoicepages.AdminRow, len(invs))
	for i := range invs {
		out[i] = invoicepages.AdminRow{Row: row(&invs[i], nil, false), OrgName: names[invs[i].OrgID]}
	}
	return out, nil
}

// AdminList is GET /admin/invoices (?page): the queue. Asked by htmx with
// card=1 it answers the hub's card: the oldest waiting invoices.
func (h *Handler) AdminList(c echo.Context) error {
	card := handlers.IsHTMX(c) && c.QueryParam("card") == "1"
	page := 1
	if p := c.QueryParam("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100000 {
			return &apperr.Error{Code: apperr.EINVALID, Field: "page", Message: "page must be a positive integer", Key: "invoice.err.page"}
		}
		page = n
	}
	limit := adminPerPage
	if card {
		page, limit = 1, cardRows
	}
	invs, total, waiting, err := h.svc().Queue(c.Request().Context(), handlers.CurrentUser(c), (page-1)*limit, limit)
	if err != nil {
		return err
	}
	vm := invoicepages.AdminListVM{Waiting: waiting, Total: total, Page: page, Pages: max(1, int((total+int64(limit)-1)/int64(limit))), Month: h.thisMonth()}
	if card {
		var waitingRows []invoicestore.Invoice
		for _, inv := range invs {
			if inv.Status == invoicestore.Requested {
				waitingRows = append(waitingRows, inv)
			}
		}
		invs = waitingRows
	}
	if vm.Rows, err = h.adminRows(c, invs); err != nil {
		return err
	}
	vc := handlers.ViewCtx(c)
	if card {
		return handlers.Render(c, http.StatusOK, invoicepages.AdminCard(vc, vm))
	}
	base := c.Echo().Reverse(routenames.AdminInvoices)
	if page > 1 {
		vm.PrevURL = base + "?page=" + strconv.Itoa(page-1)
	}
	if page < vm.Pages {
		vm.NextURL = base + "?page=" + strconv.Itoa(page+1)
	}
	return handlers.Render(c, http.StatusOK, invoicepages.AdminList(vc, vm))
}

// AdminCSV is GET /admin/invoices.csv?month=YYYY-MM (this month without
// one): every organisation's invoices of the month, by their date.
func (h *Handler) AdminCSV(c echo.Context) error {
	month := views.Or(c.QueryParam("month"), h.thisMonth())
	invs, err := h.svc().MonthAll(c.Request().Context(), handlers.CurrentUser(c), month)
	if err != nil {
		return err
	}
	ids := make([]int64, 0, len(invs))
	for _, inv := range invs {
		ids = append(ids, inv.OrgID)
	}
	names, err := platform.OrgNames(c.Request().Context(), h.DB, ids)
	if err != nil {
		return err
	}
	w, err := handlers.CSVAttachment(c, "suanli-invoices-"+month+".csv", append([]string{"org_id", "org_name"}, csvHeader...)...)
	if err != nil {
		return err
	}
	for i := range invs {
		_ = w.Write(append([]string{strconv.FormatInt(invs[i].OrgID, 10), handlers.CSVText(names[invs[i].OrgID])}, csvRow(&invs[i])...))
	}
	w.Flush()
	return w.Error()
}

// adminForms are the admin page's forms, as submitted or empty.
type adminForms struct{ issue, reject, void, reverse views.Form }

func emptyForm() views.Form {
	return views.Form{Values: map[string]string{}, Errors: map[string]string{}}
}

// AdminShow is GET /admin/invoices/{id}.
func (h *Handler) AdminShow(c echo.Context) error {
	return h.renderAdmin(c, http.StatusOK, adminForms{emptyForm(), emptyForm(), emptyForm(), emptyForm()})
}

// renderAdmin renders the admin's invoice page with its forms.
func (h *Handler) renderAdmin(c echo.Context, status int, forms adminForms) error {
	id, err := handlers.ParseID(c, "id", "invoice")
	if err != nil {
		return err
	}
	inv, err := h.svc().Admin(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	rows, err := h.adminRows(c, []invoicestore.Invoice{*inv})
	if err != nil {
		return err
	}
	vm := invoicepages.AdminShowVM{Invoice: rows[0], Issue: forms.issue, Reject: forms.reject, Void: forms.void, Reverse: forms.reverse,
		MaxFileMiB: invoices.MaxFileBytes >> 20}
	if u, err := h.DB.UserByID(c.Request().Context(), inv.UserID); err == nil {
		vm.RequesterName, vm.RequesterEmail = u.Name, u.Email
	}
	if vm.Issue.Get("issue_date") == "" {
		vm.Issue.Values["issue_date"] = h.DB.Now().In(pricing.Shanghai).Format("2006-01-02")
	}
	return handlers.Render(c, status, invoicepages.AdminShow(handlers.ViewCtx(c), vm))
}

// adminDone answers an admin's successful action: a flash, and the
// invoice's page again.
func (h *Handler) adminDone(c echo.Context, id int64, key string) error {
	h.Flash(c, key, id)
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminInvoicesShow, strconv.FormatInt(id, 10)))
}

// adminFailed shows the page again (422) with the form's messages, or
// returns err when it is not about the form's fields.
func (h *Handler) adminFailed(c echo.Context, err error, f views.Form, set func(*adminForms, views.Form)) error {
	f, ok := handlers.WithErrors(c, f, err)
	if !ok {
		return err
	}
	forms := adminForms{emptyForm(), emptyForm(), emptyForm(), emptyForm()}
	set(&forms, f)
	return h.renderAdmin(c, http.StatusUnprocessableEntity, forms)
}

// AdminReject is POST /admin/invoices/{id}/reject (reason).
func (h *Handler) AdminReject(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "invoice")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "reason")
	if _, err := h.svc().Reject(c.Request().Context(), handlers.CurrentUser(c), id, f.Get("reason")); err != nil {
		return h.adminFailed(c, err, f, func(fs *adminForms, f views.Form) { fs.reject = f })
	}
	return h.adminDone(c, id, "invoice.admin.rejected")
}

// AdminVoid is POST /admin/invoices/{id}/void (reason).
func (h *Handler) AdminVoid(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "invoice")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "reason")
	if _, err := h.svc().Void(c.Request().Context(), handlers.CurrentUser(c), id, f.Get("reason")); err != nil {
		return h.adminFailed(c, err, f, func(fs *adminForms, f views.Form) { fs.void = f })
	}
	return h.adminDone(c, id, "invoice.admin.voided")
}

// AdminReverse is POST /admin/invoices/{id}/reverse (red_number, reason).
func (h *Handler) AdminReverse(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "invoice")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, "red_number", "reason")
	if _, err := h.svc().Reverse(c.Request().Context(), handlers.CurrentUser(c), id, f.Get("red_number"), f.Get("reason")); err != nil {
		return h.adminFailed(c, err, f, func(fs *adminForms, f views.Form) { fs.reverse = f })
	}
	return h.adminDone(c, id, "invoice.admin.reversed")
}

// maxIssueBody bounds the issue form's body: the file at its limit and
// room for the form's other parts and multipart's framing.
const maxIssueBody = invoices.MaxFileBytes + 64<<10

// maxTextPart bounds a text part of the issue form (a number, a date, the
// CSRF token).
const maxTextPart = 256

// AdminIssue is POST /admin/invoices/{id}/issue, a multipart form
// (number, issue_date, file) that this handler reads itself, streaming
// (web's rawBody): the CSRF token first, then each part bounded; the body
// is at most maxIssueBody (413 beyond). A file over the limit, of another
// type or missing is a message beside the file field, as is any other
// field's problem.
func (h *Handler) AdminIssue(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "invoice")
	if err != nil {
		return err
	}
	f := emptyForm()
	var file []byte
	r := c.Request()
	if mt, params, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); mt == echo.MIMEMultipartForm {
		mr := multipart.NewReader(http.MaxBytesReader(c.Response(), r.Body, maxIssueBody), params["boundary"])
		if err := checkToken(c, mr); err != nil {
			return err
		}
		if file, err = readIssueParts(mr, f); err != nil {
			return err
		}
	} else {
		// An ordinary form (no file): its token was checked on the way in.
		f.Values["number"], f.Values["issue_date"] = c.FormValue("number"), c.FormValue("issue_date")
	}
	_, err = h.svc().Issue(r.Context(), handlers.CurrentUser(c), id, invoices.IssueInput{Number: f.Get("number"), IssueDate: f.Get("issue_date"), File: file})
	if err != nil {
		return h.adminFailed(c, err, f, func(fs *adminForms, f views.Form) { fs.issue = f })
	}
	return h.adminDone(c, id, "invoice.admin.issued")
}

// readIssueParts reads the issue form's parts after its token: the text
// fields into f, the file's bytes (at most one byte over the limit, so
// that the use case can say it is too large) returned.
func readIssueParts(mr *multipart.Reader, f views.Form) ([]byte, error) {
	var file []byte
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return file, nil
		}
		if err != nil {
			return nil, bodyError(err)
		}
		switch name := part.FormName(); name {
		case "number", "issue_date":
			b, err := io.ReadAll(io.LimitReader(part, maxTextPart))
			if err != nil {
				return nil, bodyError(err)
			}
			f.Values[name] = string(b)
		case "file":
			b, err := io.ReadAll(io.LimitReader(part, invoices.MaxFileBytes+1))
			if err != nil {
				return nil, bodyError(err)
			}
			file = b
		}
		// The rest of a part (and any other part) is skipped by NextPart,
		// still within the body's limit.
		_ = part.Close()
	}
}

// bodyError is the answer to a multipart body that could not be read: too
// large (413) or malformed (400).
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apperr.Error{Code: apperr.ETOOLARGE, Field: "body", Key: "request.err.too_large", Args: []any{strconv.Itoa(maxIssueBody>>20) + " MiB"},
			Message: "the request body is larger than this route accepts"}
	}
	return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "could not read the multipart form: " + err.Error()}
}

var errCSRF = &apperr.Error{Code: apperr.EFORBIDDEN, Message: "missing or invalid CSRF token", Key: "err.csrf"}

// checkToken checks a streamed form's CSRF token: X-CSRF-Token, else the
// form's first part, _csrf, read before anything else of the body.
func checkToken(c echo.Context, mr *multipart.Reader) error {
	ok, _ := c.Get(handlers.CSRFCheckKey).(func(string) bool)
	if ok == nil {
		return errCSRF
	}
	if sent := c.Request().Header.Get("X-CSRF-Token"); sent != "" {
		if ok(sent) {
			return nil
		}
		return errCSRF
	}
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "_csrf" {
		return errCSRF
	}
	b, _ := io.ReadAll(io.LimitReader(part, maxTextPart))
	_ = part.Close()
	if !ok(string(b)) {
		return errCSRF
	}
	return nil
}
