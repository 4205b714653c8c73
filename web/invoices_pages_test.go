package web_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/locales"
	"suanli/models"
	"suanli/models/invoicestore"
	"suanli/pricing"
	"suanli/routenames"
)

// postIssue sends the admin's issue form as a browser does: multipart,
// the CSRF token first (withToken false leaves it out), then the number,
// the date and the file.
func postIssue(t *testing.T, ac *actor, id int64, number, date string, file []byte, withToken bool) (*http.Response, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if withToken {
		_ = mw.WriteField("_csrf", ac.csrf())
	}
	_ = mw.WriteField("number", number)
	_ = mw.WriteField("issue_date", date)
	if file != nil {
		fw, _ := mw.CreateFormFile("file", "invoice.pdf")
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	req, _ := http.NewRequest("POST", ac.a.srv.URL+ac.a.url(routenames.AdminInvoicesIssue, idParam(id)), &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept-Language", "en")
	res, err := ac.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// The invoices pages, end to end on both databases: the request form
// without JavaScript (messages beside the fields, 422), the list with its
// status chips, the admin's queue and issue form (the file's type and
// size checked, the body bounded, the CSRF token first), the download
// (the organisation's people only), the accountant's CSV, and the refund
// form that says to reverse the invoice first.
func TestInvoicePagesEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		sfx := strings.ToLower(randomHex(t))
		w := newInvoiceWorld(t, a, "inv-page-"+sfx+"@example.com", 50_000)
		owner := loggedIn(a, "owner", w.payer)
		admin := loggedIn(a, "platform admin", w.root)
		outsider := loggedIn(a, "outsider", mustUser(t, db, "inv-out-"+sfx+"@example.com", "Olly Outsider", false))
		anon := newActor(a, "anonymous")
		page := a.url(routenames.InvoicesPage, idParam(w.org))

		res, body := owner.do("GET", page, nil)
		must(t, res.StatusCode == 200, "page: %d %s", res.StatusCode, snippet(body))
		contains(t, body, `id="invoiceable"`, "¥500.00", `id="invoice-form"`, `name="kind" value="special"`, `value="500"`)
		// The optional address is told that the invoice was issued; the
		// form says so, and that the file is the members' download.
		contains(t, body, "Also notify (optional)", `id="invoice-email-hint"`, en("invoice.f.email_hint"))
		for _, p := range markupProblems(body) {
			t.Errorf("invoices page: %s", p)
		}
		res, _ = outsider.do("GET", page, nil)
		must(t, res.StatusCode == 404, "another org's user: %d", res.StatusCode)

		// Bad input: the form again, 422, each message beside its field.
		form := url.Values{"kind": {"normal"}, "title": {"成都天府机器人有限公司"}, "taxpayer_id": {"91350100M000100Y43"}, "amount": {"600"}}
		res, body = owner.post(page, form)
		must(t, res.StatusCode == 422, "above invoiceable: %d", res.StatusCode)
		must(t, strings.Contains(fieldMessage(body, "amount"), "At most ¥500 can be invoiced"), "amount's message: %q", fieldMessage(body, "amount"))
		contains(t, body, `value="成都天府机器人有限公司"`)
		form.Set("amount", "100")
		form.Set("kind", "special")
		form.Set("taxpayer_id", "91350100M000100Y44")
		res, body = owner.post(page, form)
		must(t, res.StatusCode == 422, "special without its details: %d", res.StatusCode)
		must(t, strings.Contains(fieldMessage(body, "taxpayer_id"), "check character"), "taxpayer's message: %q", fieldMessage(body, "taxpayer_id"))
		for _, f := range []string{"address", "phone", "bank", "bank_account"} {
			must(t, fieldMessage(body, f) == "Required for a special VAT invoice.", "%s's message: %q", f, fieldMessage(body, f))
		}
		for _, p := range markupProblems(body) {
			t.Errorf("invoices page with errors: %s", p)
		}
		res, body = owner.post(page, url.Values{"kind": {"normal"}, "title": {"x"}, "amount": {"abc"}})
		must(t, res.StatusCode == 422 && fieldMessage(body, "amount") != "", "an amount that is no number: %d %q", res.StatusCode, fieldMessage(body, "amount"))
		must(t, countInvoices(t, db, w.org) == 0, "a refused form stored an invoice")

		// A person's own normal invoice; a title a spreadsheet would run.
		res, _ = owner.post(page, url.Values{"kind": {"normal"}, "title": {"=HYPERLINK(\"http://x\")"}, "amount": {"300"}})
		must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == page, "request: %d %s", res.StatusCode, res.Header.Get("Location"))
		res, body = owner.do("GET", page, nil)
		contains(t, body, "Invoice requested", "Requested", "status-pending", "¥200.00")
		inv := latestInvoice(t, db, w.org)

		// The admin's queue, the hub's card (htmx) and the invoice's page.
		res, body = admin.do("GET", a.url(routenames.AdminInvoices), nil)
		must(t, res.StatusCode == 200, "queue: %d", res.StatusCode)
		contains(t, body, fmt.Sprintf(`id="admin-invoices-%d"`, inv.ID), "1 to issue")
		for _, p := range markupProblems(body) {
			t.Errorf("admin queue: %s", p)
		}
		res, body = admin.do("GET", a.url(routenames.AdminInvoices)+"?card=1", nil, "HX-Request", "true")
		must(t, res.StatusCode == 200 && !strings.Contains(body, "<html") && strings.Contains(body, fmt.Sprintf(`id="admin-invoices-waiting-%d"`, inv.ID)), "card: %d %s", res.StatusCode, snippet(body))
		res, body = admin.do("GET", a.url(routenames.AdminHome), nil)
		contains(t, body, `id="admin-invoices-card"`, `href="/admin/invoices"`)
		show := a.url(routenames.AdminInvoicesShow, idParam(inv.ID))
		res, body = admin.do("GET", show, nil)
		must(t, res.StatusCode == 200, "admin's invoice page: %d", res.StatusCode)
		contains(t, body, `id="invoice-issue"`, `enctype="multipart/form-data"`, `id="invoice-reject"`, w.payer.Email)
		for _, p := range markupProblems(body) {
			t.Errorf("admin invoice page: %s", p)
		}

		// The issue form: the file's type and size, the CSRF token first.
		today := db.Now().In(pricing.Shanghai).Format("2006-01-02")
		number := "26510000000000000777"
		res, body = postIssue(t, admin, inv.ID, number, today, []byte("\x89PNG\r\n\x1a\nnot a pdf"), true)
		must(t, res.StatusCode == 422 && strings.Contains(fieldMessage(body, "issue-file"), "Only PDF or OFD"), "a PNG: %d %q", res.StatusCode, fieldMessage(body, "issue-file"))
		contains(t, body, `value="`+number+`"`)
		big := append(append([]byte{}, testPDF...), bytes.Repeat([]byte("0"), 10<<20)...)
		res, body = postIssue(t, admin, inv.ID, number, today, big, true)
		must(t, res.StatusCode == 422 && strings.Contains(fieldMessage(body, "issue-file"), "at most 10 MiB"), "11 MiB... over the file limit: %d %q", res.StatusCode, fieldMessage(body, "issue-file"))
		res, _ = postIssue(t, admin, inv.ID, number, today, append(big, bytes.Repeat([]byte("0"), 1<<20)...), true)
		must(t, res.StatusCode == http.StatusRequestEntityTooLarge, "a body over the route's limit: %d", res.StatusCode)
		res, body = postIssue(t, admin, inv.ID, "123", today, nil, true)
		must(t, res.StatusCode == 422 && fieldMessage(body, "issue-number") != "" && strings.Contains(fieldMessage(body, "issue-file"), "Upload"), "short number, no file: %d", res.StatusCode)
		res, _ = postIssue(t, admin, inv.ID, number, today, testPDF, false)
		must(t, res.StatusCode == http.StatusForbidden, "without the CSRF token: %d", res.StatusCode)
		res, _ = postIssue(t, owner, inv.ID, number, today, testPDF, true)
		must(t, res.StatusCode == http.StatusForbidden, "the payer issues: %d", res.StatusCode)
		must(t, latestInvoice(t, db, w.org).Status == invoicestore.Requested, "a refused issue changed the invoice")
		res, _ = postIssue(t, admin, inv.ID, number, today, testPDF, true)
		must(t, res.StatusCode == http.StatusSeeOther, "issue: %d", res.StatusCode)
		res, body = admin.do("GET", show, nil)
		contains(t, body, "Issued", number, `id="invoice-reverse"`, `id="invoice-void"`)
		for _, p := range markupProblems(body) {
			t.Errorf("admin invoice page, issued: %s", p)
		}

		// The download: the organisation's people and platform admins.
		file := a.url(routenames.InvoicesFile, idParam(w.org), idParam(inv.ID))
		res, body = owner.do("GET", page, nil)
		contains(t, body, `href="`+file+`"`, "Download PDF", number)
		for _, p := range markupProblems(body) {
			t.Errorf("invoices page with an issued invoice: %s", p)
		}
		res, body = owner.do("GET", file, nil)
		must(t, res.StatusCode == 200 && body == string(testPDF) && res.Header.Get("Content-Type") == "application/pdf", "download: %d %s", res.StatusCode, res.Header)
		mustInvoiceFileHeaders(t, res.Header, "fapiao-"+number+".pdf")
		res, _ = admin.do("GET", file, nil)
		must(t, res.StatusCode == 200, "the platform admin downloads: %d", res.StatusCode)
		res, _ = outsider.do("GET", file, nil)
		must(t, res.StatusCode == 404, "another org's user downloads: %d", res.StatusCode)
		res, _ = anon.do("GET", file, nil)
		must(t, res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/login"), "logged out: %d %s", res.StatusCode, res.Header.Get("Location"))

		// The accountant's CSV of the month.
		month := db.Now().In(pricing.Shanghai).Format("2006-01")
		res, body = owner.do("GET", a.url(routenames.InvoicesCSV, idParam(w.org))+"?month="+month, nil)
		must(t, res.StatusCode == 200 && strings.HasPrefix(body, "\uFEFF"), "CSV: %d", res.StatusCode)
		rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\uFEFF"))).ReadAll()
		must(t, err == nil && len(rows) == 2, "CSV rows: %v %q", err, body)
		must(t, strings.Join(rows[0], ",") == "invoice_id,number,date,kind,title,taxpayer_id,amount_cny,status,red_number,reason", "header %v", rows[0])
		want := []string{idParam(inv.ID), number, today, "normal", `'=HYPERLINK("http://x")`, "", "300", "issued", "", ""}
		must(t, strings.Join(rows[1], "|") == strings.Join(want, "|"), "row %q, want %q", rows[1], want)
		res, body = owner.do("GET", a.url(routenames.InvoicesCSV, idParam(w.org))+"?month=2001-01", nil)
		must(t, res.StatusCode == 200 && strings.Count(body, "\n") == 1, "another month: %q", body)
		res, _ = owner.do("GET", a.url(routenames.InvoicesCSV, idParam(w.org))+"?month=13", nil)
		must(t, res.StatusCode == 422 || res.StatusCode == 400, "a bad month: %d", res.StatusCode)
		res, body = admin.do("GET", a.url(routenames.AdminInvoicesCSV)+"?month="+month, nil)
		must(t, res.StatusCode == 200 && strings.Contains(body, "org_id,org_name,invoice_id") && strings.Contains(body, number), "admin CSV: %d %q", res.StatusCode, body)
		res, _ = owner.do("GET", a.url(routenames.AdminInvoicesCSV), nil)
		must(t, res.StatusCode == 403, "the payer reads the admin CSV: %d", res.StatusCode)

		// The refund form says to reverse the invoice first, beside its field.
		wallet := a.url(routenames.WalletShow, idParam(w.org))
		res, body = owner.do("GET", wallet, nil)
		contains(t, body, `id="wallet-invoices"`, `href="`+page+`"`)
		res, body = owner.post(a.url(routenames.WalletRefund, idParam(w.org)), url.Values{"refund_amount": {"500"}})
		msg := fieldMessage(body, "refund_amount")
		must(t, res.StatusCode == 422 && strings.Contains(msg, "reversed") && strings.Contains(msg, number) && strings.Contains(msg, "¥200"), "refund of invoiced money: %d %q", res.StatusCode, msg)
		// Reversed (红冲) by the admin, the money is refundable.
		res, body = admin.post(a.url(routenames.AdminInvoicesReverse, idParam(inv.ID)), url.Values{"red_number": {"123"}})
		must(t, res.StatusCode == 422 && fieldMessage(body, "reverse-red_number") != "", "a short red-letter number: %d", res.StatusCode)
		res, _ = admin.post(a.url(routenames.AdminInvoicesReverse, idParam(inv.ID)), url.Values{"red_number": {"26510000000000000778"}, "reason": {"客户退款"}})
		must(t, res.StatusCode == http.StatusSeeOther, "reverse: %d", res.StatusCode)
		res, _ = admin.post(a.url(routenames.AdminInvoicesVoid, idParam(inv.ID)), url.Values{"reason": {"again"}})
		must(t, res.StatusCode == http.StatusConflict, "void a reversed invoice: %d", res.StatusCode)
		res, body = owner.post(a.url(routenames.WalletRefund, idParam(w.org)), url.Values{"refund_amount": {"500"}})
		must(t, res.StatusCode == http.StatusSeeOther, "refund after the reversal: %d %q", res.StatusCode, fieldMessage(body, "refund_amount"))

		// The receipt points to the invoices.
		var tp models.Topup
		if err := db.R.Where("org_id = ?", w.org).First(&tp).Error; err != nil {
			t.Fatal(err)
		}
		res, body = owner.do("GET", a.url(routenames.TopupsShow, idParam(tp.ID)), nil)
		contains(t, body, `id="receipt-note"`, "not a VAT invoice", `id="receipt-invoices"`, `href="`+page+`"`)
	})
}

