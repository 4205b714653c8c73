package invoices_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/invoices"
	"suanli/models"
	"suanli/models/invoicestore"
)

// fieldsOf are the fields an error names, when it is input errors.
func fieldsOf(err error) []string {
	var fe apperr.Fields
	if !errors.As(err, &fe) {
		return nil
	}
	var out []string
	for _, e := range fe {
		out = append(out, e.Field)
	}
	return out
}

// names reports whether err is input errors naming exactly fields.
func names(err error, fields ...string) bool {
	got := fieldsOf(err)
	if len(got) != len(fields) {
		return false
	}
	for i := range got {
		if got[i] != fields[i] {
			return false
		}
	}
	return true
}

// What may be invoiced is cash received, less refunds, less the
// invoices requested or issued: promotional credit never counts, a bank
// transfer counts what arrived, a refund takes its amount away, and a
// withdrawn or rejected invoice gives its amount back. A request above
// it names amount_fen and stores nothing.
func TestInvoiceableIsCashNotRefundedNorInvoiced(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		org := f.org.ID
		if n := f.invoiceable(org); n != 0 {
			t.Fatalf("invoiceable before any top-up: %d", n)
		}
		f.promo(org, 50_000)
		must(t, f.invoiceable(org) == 0, "promotional credit counted: %d", f.invoiceable(org))
		_, err := f.svc.Request(ctx, f.owner, org, normal(100))
		must(t, names(err, invoices.FieldAmount), "invoice of promotional credit: %v", err)

		f.paid(org, 100_000, 80_000) // asked ¥1000, ¥800 arrived
		must(t, f.invoiceable(org) == 80_000, "invoiceable %d, want what arrived (80000)", f.invoiceable(org))

		first := f.mustRequest(f.owner, org, normal(30_000))
		must(t, first.Status == invoicestore.Requested, "status %s", first.Status)
		must(t, f.invoiceable(org) == 50_000, "after a ¥300 request: %d", f.invoiceable(org))

		// A refund of ¥200 (the wallet holds ¥800 cash and ¥500 promo).
		if _, err := f.wallet.RequestRefund(ctx, f.owner, org, 20_000); err != nil {
			t.Fatalf("refund: %v", err)
		}
		must(t, f.invoiceable(org) == 30_000, "after a ¥200 refund: %d", f.invoiceable(org))

		before := f.count(org)
		_, err = f.svc.Request(ctx, f.owner, org, normal(30_001))
		must(t, names(err, invoices.FieldAmount), "above invoiceable: %v", err)
		ae, _ := apperr.As(err)
		must(t, ae != nil && strings.Contains(ae.Message, "300"), "the refusal names what may be invoiced: %v", err)
		must(t, f.count(org) == before, "a refused request was stored")

		// Withdrawn, its amount may be invoiced again.
		if _, err := f.svc.Cancel(ctx, f.owner, org, first.ID); err != nil {
			t.Fatal(err)
		}
		must(t, f.invoiceable(org) == 60_000, "after withdrawing: %d", f.invoiceable(org))
		second := f.mustRequest(f.owner, org, special(60_000))
		must(t, f.invoiceable(org) == 0, "all invoiced: %d", f.invoiceable(org))
		// Rejected, too.
		if _, err := f.svc.Reject(ctx, f.root, second.ID, "抬头与营业执照不符"); err != nil {
			t.Fatal(err)
		}
		must(t, f.invoiceable(org) == 60_000, "after a rejection: %d", f.invoiceable(org))
		// An issued invoice keeps counting; voided, it does not.
		third := f.mustRequest(f.owner, org, normal(60_000))
		f.mustIssue(third.ID, 1)
		must(t, f.invoiceable(org) == 0, "issued: %d", f.invoiceable(org))
		if _, err := f.svc.Void(ctx, f.root, third.ID, "开错金额"); err != nil {
			t.Fatal(err)
		}
		must(t, f.invoiceable(org) == 60_000, "after voiding: %d", f.invoiceable(org))
	})
}

func must(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}

