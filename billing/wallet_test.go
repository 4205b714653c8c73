package billing_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/payments"
	"suanli/stripemock"
)

// A refund Stripe could not take stays pending, is listed for an admin,
// and is paid when the admin retries; a bank refund is settled when the
// admin has paid it out. Nothing is lost or paid twice.
func TestPendingRefundsAreSettledByAnAdmin(t *testing.T) {
	mock := stripemock.Start(t)
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		svc := &accounts.Service{DB: db}
		u, _ := svc.CreateUser(ctx, "owner@example.com", "owner-pass-2026", "Owner", false)
		admin, _ := svc.CreateUser(ctx, "root@example.com", "admin-pass-2026", "Root", true)
		orgs, _ := db.OrgsOfUser(ctx, u.ID)
		org := orgs[0].Org.ID
		now := time.Now().UTC()
		// Two paid top-ups: by card (¥100) and by bank transfer (¥50).
		pi, received, bankReceived := "pi_settle", int64(10000), int64(5000)
		for _, tp := range []models.Topup{
			{OrgID: org, UserID: u.ID, AmountFen: 5000, Method: models.MethodBank, Status: models.TopupPaid, Reference: "SLBANK", ReceivedFen: &bankReceived, CreatedAt: now},
			{OrgID: org, UserID: u.ID, AmountFen: 10000, Method: models.MethodStripe, Status: models.TopupPaid, Reference: "SLCARD", PaymentIntentID: &pi, ReceivedFen: &received, CreatedAt: now},
		} {
			err := db.Tx(ctx, func(tx *gorm.DB) error {
				if err := models.InsertTopup(tx, &tp); err != nil {
					return err
				}
				return ledger.Post(tx, &ledger.LedgerTxn{Kind: "topup", TopupID: &tp.ID, CreatedAt: now},
					ledger.Leg{Kind: ledger.AccPaymentClearing, AmountFen: -*tp.ReceivedFen},
					ledger.Leg{Kind: ledger.AccWallet, OrgID: org, AmountFen: *tp.ReceivedFen})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// Stripe unreachable when the refund is asked for.
		down := &billing.Wallet{DB: db}
		refunds, err := down.RequestRefund(ctx, u, org, 12000)
		if err != nil || len(refunds) != 2 {
			t.Fatalf("refund: %v %+v", err, refunds)
		}
		pending, _ := db.PendingRefunds(ctx)
		if len(pending) != 2 {
			t.Fatalf("pending refunds %+v, want the card and the bank refund", pending)
		}
		if bal, _ := ledger.WalletBalance(ctx, db, org); bal != 3000 {
			t.Errorf("balance %d, want 3000", bal)
		}
		up := &billing.Wallet{DB: db, Gateway: payments.NewStripe("sk_test_settle", mock)}
		for _, r := range pending {
			if err := up.SettleRefund(ctx, u, r.ID); apperr.Code(err) != apperr.EFORBIDDEN {
				t.Errorf("a non-admin settled refund %d: %v", r.ID, err)
			}
			if err := down.SettleRefund(ctx, admin, r.ID); r.Method == models.MethodStripe && apperr.Code(err) != apperr.EUNAVAILABLE {
				t.Errorf("retry without Stripe: %v", err)
			}
			if err := up.SettleRefund(ctx, admin, r.ID); r.Method == models.MethodStripe && err != nil {
				t.Errorf("settle %s refund: %v", r.Method, err)
			}
			if err := up.SettleRefund(ctx, admin, r.ID); apperr.Code(err) != apperr.ENOTFOUND {
				t.Errorf("settled twice: %v", err)
			}
		}
		all, _ := db.RefundsOf(ctx, org)
		for _, r := range all {
			if r.Status != "done" || (r.Method == models.MethodStripe && r.StripeRefundID == nil) {
				t.Errorf("refund %+v not finished", r)
			}
		}
		if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
			t.Errorf("ledger: %v %v", problems, err)
		}
	})
}
