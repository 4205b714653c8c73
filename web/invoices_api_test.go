package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/invoices"
	"suanli/models"
	"suanli/pricing"
)

// invoiceWorld is a payer with an API token and a personal organisation
// that has paid in, a platform admin, and the invoice use case, for the
// invoice tests.
type invoiceWorld struct {
	a     *app
	payer *models.User
	token string
	org   int64
	root  *models.User
	svc   *invoices.Service
}

// newInvoiceWorld makes the payer (address email), who tops up paidFen by
// bank transfer, confirmed by the platform admin.
func newInvoiceWorld(t *testing.T, a *app, email string, paidFen int64) *invoiceWorld {
	t.Helper()
	ctx := context.Background()
	u, org, token := apiUser(t, a, email)
	root := mustUser(t, a.db, "root-"+email, "Root Admin", true)
	w := &invoiceWorld{a: a, payer: u, token: token, org: org, root: root,
		svc: &invoices.Service{DB: a.db, Accounts: &accounts.Service{DB: a.db}, BaseURL: "http://suanli.test"}}
	if paidFen > 0 {
		wallet := &billing.Wallet{DB: a.db}
		tp, _, err := wallet.StartTopup(ctx, u, org, paidFen, models.MethodBank, "en")
		if err != nil {
			t.Fatal(err)
		}
		if err := wallet.ConfirmBankTransfer(ctx, root, tp.ID, paidFen); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// issue issues an invoice as the platform admin would, with a PDF.
func (w *invoiceWorld) issue(t *testing.T, id int64, number string) {
	t.Helper()
	today := w.a.db.Now().In(pricing.Shanghai).Format("2006-01-02")
	if _, err := w.svc.Issue(context.Background(), w.root, id, invoices.IssueInput{Number: number, IssueDate: today, File: testPDF}); err != nil {
		t.Fatal(err)
	}
}

// testPDF is a tiny file that starts as a PDF does.
var testPDF = []byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")

// apiInvoice is the API's invoice, as the tests read it.
type apiInvoice struct {
	ID        int64   `json:"id"`
	Kind      string  `json:"kind"`
	Status    string  `json:"status"`
	Title     string  `json:"title"`
	AmountFen int64   `json:"amount_fen"`
	Number    *string `json:"number"`
	File      *struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	} `json:"file"`
}

// getRaw sends a GET with a bearer token ("" none) and returns the
// answer with its body.
func getRaw(t *testing.T, a *app, token, path string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := a.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// The invoice API (the public contract): the list with invoiceable_fen,
// a request answered 201, 422 naming amount_fen above what may be
// invoiced and taxpayer_id that fails its check, the issued file for the
// organisation only, and a withdrawal that only a requested invoice
// allows.
func TestInvoicesThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		sfx := strings.ToLower(randomHex(t))
		w := newInvoiceWorld(t, a, "inv-api-"+sfx+"@example.com", 50_000)
		_, _, otherToken := apiUser(t, a, "inv-other-"+sfx+"@example.com")
		base := fmt.Sprintf("/api/v1/orgs/%d/invoices", w.org)

		raw := mustStatus(t, a, w.token, "GET", base, "", 200)
		var list struct {
			OrgID          int64        `json:"org_id"`
			Invoices       []apiInvoice `json:"invoices"`
			InvoiceableFen int64        `json:"invoiceable_fen"`
		}
		must(t, json.Unmarshal([]byte(raw), &list) == nil && list.InvoiceableFen == 50_000 && len(list.Invoices) == 0, "list: %s", raw)

		mustInvalid(t, a, w.token, "POST", base, `{"kind":"normal","title":"成都天府机器人有限公司","taxpayer_id":"91350100M000100Y43","amount_fen":50001}`, 422, "amount_fen")
		mustInvalid(t, a, w.token, "POST", base, `{"kind":"special","title":"成都天府机器人有限公司","taxpayer_id":"91350100M000100Y44","address":"成都市高新区","phone":"028-88886666","bank":"招商银行","bank_account":"6214830000001234","amount_fen":100}`, 422, "taxpayer_id")
		raw = mustStatus(t, a, w.token, "POST", base, `{"kind":"special","title":"成都天府机器人有限公司","amount_fen":0}`, 422)
		for _, f := range []string{"taxpayer_id", "address", "phone", "bank", "bank_account", "amount_fen"} {
			contains(t, raw, `"field":"`+f+`"`)
		}
		mustInvalid(t, a, w.token, "POST", base, `{"kind":"normal","title":"x","amount_fen":"100"}`, 400, "amount_fen")
		mustInvalid(t, a, w.token, "POST", base, `{"kind":"normal","title":"x","amount_fen":100,"colour":"red"}`, 400, "body")
		mustStatus(t, a, otherToken, "POST", base, `{"kind":"normal","title":"张三","amount_fen":100}`, 404)

		raw = mustStatus(t, a, w.token, "POST", base, `{"kind":"special","title":"成都天府机器人有限公司","taxpayer_id":"91350100m000100y43","address":"成都市高新区天府软件园","phone":"028-8888 6666","bank":"招商银行成都分行","bank_account":"6214 8300 0000 1234","amount_fen":30000}`, 201)
		var inv apiInvoice
		must(t, json.Unmarshal([]byte(raw), &inv) == nil && inv.Status == "requested" && inv.Kind == "special" && inv.Number == nil && inv.File == nil && inv.AmountFen == 30000, "created: %s", raw)
		contains(t, raw, `"taxpayer_id":"91350100M000100Y43"`)
		raw = mustStatus(t, a, w.token, "GET", base, "", 200)
		must(t, json.Unmarshal([]byte(raw), &list) == nil && list.InvoiceableFen == 20_000 && len(list.Invoices) == 1, "list after a request: %s", raw)

		one := fmt.Sprintf("%s/%d", base, inv.ID)
		mustStatus(t, a, w.token, "GET", one, "", 200)
		mustStatus(t, a, otherToken, "GET", one, "", 404)
		mustStatus(t, a, "", "GET", one, "", 401)
		mustStatus(t, a, w.token, "GET", one+"/file", "", 404) // not issued yet

		w.issue(t, inv.ID, "26510000000000000042")
		raw = mustStatus(t, a, w.token, "GET", one, "", 200)
		must(t, json.Unmarshal([]byte(raw), &inv) == nil && inv.Status == "issued" && inv.File != nil && inv.File.Type == "pdf" && inv.File.URL == one+"/file", "issued: %s", raw)
		res, body := getRaw(t, a, w.token, one+"/file")
		must(t, res.StatusCode == 200 && res.Header.Get("Content-Type") == "application/pdf" && string(body) == string(testPDF), "file: %d %s", res.StatusCode, res.Header)
		mustInvoiceFileHeaders(t, res.Header, "fapiao-26510000000000000042.pdf")
		res, _ = getRaw(t, a, otherToken, one+"/file")
		must(t, res.StatusCode == 404, "another org's user downloads it: %d", res.StatusCode)
		res, _ = getRaw(t, a, "", one+"/file")
		must(t, res.StatusCode == 401, "logged out: %d", res.StatusCode)
		res, _ = getRaw(t, a, otherToken, fmt.Sprintf("/api/v1/orgs/%d/invoices/%d/file", orgOfToken(t, a, otherToken), inv.ID))
		must(t, res.StatusCode == 404, "the invoice through the other user's own org: %d", res.StatusCode)

		// Issued, it cannot be withdrawn; a new request can.
		raw = mustStatus(t, a, w.token, "POST", one+"/cancel", "", 409)
		code, _, _ := errorCode(t, raw)
		must(t, code == "conflict", "withdraw an issued invoice: %s", raw)
		raw = mustStatus(t, a, w.token, "POST", base, `{"kind":"normal","title":"成都天府机器人有限公司","taxpayer_id":"91350100M000100Y43","amount_fen":20000}`, 201)
		must(t, json.Unmarshal([]byte(raw), &inv) == nil, "%s", raw)
		mustStatus(t, a, otherToken, "POST", fmt.Sprintf("%s/%d/cancel", base, inv.ID), "", 404)
		raw = mustStatus(t, a, w.token, "POST", fmt.Sprintf("%s/%d/cancel", base, inv.ID), "", 200)
		contains(t, raw, `"status":"cancelled"`)

		// A month's invoices, by their date.
		month := a.db.Now().In(pricing.Shanghai).Format("2006-01")
		raw = mustStatus(t, a, w.token, "GET", base+"?month="+month, "", 200)
		must(t, json.Unmarshal([]byte(raw), &list) == nil && len(list.Invoices) == 2, "this month: %s", raw)
		raw = mustStatus(t, a, w.token, "GET", base+"?month=2001-01", "", 200)
		must(t, json.Unmarshal([]byte(raw), &list) == nil && len(list.Invoices) == 0, "another month: %s", raw)
		mustInvalid(t, a, w.token, "GET", base+"?month=december", "", 400, "month")
	})
}

// orgOfToken is the personal organisation of a token's user.
func orgOfToken(t *testing.T, a *app, token string) int64 {
	t.Helper()
	raw := mustStatus(t, a, token, "GET", "/api/v1/wallet", "", 200)
	var out struct {
		OrgID int64 `json:"org_id"`
	}
	must(t, json.Unmarshal([]byte(raw), &out) == nil, "%s", raw)
	return out.OrgID
}