// Every field is checked, together: the taxpayer ID with its check
// character, required for a special invoice and for a company; the
// special invoice's address, phone, bank and account.
func TestRequestFieldsAreChecked(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		f.paid(f.org.ID, 100_000, 100_000)
		f.paid(f.personal, 100_000, 100_000)
		with := func(in invoices.Input, change func(*invoices.Input)) invoices.Input { change(&in); return in }
		cases := []struct {
			name   string
			org    int64
			in     invoices.Input
			fields []string
		}{
			{"unknown kind", f.org.ID, with(normal(100), func(in *invoices.Input) { in.Kind = "vat" }), []string{"kind"}},
			{"no title", f.org.ID, with(normal(100), func(in *invoices.Input) { in.Title = "  " }), []string{"title"}},
			{"title with a line break", f.org.ID, with(normal(100), func(in *invoices.Input) { in.Title = "A\nB" }), []string{"title"}},
			{"title too long", f.org.ID, with(normal(100), func(in *invoices.Input) { in.Title = strings.Repeat("算", 101) }), []string{"title"}},
			{"altered check character", f.org.ID, with(normal(100), func(in *invoices.Input) { in.TaxpayerID = "91350100M000100Y44" }), []string{"taxpayer_id"}},
			{"17 characters", f.org.ID, with(normal(100), func(in *invoices.Input) { in.TaxpayerID = "91350100M000100Y4" }), []string{"taxpayer_id"}},
			{"letter O", f.org.ID, with(normal(100), func(in *invoices.Input) { in.TaxpayerID = "91350100O000100Y43" }), []string{"taxpayer_id"}},
			{"a team's invoice without taxpayer ID", f.org.ID, with(normal(100), func(in *invoices.Input) { in.TaxpayerID = "" }), []string{"taxpayer_id"}},
			{"a company title without taxpayer ID", f.personal, with(normal(100), func(in *invoices.Input) { in.TaxpayerID = "" }), []string{"taxpayer_id"}},
			{"special without taxpayer ID", f.personal, with(special(100), func(in *invoices.Input) { in.TaxpayerID = ""; in.Title = "张三" }), []string{"taxpayer_id"}},
			{"special without bank details", f.org.ID, with(special(100), func(in *invoices.Input) { in.Address, in.Phone, in.Bank, in.BankAccount = "", "", "", "" }),
				[]string{"address", "phone", "bank", "bank_account"}},
			{"bad phone and account", f.org.ID, with(special(100), func(in *invoices.Input) { in.Phone, in.BankAccount = "call me", "12ab" }), []string{"phone", "bank_account"}},
			{"bad email", f.org.ID, with(normal(100), func(in *invoices.Input) { in.Email = "not an address" }), []string{"email"}},
			{"zero amount", f.org.ID, normal(0), []string{"amount_fen"}},
			{"negative amount", f.org.ID, normal(-5), []string{"amount_fen"}},
			{"several at once", f.org.ID, invoices.Input{Kind: "special", AmountFen: 0}, []string{"title", "taxpayer_id", "address", "phone", "bank", "bank_account", "amount_fen"}},
		}
		for _, c := range cases {
			_, err := f.svc.Request(ctx, f.owner, c.org, c.in)
			if !names(err, c.fields...) {
				t.Errorf("%s: %v, want fields %v (got %v)", c.name, err, c.fields, fieldsOf(err))
			}
		}
		must(t, f.count(f.org.ID) == 0 && f.count(f.personal) == 0, "refused requests were stored")

		// A person's own normal invoice needs no taxpayer ID; a lowercase
		// code is normalised.
		inv := f.mustRequest(f.owner, f.personal, invoices.Input{Kind: "normal", Title: "张三", AmountFen: 100})
		must(t, inv.TaxpayerID == "", "taxpayer %q", inv.TaxpayerID)
		inv = f.mustRequest(f.owner, f.org.ID, with(normal(100), func(in *invoices.Input) { in.TaxpayerID = " " + strings.ToLower(creditB) + " " }))
		must(t, inv.TaxpayerID == creditB, "taxpayer %q, want %q", inv.TaxpayerID, creditB)
	})
}