// The invoices page in Chinese: the glossary's words.
func TestInvoicePageInChinese(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	w := newInvoiceWorld(t, a, "inv-zh@example.com", 10_000)
	owner := loggedIn(a, "owner", w.payer)
	res, body := owner.do("GET", a.url(routenames.InvoicesPage, idParam(w.org)), nil, inLang(locales.ZH)...)
	must(t, res.StatusCode == 200, "page: %d", res.StatusCode)
	contains(t, body, "发票", "普通发票（普票）", "增值税专用发票（专票）", "发票抬头", "纳税人识别号", "红冲", "作废")
	for _, p := range markupProblems(body) {
		t.Errorf("zh-CN: %s", p)
	}
}

// countInvoices is how many invoices the organisation has.
func countInvoices(t *testing.T, db *models.DB, orgID int64) int {
	t.Helper()
	invs, err := invoicestore.OfOrg(context.Background(), db, orgID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(invs)
}

// latestInvoice is the organisation's newest invoice.
func latestInvoice(t *testing.T, db *models.DB, orgID int64) invoicestore.Invoice {
	t.Helper()
	invs, err := invoicestore.OfOrg(context.Background(), db, orgID, 1)
	if err != nil || len(invs) == 0 {
		t.Fatalf("no invoice: %v", err)
	}
	return invs[0]
}

// mustInvoiceFileHeaders checks a served invoice file's headers: saved
// (never shown) under its ASCII name and RFC 5987's filename*, never
// sniffed, never cached, and sandboxed should a browser open it anyway.
func mustInvoiceFileHeaders(t *testing.T, h http.Header, name string) {
	t.Helper()
	want := `attachment; filename="` + name + `"; filename*=UTF-8''` + name
	must(t, h.Get("Content-Disposition") == want, "Content-Disposition %q, want %q", h.Get("Content-Disposition"), want)
	must(t, h.Get("X-Content-Type-Options") == "nosniff", "X-Content-Type-Options %q", h.Get("X-Content-Type-Options"))
	must(t, strings.Contains(h.Get("Cache-Control"), "no-store"), "Cache-Control %q", h.Get("Cache-Control"))
	sandboxed := false
	for _, d := range strings.Split(h.Get("Content-Security-Policy"), ";") {
		sandboxed = sandboxed || strings.TrimSpace(d) == "sandbox"
	}
	must(t, sandboxed && strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'"), "Content-Security-Policy %q", h.Get("Content-Security-Policy"))
}
