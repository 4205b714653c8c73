package billing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/invoices"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
)

// Invoiced money is not refunded: a refund that only an active invoice
// stands in the way of is refused naming amount_fen and the invoice, and
// says to have it reversed or voided first; what is not invoiced is
// refunded as ever, and once the invoice is reversed (红冲) its money is
// refundable again.
func TestRefundOfInvoicedMoneyWaitsForTheReversal(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		acc := &accounts.Service{DB: db}
		u, err := acc.CreateUser(ctx, "payer@example.com", "owner-pass-2026", "Payer", false)
		if err != nil {
			t.Fatal(err)
		}
		root, err := acc.CreateUser(ctx, "root@example.com", "admin-pass-2026", "Root", true)
		if err != nil {
			t.Fatal(err)
		}
		oms, _ := db.OrgsOfUser(ctx, u.ID)
		org := oms[0].Org.ID
		w := &billing.Wallet{DB: db}
		tp, _, err := w.StartTopup(ctx, u, org, 100_000, models.MethodBank, "zh-CN")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.ConfirmBankTransfer(ctx, root, tp.ID, 100_000); err != nil {
			t.Fatal(err)
		}
		svc := &invoices.Service{DB: db, Accounts: acc}
		inv, err := svc.Request(ctx, u, org, invoices.Input{Kind: "normal", Title: "张三", AmountFen: 60_000})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := w.Refundable(ctx, org); err != nil || n != 40_000 {
			t.Fatalf("refundable %d (%v), want the ¥400 not invoiced", n, err)
		}

		_, err = w.RequestRefund(ctx, u, org, 50_000)
		ae, ok := apperr.As(err)
		if !ok || ae.Field != "amount_fen" || ae.Key != "invoice.err.refund_invoiced" {
			t.Fatalf("refund of invoiced money: %v, want amount_fen refused for the invoice", err)
		}
		for _, lang := range []string{locales.EN, locales.ZH} {
			msg := locales.T(lang, ae.Key, ae.Args...)
			if !strings.Contains(msg, fmt.Sprintf("#%d", inv.ID)) || !strings.Contains(msg, "400") || !strings.Contains(msg, "红冲") {
				t.Errorf("%s message %q does not name the invoice, the refundable ¥400 and the reversal", lang, msg)
			}
		}
		// More than was ever paid is the ordinary refusal.
		_, err = w.RequestRefund(ctx, u, org, 100_001)
		if ae, ok := apperr.As(err); !ok || ae.Key != "err.refund_limit" {
			t.Errorf("refund above what was paid: %v", err)
		}
		if rs, _ := db.RefundsOf(ctx, org); len(rs) != 0 {
			t.Fatalf("refused refunds were recorded: %+v", rs)
		}

		// The part not invoiced is refunded.
		if _, err := w.RequestRefund(ctx, u, org, 40_000); err != nil {
			t.Fatalf("refund of the money not invoiced: %v", err)
		}
		// Issued, it still blocks; reversed, it no longer does.
		today := db.Now().In(pricing.Shanghai).Format("2006-01-02")
		if _, err := svc.Issue(ctx, root, inv.ID, invoices.IssueInput{Number: "26510000000000000001", IssueDate: today, File: []byte("%PDF-1.7 test")}); err != nil {
			t.Fatal(err)
		}
		_, err = w.RequestRefund(ctx, u, org, 10_000)
		if ae, ok := apperr.As(err); !ok || ae.Key != "invoice.err.refund_invoiced" || !strings.Contains(locales.T(locales.EN, ae.Key, ae.Args...), "26510000000000000001") {
			t.Fatalf("refund of an issued invoice's money: %v, want it refused naming the invoice's number", err)
		}
		if _, err := svc.Reverse(ctx, root, inv.ID, "26510000000000000002", "客户退款"); err != nil {
			t.Fatal(err)
		}
		if n, _ := w.Refundable(ctx, org); n != 60_000 {
			t.Fatalf("refundable after the reversal: %d, want 60000", n)
		}
		if _, err := w.RequestRefund(ctx, u, org, 60_000); err != nil {
			t.Fatalf("refund after the reversal: %v", err)
		}
	})
}