// Who may do what: the organisation's owner and admins ask; a member may
// look but not ask; another organisation's user sees nothing; only
// platform admins issue, reject, void and reverse.
func TestWhoMayActOnInvoices(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		f.paid(f.org.ID, 100_000, 100_000)
		_, err := f.svc.Request(ctx, f.member, f.org.ID, normal(100))
		must(t, apperr.Code(err) == apperr.EFORBIDDEN, "a member asked: %v", err)
		_, err = f.svc.Request(ctx, f.outsider, f.org.ID, normal(100))
		must(t, apperr.Code(err) == apperr.ENOTFOUND, "an outsider asked: %v", err)
		_, err = f.svc.Request(ctx, f.root, f.org.ID, normal(100))
		must(t, apperr.Code(err) == apperr.ENOTFOUND, "a platform admin asked for an org they are not in: %v", err)

		inv := f.mustRequest(f.owner, f.org.ID, normal(100))
		list, err := f.svc.List(ctx, f.member, f.org.ID)
		must(t, err == nil && len(list.Invoices) == 1 && !list.CanRequest, "the member's list: %v %+v", err, list)
		_, err = f.svc.List(ctx, f.outsider, f.org.ID)
		must(t, apperr.Code(err) == apperr.ENOTFOUND, "an outsider listed: %v", err)
		_, err = f.svc.Get(ctx, f.outsider, f.personal, inv.ID)
		must(t, apperr.Code(err) == apperr.ENOTFOUND, "the invoice through another org: %v", err)
		_, err = f.svc.Get(ctx, f.owner, f.personal, inv.ID)
		must(t, apperr.Code(err) == apperr.ENOTFOUND, "the invoice through the owner's other org: %v", err)
		_, err = f.svc.Cancel(ctx, f.member, f.org.ID, inv.ID)
		must(t, apperr.Code(err) == apperr.EFORBIDDEN, "a member withdrew another's request: %v", err)

		for name, act := range map[string]func(u *models.User) error{
			"issue": func(u *models.User) error {
				_, err := f.svc.Issue(ctx, u, inv.ID, invoices.IssueInput{Number: number(9), IssueDate: f.today(), File: pdf})
				return err
			},
			"reject": func(u *models.User) error { _, err := f.svc.Reject(ctx, u, inv.ID, "no"); return err },
			"void":   func(u *models.User) error { _, err := f.svc.Void(ctx, u, inv.ID, "no"); return err },
			"reverse": func(u *models.User) error {
				_, err := f.svc.Reverse(ctx, u, inv.ID, number(10), "")
				return err
			},
		} {
			if err := act(f.owner); apperr.Code(err) != apperr.EFORBIDDEN {
				t.Errorf("the owner could %s: %v", name, err)
			}
		}
	})
}

// The statuses move only as the table allows; any other move is a
// conflict and changes nothing. Every move is in the audit log.
func TestInvoiceTransitions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		f.paid(f.org.ID, 500_000, 500_000)
		conflict := func(what string, err error) {
			t.Helper()
			if apperr.Code(err) != apperr.ECONFLICT {
				t.Errorf("%s: %v, want a conflict", what, err)
			}
		}
		issue := func(id int64, n int) error {
			_, err := f.svc.Issue(ctx, f.root, id, invoices.IssueInput{Number: number(n), IssueDate: f.today(), File: pdf})
			return err
		}

		// requested → issued → voided, then nothing more.
		a := f.mustRequest(f.owner, f.org.ID, normal(1000))
		issued := f.mustIssue(a.ID, 100)
		must(t, issued.Status == invoicestore.Issued && issued.NumberOrEmpty() == number(100) && issued.IssueDate == f.today() &&
			issued.FileType == invoicestore.FilePDF && issued.FileSize == int64(len(pdf)), "issued: %+v", issued)
		conflict("issue twice", issue(a.ID, 101))
		_, err := f.svc.Cancel(ctx, f.owner, f.org.ID, a.ID)
		conflict("withdraw an issued invoice", err)
		_, err = f.svc.Reject(ctx, f.root, a.ID, "late")
		conflict("reject an issued invoice", err)
		_, err = f.svc.Void(ctx, f.root, a.ID, "")
		must(t, names(err, "reason"), "void without a reason: %v", err)
		if _, err := f.svc.Void(ctx, f.root, a.ID, "金额有误"); err != nil {
			t.Fatal(err)
		}
		_, err = f.svc.Reverse(ctx, f.root, a.ID, number(102), "")
		conflict("reverse a voided invoice", err)
		_, err = f.svc.Void(ctx, f.root, a.ID, "again")
		conflict("void twice", err)
		_, file, err := f.svc.File(ctx, f.owner, f.org.ID, a.ID)
		must(t, err == nil && string(file.Data) == string(pdf), "a voided invoice keeps its file: %v", err)

		// requested → issued → reversed (红冲), with the red-letter number.
		b := f.mustRequest(f.owner, f.org.ID, normal(2000))
		f.mustIssue(b.ID, 200)
		_, err = f.svc.Reverse(ctx, f.root, b.ID, "123", "")
		must(t, names(err, "red_number"), "a short red-letter number: %v", err)
		_, err = f.svc.Reverse(ctx, f.root, b.ID, number(200), "")
		must(t, names(err, "red_number"), "the invoice's own number as its red-letter number: %v", err)
		rev, err := f.svc.Reverse(ctx, f.root, b.ID, number(201), "")
		must(t, err == nil && rev.Status == invoicestore.Reversed && rev.RedNumberOrEmpty() == number(201), "reverse: %v %+v", err, rev)
		conflict("issue a reversed invoice", issue(b.ID, 202))
		_, err = f.svc.Void(ctx, f.root, b.ID, "x")
		conflict("void a reversed invoice", err)

		// requested → cancelled and requested → rejected are final.
		c := f.mustRequest(f.owner, f.org.ID, normal(3000))
		if _, err := f.svc.Cancel(ctx, f.owner, f.org.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		conflict("issue a withdrawn invoice", issue(c.ID, 300))
		_, err = f.svc.Cancel(ctx, f.owner, f.org.ID, c.ID)
		conflict("withdraw twice", err)
		d := f.mustRequest(f.owner, f.org.ID, normal(4000))
		_, err = f.svc.Reject(ctx, f.root, d.ID, "")
		must(t, names(err, "reason"), "reject without a reason: %v", err)
		if _, err := f.svc.Reject(ctx, f.root, d.ID, "请改为专票"); err != nil {
			t.Fatal(err)
		}
		conflict("issue a rejected invoice", issue(d.ID, 400))
		_, err = f.svc.Void(ctx, f.root, d.ID, "x")
		conflict("void a rejected invoice", err)

		// Every move is audited, each under its action.
		var actions []string
		if err := db.R.Model(&models.AuditEntry{}).Where("subject LIKE ?", "invoice:%").Order("id").Pluck("action", &actions).Error; err != nil {
			t.Fatal(err)
		}
		want := "invoice.requested invoice.issued invoice.voided invoice.requested invoice.issued invoice.reversed invoice.requested invoice.cancelled invoice.requested invoice.rejected"
		must(t, strings.Join(actions, " ") == want, "audit log:\n%s\nwant\n%s", strings.Join(actions, " "), want)
	})
}

