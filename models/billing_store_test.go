package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
)

// storeOwner creates a user owning a personal team, in the models' own
// terms (no use case), and returns both.
func storeOwner(t *testing.T, db *models.DB, email string) (*models.User, *models.Org) {
	t.Helper()
	now := time.Now().UTC()
	u := &models.User{Email: email, Name: "Owner", Lang: "en", PasswordHash: "x", CreatedAt: now}
	o := &models.Org{Kind: models.OrgTeam, Name: "Team " + email, Personal: true, Status: models.OrgActive, CreatedAt: now}
	err := db.Tx(context.Background(), func(tx *gorm.DB) error {
		if err := models.InsertUser(tx, u); err != nil {
			return err
		}
		if err := models.InsertOrg(tx, o); err != nil {
			return err
		}
		return models.AddMember(tx, &models.Membership{OrgID: o.ID, UserID: u.ID, Role: models.RoleOwner, CreatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	return u, o
}

// storeTx runs fn in a transaction and fails the test on its error.
func storeTx(t *testing.T, db *models.DB, fn func(tx *gorm.DB) error) {
	t.Helper()
	if err := db.Tx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// storedTopup reads a top-up back as stored.
func storedTopup(t *testing.T, db *models.DB, id int64) *models.Topup {
	t.Helper()
	tp, err := db.TopupByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// A top-up's life in the store: session recorded, failed, flagged,
// paid with its payment intent, found by it, refunded in part.
func TestTopupStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		u, o := storeOwner(t, db, "payer@example.com")
		now := time.Now().UTC().Truncate(time.Second)
		var made []*models.Topup
		mk := func(method string) *models.Topup {
			tp := &models.Topup{OrgID: o.ID, UserID: u.ID, AmountFen: 10000, Method: method, Status: models.TopupPending, Reference: fmt.Sprint("SL", method, len(made)), CreatedAt: now}
			storeTx(t, db, func(tx *gorm.DB) error { return models.InsertTopup(tx, tp) })
			made = append(made, tp)
			return tp
		}

		a := mk(models.MethodStripe)
		if err := ledger.SetCheckoutSession(ctx, db, a.ID, "cs_a"); err != nil {
			t.Fatal(err)
		}
		if got := storedTopup(t, db, a.ID); got.CheckoutSessionID == nil || *got.CheckoutSessionID != "cs_a" {
			t.Errorf("session %v", got.CheckoutSessionID)
		}
		if err := ledger.FailTopup(ctx, db, a.ID, "no checkout"); err != nil {
			t.Fatal(err)
		}
		if got := storedTopup(t, db, a.ID); got.Status != models.TopupFailed || got.Note != "no checkout" {
			t.Errorf("failed top-up %+v", got)
		}

		// Only a pending top-up fails on a failed payment.
		b := mk(models.MethodStripe)
		storeTx(t, db, func(tx *gorm.DB) error {
			if err := ledger.MarkTopupPaid(tx, b.ID, 9000, "pi_b", &u.ID, now); err != nil {
				return err
			}
			return ledger.FailPendingTopup(tx, b.ID)
		})
		got := storedTopup(t, db, b.ID)
		if got.Status != models.TopupPaid || got.ReceivedFen == nil || *got.ReceivedFen != 9000 || got.PaymentIntentID == nil || *got.PaymentIntentID != "pi_b" ||
			got.ConfirmedBy == nil || *got.ConfirmedBy != u.ID || got.PaidAt == nil || !got.PaidAt.Equal(now) {
			t.Errorf("paid top-up %+v", got)
		}
		c := mk(models.MethodStripe)
		storeTx(t, db, func(tx *gorm.DB) error { return ledger.FailPendingTopup(tx, c.ID) })
		if got := storedTopup(t, db, c.ID); got.Status != models.TopupFailed {
			t.Errorf("pending top-up after a failed payment: %s", got.Status)
		}

		// Paid without a payment intent or an admin leaves those unset.
		d := mk(models.MethodBank)
		storeTx(t, db, func(tx *gorm.DB) error { return ledger.MarkTopupPaid(tx, d.ID, 100, "", nil, now) })
		if got := storedTopup(t, db, d.ID); got.Status != models.TopupPaid || got.PaymentIntentID != nil || got.ConfirmedBy != nil {
			t.Errorf("bank top-up %+v", got)
		}

		e := mk(models.MethodStripe)
		storeTx(t, db, func(tx *gorm.DB) error { return ledger.FlagTopup(tx, e.ID, "paid 1 usd") })
		if got := storedTopup(t, db, e.ID); got.Status != models.TopupFlagged || got.Note != "paid 1 usd" {
			t.Errorf("flagged top-up %+v", got)
		}

		storeTx(t, db, func(tx *gorm.DB) error {
			got, err := ledger.LockTopup(tx, b.ID)
			if err != nil || got.ID != b.ID {
				return fmt.Errorf("lock by id: %+v %v", got, err)
			}
			got, err = ledger.LockTopupByPaymentIntent(tx, "pi_b")
			if err != nil || got.ID != b.ID {
				return fmt.Errorf("lock by payment intent: %+v %v", got, err)
			}
			if _, err := ledger.LockTopupByPaymentIntent(tx, "pi_other"); apperr.Code(err) != apperr.ENOTFOUND {
				return fmt.Errorf("another payment intent: %v", err)
			}
			if _, err := ledger.LockTopup(tx, 9999); apperr.Code(err) != apperr.ENOTFOUND {
				return fmt.Errorf("missing top-up: %v", err)
			}
			return ledger.AddTopupRefunded(tx, b.ID, 4000)
		})
		if got := storedTopup(t, db, b.ID); got.RefundedFen != 4000 {
			t.Errorf("refunded %d, want 4000", got.RefundedFen)
		}
		// Paid and not refunded: b's 5000 left and d's 100.
		if fen, err := ledger.PaidNotRefunded(ctx, db, o.ID); err != nil || fen != 5100 {
			t.Errorf("paid not refunded %d %v, want 5100", fen, err)
		}
		// Newest first, only those with money left.
		storeTx(t, db, func(tx *gorm.DB) error {
			ts, err := ledger.RefundableTopups(tx, o.ID)
			if err != nil || len(ts) != 2 || ts[0].ID != d.ID || ts[1].ID != b.ID {
				return fmt.Errorf("refundable %+v %v", ts, err)
			}
			return ledger.AddTopupRefunded(tx, d.ID, 100)
		})
		storeTx(t, db, func(tx *gorm.DB) error {
			ts, err := ledger.RefundableTopups(tx, o.ID)
			if err != nil || len(ts) != 1 || ts[0].ID != b.ID {
				return fmt.Errorf("refundable after d: %+v %v", ts, err)
			}
			return nil
		})
	})
}

// An event id is recorded once, however often it is inserted; the record
// links to its top-up and can be flagged.
func TestStripeEventStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		u, o := storeOwner(t, db, "events@example.com")
		tp := &models.Topup{OrgID: o.ID, UserID: u.ID, AmountFen: 1000, Method: models.MethodStripe, Status: models.TopupPending, Reference: "SLEVENT", CreatedAt: time.Now().UTC()}
		storeTx(t, db, func(tx *gorm.DB) error { return models.InsertTopup(tx, tp) })
		ev := func() *models.StripeEvent {
			return &models.StripeEvent{ID: "evt_1", Type: "checkout.session.completed", ReceivedAt: time.Now().UTC()}
		}
		storeTx(t, db, func(tx *gorm.DB) error {
			created, err := ledger.InsertStripeEvent(tx, ev())
			if err != nil || !created {
				return fmt.Errorf("first insert: %v %v", created, err)
			}
			if err := ledger.SetStripeEventTopup(tx, "evt_1", tp.ID); err != nil {
				return err
			}
			return ledger.FlagStripeEvent(tx, "evt_1", "needs a look")
		})
		storeTx(t, db, func(tx *gorm.DB) error {
			created, err := ledger.InsertStripeEvent(tx, ev())
			if err != nil || created {
				return fmt.Errorf("second insert: %v %v", created, err)
			}
			return nil
		})
		flagged, err := db.FlaggedStripeEvents(ctx)
		if err != nil || len(flagged) != 1 || flagged[0].Note != "needs a look" || flagged[0].TopupID == nil || *flagged[0].TopupID != tp.ID {
			t.Errorf("flagged %+v %v", flagged, err)
		}
	})
}

