package web_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/models"
)

// TestBrowserRealNameAndInvoiceInChinese is issue 21's journey, in Chinese,
// in real Chromium: a renter whose wallet holds ¥500 paid by bank transfer
// verifies as an individual (实名认证) — name, ID number, mobile, the
// privacy notice's consent — with the SMS code a platform admin reads in
// the SMS outbox; then requests a 普票 for ¥300 of it; the admin issues it
// with its number and the PDF the tax system produced; the renter
// downloads exactly that file.
func TestBrowserRealNameAndInvoiceInChinese(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t) // skip (or fail under CI) before setting anything up
	a := realNameApp(t, dbtest.SQLite(t))
	bg := context.Background()

	const (
		email    = "wang.fang@example.com"
		password = "chengdu-gpu-2026!"
		phone    = "13800138000"
	)
	svc := &accounts.Service{DB: a.db, BaseURL: "http://suanli.test"}
	user, err := svc.CreateUser(bg, email, password, "王芳", false)
	if err != nil {
		t.Fatalf("create user: %v", err)
	}
	admin, err := svc.CreateUser(bg, "admin@suanli.test", "admin-password-2026", "管理员", true)
	if err != nil {
		t.Fatalf("create admin: %v", err)
	}
	orgs, err := a.db.OrgsOfUser(bg, user.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("personal organisation: %v", err)
	}
	orgID := orgs[0].Org.ID
	// ¥500 paid in by bank transfer: cash, and so invoiceable.
	w := &billing.Wallet{DB: a.db, BaseURL: "http://suanli.test"}
	topup, _, err := w.StartTopup(bg, user, orgID, 50000, models.MethodBank, "zh-CN")
	if err != nil {
		t.Fatalf("start top-up: %v", err)
	}
	if err := w.ConfirmBankTransfer(bg, admin, topup.ID, 50000); err != nil {
		t.Fatalf("confirm top-up: %v", err)
	}

	ctx := newBrowser(t, 150*time.Second)
	login := func(b context.Context, email, password string) {
		t.Helper()
		open(t, b, a.srv.URL+"/login", "login form")
		typeInto(t, b, [][2]string{{"f-email", email}, {"f-password", password}})
		p := click(t, b, "#login-submit", "log in")
		must(t, p.Path != "/login", "logging in as %s failed\n%s", email, p)
	}
	login(ctx, email, password)

	// (1) 实名认证: the form, with the privacy notice, in Chinese.
	p := open(t, ctx, a.srv.URL+"/account/real-name", "real-name page")
	must(t, p.Lang == "zh-CN", "the real-name page is not Chinese (<html lang=%q>)\n%s", p.Lang, p)
	notice := textOf(t, ctx, "#realname-notice")
	for _, want := range []string{"身份证", "手机", "加密"} {
		must(t, strings.Contains(notice, want), "the privacy notice does not mention %q: %q", want, notice)
	}
	typeInto(t, ctx, [][2]string{{"f-name", "王芳"}, {"f-id_number", "510107199003071236"}, {"f-phone", phone}})
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("f-consent"))); err != nil {
		t.Fatalf("tick the consent: %v", err)
	}
	screenshot(t, ctx, "realname-form")
	p = click(t, ctx, "#realname-submit", "start verification")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("f-code"))); err != nil {
		t.Fatalf("no SMS code form after starting: %v\n%s", err, p)
	}
	must(t, statusOf(t, ctx) == "pending", "status after starting = %q, want pending\n%s", statusOf(t, ctx), p)

	// (2) The admin reads the code in the SMS outbox, in a browser of
	// their own (no SMS provider is configured).
	adm := newBrowser(t, 150*time.Second)
	login(adm, "admin@suanli.test", "admin-password-2026")
	p = open(t, adm, a.srv.URL+"/admin/sms?phone="+phone, "SMS outbox")
	body := textOf(t, adm, "#sms-outbox .sms-body")
	code := regexp.MustCompile(`\b\d{6}\b`).FindString(body)
	must(t, code != "", "no 6-digit code in the newest SMS to %s: %q\n%s", phone, body, p)
	t.Logf("SMS: %q", body)

	// (3) The renter types the code: verified, the ID shown masked only.
	typeInto(t, ctx, [][2]string{{"f-code", code}})
	p = click(t, ctx, "#realname-confirm", "confirm the code")
	must(t, statusOf(t, ctx) == "verified", "status after the code = %q, want verified\n%s", statusOf(t, ctx), p)
	must(t, textOf(t, ctx, "#realname-id-mask") == "5101**********1236", "masked ID = %q", textOf(t, ctx, "#realname-id-mask"))
	must(t, !strings.Contains(p.Text, "510107199003071236"), "the verified page shows the whole ID number\n%s", p)
	screenshot(t, ctx, "realname-verified")

	// (4) A 普票 for ¥300 of the ¥500 paid in.
	invoicesURL := a.srv.URL + "/orgs/" + strconv.FormatInt(orgID, 10) + "/invoices"
	p = open(t, ctx, invoicesURL, "invoices page")
	must(t, textOf(t, ctx, "#invoiceable") == "¥500.00", "#invoiceable = %q, want ¥500.00\n%s", textOf(t, ctx, "#invoiceable"), p)
	must(t, eval[bool](t, ctx, `document.getElementById("f-kind-normal").checked`), "普票 is not the default kind")
	typeInto(t, ctx, [][2]string{{"f-title", "王芳"}, {"f-amount", "300"}})
	p = click(t, ctx, "#invoice-submit", "request a 普票")
	id := eval[string](t, ctx, `(() => { const r = document.querySelector("#invoices tbody tr[id^=invoice-]"); return r ? r.id.slice(8) : ""; })()`)
	must(t, id != "", "no invoice row after the request\n%s", p)
	must(t, textOf(t, ctx, "#invoiceable") == "¥200.00", "#invoiceable after requesting ¥300 = %q, want ¥200.00", textOf(t, ctx, "#invoiceable"))
	t.Logf("requested invoice %s: %q", id, textOf(t, ctx, "#invoice-"+id))
	screenshot(t, ctx, "invoice-requested")

	// (5) The admin issues it: number, date and the tax system's PDF.
	pdf := []byte("%PDF-1.7\n% 数电票 test file\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n")
	pdfPath := filepath.Join(t.TempDir(), "fapiao.pdf")
	if err := os.WriteFile(pdfPath, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	p = open(t, adm, a.srv.URL+"/admin/invoices/"+id, "admin invoice page")
	typeInto(t, adm, [][2]string{{"f-issue-number", "26512000000012345678"}})
	today := eval[string](t, adm, `new Intl.DateTimeFormat("sv-SE", {timeZone: "Asia/Shanghai"}).format(new Date())`)
	eval[string](t, adm, `document.getElementById("f-issue-date").value = `+strconv.Quote(today))
	if err := chromedp.Do(adm, chromedp.SetUploadFiles(chromedp.ID("f-issue-file"), []string{pdfPath})); err != nil {
		t.Fatalf("choose the PDF: %v", err)
	}
	p = click(t, adm, "#invoice-issue-submit", "issue the invoice")
	must(t, strings.Contains(textOf(t, adm, "#invoice-status"), "已开具"), "status after issuing = %q, want 已开具\n%s", textOf(t, adm, "#invoice-status"), p)

	// (6) The renter downloads exactly the file that was uploaded.
	p = open(t, ctx, invoicesURL, "invoices page after issuing")
	row := textOf(t, ctx, "#invoice-"+id)
	must(t, strings.Contains(row, "26512000000012345678"), "the invoice row does not show its number: %q", row)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const a = document.getElementById("invoice-download-`+id+`");
		if (!a) return "no link";
		const r = await fetch(a.href);
		return r.status + " " + (r.headers.get("Content-Type") || "") + " " + await r.text();
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("download the invoice: %v", err)
	}
	must(t, got == "200 application/pdf "+string(pdf), "the download = %q, want 200 application/pdf and the uploaded bytes", got)
	screenshot(t, ctx, "invoice-issued")
}

// statusOf is the real-name status badge's data-status.
func statusOf(t *testing.T, ctx context.Context) string {
	t.Helper()
	return eval[string](t, ctx, `(() => { const b = document.getElementById("realname-status-badge"); return b ? b.dataset.status : ""; })()`)
}