// The issue form's checks: a 20-digit number used by no other invoice, a
// date between the request and today, and a PDF or OFD (by its first
// bytes, not its name) of at most 10 MiB. The requester is mailed in
// their language, and the invoice's own address too.
func TestIssueChecksTheNumberDateAndFile(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		f.paid(f.org.ID, 500_000, 500_000)
		if err := db.W.Model(&models.User{}).Where("id = ?", f.owner.ID).Update("lang", "en").Error; err != nil {
			t.Fatal(err)
		}
		in := normal(1000)
		in.Email = "Accounts@Example.com"
		inv := f.mustRequest(f.owner, f.org.ID, in)
		ofd := append([]byte("PK\x03\x04"), []byte("OFD.xml ...")...)
		huge := append(append([]byte{}, pdf...), make([]byte, invoices.MaxFileBytes)...)
		cases := []struct {
			name   string
			in     invoices.IssueInput
			fields []string
		}{
			{"no number", invoices.IssueInput{IssueDate: f.today(), File: pdf}, []string{"number"}},
			{"19 digits", invoices.IssueInput{Number: number(1)[1:], IssueDate: f.today(), File: pdf}, []string{"number"}},
			{"letters", invoices.IssueInput{Number: "2651000000000000000A", IssueDate: f.today(), File: pdf}, []string{"number"}},
			{"no date", invoices.IssueInput{Number: number(1), File: pdf}, []string{"issue_date"}},
			{"a date in the future", invoices.IssueInput{Number: number(1), IssueDate: "2999-01-01", File: pdf}, []string{"issue_date"}},
			{"a date before the request", invoices.IssueInput{Number: number(1), IssueDate: "2001-01-01", File: pdf}, []string{"issue_date"}},
			{"no file", invoices.IssueInput{Number: number(1), IssueDate: f.today()}, []string{"file"}},
			{"a PNG named .pdf", invoices.IssueInput{Number: number(1), IssueDate: f.today(), File: []byte("\x89PNG\r\n\x1a\n....")}, []string{"file"}},
			{"HTML", invoices.IssueInput{Number: number(1), IssueDate: f.today(), File: []byte("<html>%PDF-</html>")}, []string{"file"}},
			{"over 10 MiB", invoices.IssueInput{Number: number(1), IssueDate: f.today(), File: huge}, []string{"file"}},
		}
		for _, c := range cases {
			_, err := f.svc.Issue(ctx, f.root, inv.ID, c.in)
			if !names(err, c.fields...) {
				t.Errorf("%s: %v, want fields %v", c.name, err, c.fields)
			}
		}
		cur, _ := invoicestore.ByID(ctx, db, inv.ID)
		must(t, cur.Status == invoicestore.Requested, "a refused issue changed the invoice: %+v", cur)

		// Another invoice has the number already.
		other := f.mustRequest(f.owner, f.org.ID, normal(500))
		f.mustIssue(other.ID, 7)
		_, err := f.svc.Issue(ctx, f.root, inv.ID, invoices.IssueInput{Number: number(7), IssueDate: f.today(), File: ofd})
		must(t, names(err, "number"), "a number taken: %v", err)

		got, err := f.svc.Issue(ctx, f.root, inv.ID, invoices.IssueInput{Number: " " + number(8) + " ", IssueDate: f.today(), File: ofd})
		must(t, err == nil && got.FileType == invoicestore.FileOFD && got.NumberOrEmpty() == number(8), "an OFD: %v %+v", err, got)
		_, file, err := f.svc.File(ctx, f.member, f.org.ID, inv.ID)
		must(t, err == nil && string(file.Data) == string(ofd), "the member downloads it: %v", err)
		_, _, err = f.svc.File(ctx, f.outsider, f.org.ID, inv.ID)
		must(t, apperr.Code(err) == apperr.ENOTFOUND, "an outsider downloads it: %v", err)

		mails, err := db.Outbox(ctx, "", 20)
		if err != nil {
			t.Fatal(err)
		}
		var toOwner, toAccounts bool
		for _, m := range mails {
			if !strings.Contains(m.Body, number(8)) {
				continue
			}
			switch m.ToAddr {
			case f.owner.Email:
				toOwner = m.Lang == "en" && strings.Contains(m.Subject, "is issued") && strings.Contains(m.Body, "/orgs/")
			case "accounts@example.com":
				// A notice, not a download link: the invoices page is the
				// members' only, and the outbox carries no file. It says
				// whom to ask for the file.
				toAccounts = m.Lang == "en" && strings.Contains(m.Subject, "issued to "+f.org.Name) && !strings.Contains(m.Body, "/orgs/") &&
					strings.Contains(m.Body, "does not carry the invoice's file") && strings.Contains(m.Body, f.owner.Email)
			}
		}
		must(t, toOwner, "no English mail to the requester about %s in %+v", number(8), mails)
		must(t, toAccounts, "no notice to the invoice's address in %+v", mails)
	})
}