// A refund is pending until paid at Stripe or finished by an admin, once.
func TestRefundStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		u, o := storeOwner(t, db, "refunds@example.com")
		now := time.Now().UTC().Truncate(time.Second)
		card := &models.Refund{OrgID: o.ID, UserID: u.ID, AmountFen: 100, Method: models.MethodStripe, Status: ledger.RefundPending, CreatedAt: now}
		bank := &models.Refund{OrgID: o.ID, UserID: u.ID, AmountFen: 200, Method: models.MethodBank, Status: ledger.RefundPending, CreatedAt: now}
		storeTx(t, db, func(tx *gorm.DB) error {
			if err := ledger.InsertRefund(tx, card); err != nil {
				return err
			}
			return ledger.InsertRefund(tx, bank)
		})
		if r, err := ledger.PendingRefund(ctx, db, card.ID); err != nil || r.AmountFen != 100 {
			t.Fatalf("pending refund %+v %v", r, err)
		}
		storeTx(t, db, func(tx *gorm.DB) error { return ledger.RefundPaidAtStripe(tx, card.ID, "re_1", now) })
		if _, err := ledger.PendingRefund(ctx, db, card.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a done refund is still pending: %v", err)
		}
		for i, want := range []bool{true, false} {
			storeTx(t, db, func(tx *gorm.DB) error {
				changed, err := ledger.FinishPendingRefund(tx, bank.ID, now)
				if err != nil || changed != want {
					return fmt.Errorf("finish #%d: %v %v", i, changed, err)
				}
				return nil
			})
		}
		rs, err := db.RefundsOf(ctx, o.ID)
		if err != nil || len(rs) != 2 {
			t.Fatalf("refunds %+v %v", rs, err)
		}
		for _, r := range rs {
			if r.Status != ledger.RefundDone || r.DoneAt == nil || (r.Method == models.MethodStripe && (r.StripeRefundID == nil || *r.StripeRefundID != "re_1")) {
				t.Errorf("refund %+v not done", r)
			}
		}
	})
}

