package web_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"suanli/models/invoicestore"
	"suanli/routenames"
)

// matrixInvoiceSeq numbers the invoices the matrix rows make.
var matrixInvoiceSeq atomic.Int64

// matrixInvoice stores an invoice of org A that its owner asked for, in
// the status given (issued ones with a number and a file), and returns
// org A's and its id as path parameters. It is stored directly: the
// rows test who gets past the guard, package invoices the rules.
func matrixInvoice(status invoicestore.Status) func(f *matrixFixture) []any {
	return func(f *matrixFixture) []any {
		ctx := context.Background()
		owner, err := f.a.db.UserByEmail(ctx, "owner@pku.edu.cn")
		if err != nil {
			panic(err)
		}
		n := matrixInvoiceSeq.Add(1)
		now := f.a.db.Now().UTC()
		inv := &invoicestore.Invoice{OrgID: f.orgA.ID, UserID: owner.ID, Kind: invoicestore.Normal, Title: "北京大学", TaxpayerID: "12100000400000624D",
			AmountFen: 100, Status: status, CreatedAt: now}
		if status.HasFile() {
			num := fmt.Sprintf("2611%016d", n)
			inv.Number, inv.IssueDate, inv.FileType, inv.FileSize, inv.IssuedAt = &num, now.Format("2006-01-02"), invoicestore.FilePDF, 9, &now
		}
		err = f.a.db.Tx(ctx, func(tx *gorm.DB) error {
			if err := invoicestore.Insert(tx, inv); err != nil {
				return err
			}
			if status.HasFile() {
				return invoicestore.InsertFile(tx, &invoicestore.File{InvoiceID: inv.ID, Data: []byte("%PDF-1.7"), SHA256: "x", CreatedAt: now})
			}
			return nil
		})
		if err != nil {
			panic(err)
		}
		return []any{idParam(f.orgA.ID), idParam(inv.ID)}
	}
}

// adminInvoice is matrixInvoice's invoice id alone, for the admin routes.
func adminInvoice(status invoicestore.Status) func(f *matrixFixture) []any {
	return func(f *matrixFixture) []any { return matrixInvoice(status)(f)[1:] }
}

// The invoice routes in the authorisation matrix, before its last
// (destructive) row. By then the platform admin has confirmed ¥100 into
// org A's wallet (AdminTopupsConfirm), so a request of ¥1 passes.
func init() {
	orgPage := expect{Anon: 303, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}
	orgAPI := expect{Anon: 401, Other: 404, Member: 200, Admin: 200, Platform: 200, Owner: 200}
	rows := []matrixRow{
		{route: routenames.InvoicesPage, params: orgAParam, want: orgPage},
		{route: routenames.InvoicesCSV, params: orgAParam, query: "?month=2026-12", want: orgPage},
		{route: routenames.InvoicesFile, params: matrixInvoice(invoicestore.Issued), want: orgPage},
		{route: routenames.APIInvoicesList, params: orgAParam, want: orgAPI},
		{route: routenames.APIInvoicesShow, params: matrixInvoice(invoicestore.Requested), want: orgAPI},
		{route: routenames.APIInvoicesFile, params: matrixInvoice(invoicestore.Voided), want: orgAPI},
		// Its owner and admins ask for invoices; members may not; nobody
		// else learns the organisation exists.
		{route: routenames.InvoicesCreate, params: orgAParam, form: url.Values{"kind": {"normal"}, "title": {"北京大学"}, "taxpayer_id": {"12100000400000624D"}, "amount": {"1"}},
			want: orgAdminPost},
		{route: routenames.APIInvoicesCreate, params: orgAParam,
			json: func(*matrixFixture) string {
				return `{"kind":"normal","title":"北京大学","taxpayer_id":"12100000400000624D","amount_fen":100}`
			},
			want: expect{Anon: 401, Other: 404, Member: 403, Admin: 201, Platform: 404, Owner: 201}},
		// The owner asked; the org's admin withdraws it, so the owner's
		// turn finds it withdrawn; a platform admin is no member.
		{route: routenames.InvoicesCancel, params: matrixInvoice(invoicestore.Requested),
			want: expect{Anon: 401, Other: 404, Member: 403, Admin: 303, Platform: 403, Owner: 409}},
		{route: routenames.APIInvoicesCancel, params: matrixInvoice(invoicestore.Requested), json: func(*matrixFixture) string { return "" },
			want: expect{Anon: 401, Other: 404, Member: 403, Admin: 200, Platform: 403, Owner: 409}},
		{route: routenames.AdminInvoices, want: platformPage},
		{route: routenames.AdminInvoicesCSV, query: "?month=2026-12", want: platformPage},
		{route: routenames.AdminInvoicesShow, params: adminInvoice(invoicestore.Requested), want: platformPage},
		// An ordinary form reaches the issue handler without a file: 422 past the guard.
		{route: routenames.AdminInvoicesIssue, params: adminInvoice(invoicestore.Requested), form: url.Values{"number": {"26110000000000000999"}},
			want: expect{Anon: 401, Other: 403, Member: 403, Admin: 403, Platform: 422, Owner: 403}},
		{route: routenames.AdminInvoicesReject, params: adminInvoice(invoicestore.Requested), form: url.Values{"reason": {"matrix"}}, want: platformPost},
		{route: routenames.AdminInvoicesVoid, params: adminInvoice(invoicestore.Issued), form: url.Values{"reason": {"matrix"}}, want: platformPost},
		{route: routenames.AdminInvoicesReverse, params: adminInvoice(invoicestore.Issued), form: url.Values{"red_number": {"26119999999999999999"}}, want: platformPost,
			after: func(t *testing.T, f *matrixFixture) {
				var n int64
				f.a.db.R.Model(&invoicestore.Invoice{}).Where("org_id = ? AND status = ?", f.orgA.ID, invoicestore.Reversed).Count(&n)
				must(t, n == 1, "%d reversed invoices of org A, want 1", n)
			}},
	}
	matrix = slices.Insert(matrix, len(matrix)-1, rows...)
}