// Many requests at once never together take more than may be invoiced:
// with ¥1,000 invoiceable and twelve requests of ¥300 each, exactly three
// are accepted, on both databases; and a refund and an invoice of the
// same money at once never both succeed.
func TestConcurrentRequestsNeverExceedInvoiceable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		f.paid(f.org.ID, 100_000, 100_000)
		const n, each = 12, 30_000
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = f.svc.Request(ctx, f.owner, f.org.ID, normal(each))
			})
		}
		close(start)
		wg.Wait()
		accepted := 0
		for _, err := range errs {
			switch {
			case err == nil:
				accepted++
			case !names(err, invoices.FieldAmount):
				t.Errorf("a refusal that is not about amount_fen: %v", err)
			}
		}
		must(t, accepted == 3, "%d of %d requests of ¥300 accepted with ¥1,000 invoiceable, want 3", accepted, n)
		sum, err := invoicestore.ActiveSumRead(ctx, db, f.org.ID)
		must(t, err == nil && sum == 3*each && sum <= 100_000, "invoiced %d: %v", sum, err)
		must(t, f.invoiceable(f.org.ID) == 10_000, "left %d, want 10000", f.invoiceable(f.org.ID))

		// The last ¥100: a refund and an invoice of it at once.
		for round := range 3 {
			var rerr, ierr error
			var inv *invoicestore.Invoice
			start := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { <-start; _, rerr = f.wallet.RequestRefund(ctx, f.owner, f.org.ID, 10_000) })
			wg.Go(func() { <-start; inv, ierr = f.svc.Request(ctx, f.owner, f.org.ID, normal(10_000)) })
			close(start)
			wg.Wait()
			must(t, (rerr == nil) != (ierr == nil), "round %d: refund %v, invoice %v: want exactly one", round, rerr, ierr)
			if ierr == nil {
				// Put the money back in play for the next round.
				if _, err := f.svc.Cancel(ctx, f.owner, f.org.ID, inv.ID); err != nil {
					t.Fatal(err)
				}
			} else {
				break // refunded: nothing is left to race for
			}
		}
	})
}