// Wallet sums by ledger transaction kind: credits of the kinds asked for,
// and debits of a kind since a time, for the organisation or one member.
func TestWalletSumsByKind(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		u, o := storeOwner(t, db, "sums@example.com")
		other, _ := storeOwner(t, db, "other@example.com")
		now := time.Now().UTC()
		postKind := func(kind string, fen int64, by *int64, at time.Time) {
			storeTx(t, db, func(tx *gorm.DB) error {
				return ledger.Post(tx, &ledger.LedgerTxn{Kind: kind, CreatedBy: by, CreatedAt: at},
					ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -fen},
					ledger.Leg{Kind: ledger.AccWallet, OrgID: o.ID, AmountFen: fen})
			})
		}
		postKind("promo_credit", 300, nil, now)
		postKind("trial_credit", 200, nil, now)
		postKind("topup", 5000, nil, now)
		postKind("charge", -100, &u.ID, now.Add(-2*time.Hour))
		postKind("charge", -40, &u.ID, now)
		postKind("charge", -60, &other.ID, now)
		if fen, err := ledger.WalletCreditsOfKinds(ctx, db, o.ID, []string{"promo_credit", "trial_credit", "sla_credit"}); err != nil || fen != 500 {
			t.Errorf("promotional credits %d %v, want 500", fen, err)
		}
		storeTx(t, db, func(tx *gorm.DB) error {
			for _, c := range []struct {
				user  int64
				since time.Time
				want  int64
			}{{0, now.Add(-3 * time.Hour), 200}, {0, now.Add(-time.Hour), 100}, {u.ID, now.Add(-time.Hour), 40}, {other.ID, now.Add(-time.Hour), 60}} {
				if fen, err := ledger.WalletDebitsSince(tx, o.ID, "charge", c.user, c.since); err != nil || fen != c.want {
					return fmt.Errorf("debits by %d since %v: %d %v, want %d", c.user, c.since, fen, err, c.want)
				}
			}
			return nil
		})
	})
}
