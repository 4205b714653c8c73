package billing

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/locales"
	"suanli/models"
	"suanli/models/invoicestore"
	"suanli/models/ledger"
	"suanli/payments"
	"suanli/pricing"
)

// Top-up limits.
const (
	MinTopupFen = 1_000      // ¥10
	MaxTopupFen = 50_000_000 // ¥500,000
)

// Wallet holds the money rules: top-ups, their fulfilment from Stripe's
// webhooks or an admin's confirmation of a bank transfer, promotional
// credits and refunds. Every movement is a balanced ledger transaction
// (ledger.Post).
type Wallet struct {
	DB *models.DB
	// Gateway is Stripe, or nil when card payments are not configured.
	Gateway payments.Gateway
	// BaseURL is where Stripe sends the payer back.
	BaseURL string
}

// StartTopup creates a pending top-up for an organisation. For Stripe it
// also creates the Checkout session and returns its URL; for a bank
// transfer the top-up's reference is what the payer quotes.
func (w *Wallet) StartTopup(ctx context.Context, u *models.User, orgID, amountFen int64, method, lang string) (*models.Topup, string, error) {
	if !u.Verified() {
		return nil, "", &apperr.Error{Code: apperr.EFORBIDDEN, Message: "verify your email before topping up", Key: "err.verify_first"}
	}
	if amountFen < MinTopupFen || amountFen > MaxTopupFen {
		return nil, "", apperr.Field("amount_fen", "err.topup_limits", pricing.FenToYuanString(MinTopupFen), pricing.FenToYuanString(MaxTopupFen))
	}
	switch method {
	case models.MethodStripe:
		if w.Gateway == nil {
			return nil, "", apperr.Field("method", "err.card_not_configured")
		}
	case models.MethodBank:
	default:
		return nil, "", apperr.Field("method", "err.topup_method")
	}
	t := &models.Topup{OrgID: orgID, UserID: u.ID, AmountFen: amountFen, Method: method, Status: models.TopupPending,
		Reference: newReference(), CreatedAt: w.DB.Now().UTC()}
	if err := w.DB.Tx(ctx, func(tx *gorm.DB) error { return models.InsertTopup(tx, t) }); err != nil {
		return nil, "", err
	}
	if method == models.MethodBank {
		return t, "", nil
	}
	base := strings.TrimRight(w.BaseURL, "/")
	id := strconv.FormatInt(t.ID, 10)
	sess, url, err := w.Gateway.Checkout(ctx, payments.CheckoutRequest{
		TopupID: t.ID, AmountFen: amountFen, Email: u.Email, Locale: map[bool]string{true: "en", false: "zh"}[lang == "en"],
		SuccessURL: base + "/topups/" + id + "?return=success", CancelURL: base + "/topups/" + id + "?return=cancel",
	})
	if err != nil {
		slog.Error("stripe checkout failed", "topup", t.ID, "err", err)
		_ = ledger.FailTopup(ctx, w.DB, t.ID, "checkout could not be created")
		return nil, "", &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "the payment provider did not answer; nothing was charged", Key: "err.provider_down"}
	}
	t.CheckoutSessionID = &sess
	if err := ledger.SetCheckoutSession(ctx, w.DB, t.ID, sess); err != nil {
		return nil, "", err
	}
	return t, url, nil
}

// newReference is a bank-transfer reference: short, unambiguous, unique.
func newReference() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "SL" + string(b)
}

// stripeEventID reports whether id can be a Stripe event id ("evt_…"):
// 1 to 255 letters, digits, '_' and '-', as the stripe_events key column holds.
func stripeEventID(id string) bool {
	if id == "" || len(id) > 255 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func topupKey(id int64) *string {
	k := "topup:" + strconv.FormatInt(id, 10)
	return &k
}

// HandleStripeEvent applies a verified payment event (from Stripe's
// webhook, translated by payments.VerifyWebhook). The event id is
// stored in the same transaction as its effect, so a replayed or
// concurrent duplicate changes nothing. Money is credited only from a paid
// checkout.session.completed or from checkout.session.async_payment_succeeded,
// and only when amount and currency match the top-up; a mismatch is
// recorded and flagged for an admin, crediting nothing. An event without
// a usable id or type is refused (EINVALID) before anything is stored: the
// id is what makes a delivery idempotent.
func (w *Wallet) HandleStripeEvent(ctx context.Context, ev payments.Event) error {
	if !stripeEventID(ev.ID) {
		return apperr.Field("id", "err.webhook_payload")
	}
	if ev.Type == "" {
		return apperr.Field("type", "err.webhook_payload")
	}
	err := w.DB.Tx(ctx, func(tx *gorm.DB) error {
		rec := &models.StripeEvent{ID: ev.ID, Type: ev.Type, ReceivedAt: w.DB.Now().UTC()}
		created, err := ledger.InsertStripeEvent(tx, rec)
		if err != nil {
			return err
		}
		if !created {
			return errDuplicateEvent // an earlier or concurrent delivery got there first
		}
		switch ev.Type {
		case payments.EventCheckoutCompleted, payments.EventAsyncPaymentSucceeded, payments.EventAsyncPaymentFailed:
			s := ev.Session
			if s == nil {
				return apperr.Field("payload", "err.webhook_payload")
			}
			t, err := topupOfSession(tx, s)
			if err != nil {
				return w.flag(tx, rec, nil, "no top-up for this session")
			}
			rec.TopupID = &t.ID
			if err := ledger.SetStripeEventTopup(tx, rec.ID, t.ID); err != nil {
				return err
			}
			if ev.Type == payments.EventAsyncPaymentFailed {
				return ledger.FailPendingTopup(tx, t.ID)
			}
			if ev.Type == payments.EventCheckoutCompleted && !s.Paid {
				return nil // async methods: wait for async_payment_succeeded
			}
			if s.AmountTotal != t.AmountFen || s.Currency != "cny" {
				return w.flag(tx, rec, t, fmt.Sprintf("paid %d %s, top-up is %d cny", s.AmountTotal, s.Currency, t.AmountFen))
			}
			// A webhook is the system acting, whoever the request claims to be.
			return fulfil(audit.AsSystem(ctx), tx, t, t.AmountFen, ledger.AccPaymentClearing, s.PaymentIntentID, nil, w.DB.Now().UTC())
		case payments.EventChargeRefunded:
			c := ev.Charge
			if c == nil {
				return apperr.Field("payload", "err.webhook_payload")
			}
			if c.PaymentIntentID == "" {
				return nil
			}
			t, err := ledger.LockTopupByPaymentIntent(tx, c.PaymentIntentID)
			if err != nil {
				return nil // not ours
			}
			if c.AmountRefunded > t.RefundedFen {
				// Refunded outside Suanli (e.g. in Stripe's dashboard): the
				// wallet still holds the money; an admin must decide.
				return w.flag(tx, rec, t, fmt.Sprintf("Stripe refunded %d fen, Suanli refunded %d", c.AmountRefunded, t.RefundedFen))
			}
		}
		return nil
	})
	if errors.Is(err, errDuplicateEvent) {
		return nil
	}
	return err
}

var errDuplicateEvent = errors.New("duplicate event")

func topupOfSession(tx *gorm.DB, s *payments.CheckoutSession) (*models.Topup, error) {
	ref := s.ClientReferenceID
	if ref == "" {
		ref = s.Metadata["topup_id"]
	}
	id, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		return nil, err
	}
	t, err := ledger.LockTopup(tx, id)
	if err != nil {
		return nil, err
	}
	if t.Method != models.MethodStripe || (t.CheckoutSessionID != nil && *t.CheckoutSessionID != s.ID) {
		return nil, errors.New("session does not belong to the top-up")
	}
	return t, nil
}

// flag records that an event needs an admin, and credits nothing.
func (w *Wallet) flag(tx *gorm.DB, rec *models.StripeEvent, t *models.Topup, note string) error {
	slog.Warn("stripe event flagged", "event", rec.ID, "note", note)
	if err := ledger.FlagStripeEvent(tx, rec.ID, note); err != nil {
		return err
	}
	if t != nil && t.Status == models.TopupPending {
		return ledger.FlagTopup(tx, t.ID, note)
	}
	return nil
}

// fulfil credits a pending top-up, once.
func fulfil(ctx context.Context, tx *gorm.DB, t *models.Topup, amount int64, from, pi string, by *int64, when time.Time) error {
	if t.Status != models.TopupPending {
		return nil // already paid (or failed): nothing more to credit
	}
	err := ledger.Post(tx, &ledger.LedgerTxn{Kind: "topup", Memo: t.Reference, IdemKey: topupKey(t.ID), TopupID: &t.ID, CreatedBy: by, CreatedAt: when},
		ledger.Leg{Kind: from, AmountFen: -amount},
		ledger.Leg{Kind: ledger.AccWallet, OrgID: t.OrgID, AmountFen: amount})
	if errors.Is(err, ledger.ErrDuplicate) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := ledger.MarkTopupPaid(tx, t.ID, amount, pi, by, when); err != nil {
		return err
	}
	return audit.Record(ctx, tx, audit.TopupConfirmed, fmt.Sprintf("topup:%d", t.ID), audit.Fen(amount), fmt.Sprintf("%s %s to org %d via %s", t.Method, t.Reference, t.OrgID, from),
		locales.M("audit.topup_confirmed", locales.M("audit.method."+t.Method), t.Reference, t.OrgID))
}

// ConfirmBankTransfer is a platform admin recording that a bank transfer
// arrived, with the amount actually received; the wallet is credited that.
func (w *Wallet) ConfirmBankTransfer(ctx context.Context, admin *models.User, topupID, receivedFen int64) error {
	if admin == nil || !admin.PlatformAdmin {
		return apperr.Errorf(apperr.EFORBIDDEN, "platform admins only")
	}
	if receivedFen <= 0 || receivedFen > MaxTopupFen {
		return apperr.Field("received", "err.topup_limits", "0.01", pricing.FenToYuanString(MaxTopupFen))
	}
	return w.DB.Tx(ctx, func(tx *gorm.DB) error {
		t, err := ledger.LockTopup(tx, topupID)
		if err != nil {
			return err
		}
		if t.Method != models.MethodBank || t.Status != models.TopupPending {
			return apperr.Errorf(apperr.ECONFLICT, "this top-up is not a pending bank transfer")
		}
		return fulfil(ctx, tx, t, receivedFen, ledger.AccBankClearing, "", &admin.ID, w.DB.Now().UTC())
	})
}

// CreditPromo posts a promotional credit to an organisation's wallet: a
// ledger transaction like any other, never refundable as cash. A non-nil
// key makes it once-only. reason is the memo as typed, or in English with
// msg the same as a message.
func CreditPromo(tx *gorm.DB, orgID, fen int64, kind, reason string, key *string, by *int64, now time.Time, msg ...locales.Msg) error {
	if fen <= 0 {
		return apperr.Field("fen", "err.amount")
	}
	txn := &ledger.LedgerTxn{Kind: kind, Memo: reason, IdemKey: key, CreatedBy: by, CreatedAt: now}
	if len(msg) > 0 {
		txn.MemoMsg = msg[0]
	}
	return ledger.Post(tx, txn,
		ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -fen},
		ledger.Leg{Kind: ledger.AccWallet, OrgID: orgID, AmountFen: fen})
}

// Refundable is how much of a wallet may be paid back as cash: never
// promotional credit, never more than was paid in and not yet refunded,
// and never money an active invoice (requested or issued) covers: that
// invoice must be reversed or voided first.
func (w *Wallet) Refundable(ctx context.Context, orgID int64) (int64, error) {
	cash, _, err := w.refundableCash(ctx, orgID)
	return cash, err
}

// refundableCash is Refundable, and what it would be without the
// organisation's active invoices.
func (w *Wallet) refundableCash(ctx context.Context, orgID int64) (cash, uninvoiced int64, err error) {
	bal, err := ledger.WalletBalance(ctx, w.DB, orgID)
	if err != nil {
		return 0, 0, err
	}
	promo, err := ledger.WalletCreditsOfKinds(ctx, w.DB, orgID, promotionalKinds)
	if err != nil {
		return 0, 0, err
	}
	paid, err := ledger.PaidNotRefunded(ctx, w.DB, orgID)
	if err != nil {
		return 0, 0, err
	}
	invoiced, err := invoicestore.ActiveSumRead(ctx, w.DB, orgID)
	if err != nil {
		return 0, 0, err
	}
	return refundable(bal, promo, paid-invoiced), refundable(bal, promo, paid), nil
}

// invoicedRefusal refuses a refund of amount that only the organisation's
// active invoices stand in the way of: it names them, and says to have
// them reversed (红冲) or voided (作废) first; at most left is refundable.
func invoicedRefusal(active []invoicestore.Invoice, left int64) error {
	names := make([]string, len(active))
	for i, inv := range active {
		names[i] = "#" + strconv.FormatInt(inv.ID, 10)
		if n := inv.NumberOrEmpty(); n != "" {
			names[i] += " (" + n + ")"
		}
	}
	return apperr.Field("amount_fen", "invoice.err.refund_invoiced", pricing.FenToYuanString(left), strings.Join(names, ", "))
}

// promotionalKinds are the ledger transactions that credit a wallet with
// money nobody paid in, and so never come back out as cash.
var promotionalKinds = []string{"promo_credit", "trial_credit", "sla_credit"}

// refundable is the cash part of a balance: the balance less promotional
// credit, at most what was paid in and not yet refunded, never negative.
func refundable(balance, promo, paidIn int64) int64 {
	return max(0, min(balance-promo, paidIn))
}

// RequestRefund pays unused balance back against the original payments,
// newest first: Stripe refunds at once, bank-transfer refunds are recorded
// for an admin to pay. The wallet is debited in the same transaction that
// records the refunds.
func (w *Wallet) RequestRefund(ctx context.Context, u *models.User, orgID, amountFen int64) ([]models.Refund, error) {
	refundable, uninvoiced, err := w.refundableCash(ctx, orgID)
	if err != nil {
		return nil, err
	}
	if amountFen > refundable && amountFen <= uninvoiced {
		active, err := invoicestore.ActiveOfRead(ctx, w.DB, orgID)
		if err != nil {
			return nil, err
		}
		return nil, invoicedRefusal(active, refundable)
	}
	if amountFen <= 0 || amountFen > refundable {
		return nil, apperr.Field("amount_fen", "err.refund_limit", pricing.FenToYuanString(refundable))
	}
	var refunds []models.Refund
	now := w.DB.Now().UTC()
	err = w.DB.Tx(ctx, func(tx *gorm.DB) error {
		// Locked, so two refund requests at once cannot both take the same
		// money, nor a refund and an invoice request (package invoices
		// takes the same lock) the same money twice.
		paid, err := ledger.RefundableTopups(tx, orgID)
		if err != nil {
			return err
		}
		var cash int64
		for _, t := range paid {
			cash += *t.ReceivedFen - t.RefundedFen
		}
		active, err := invoicestore.ActiveOf(tx, orgID)
		if err != nil {
			return err
		}
		var invoiced int64
		for _, inv := range active {
			invoiced += inv.AmountFen
		}
		if amountFen > cash-invoiced && amountFen <= cash {
			return invoicedRefusal(active, max(0, cash-invoiced))
		}
		left := amountFen
		for _, t := range paid {
			if left == 0 {
				break
			}
			part := min(left, *t.ReceivedFen-t.RefundedFen)
			left -= part
			r := models.Refund{OrgID: orgID, UserID: u.ID, TopupID: &t.ID, AmountFen: part, Method: t.Method, Status: ledger.RefundPending, CreatedAt: now}
			if err := ledger.InsertRefund(tx, &r); err != nil {
				return err
			}
			clearing := ledger.AccPaymentClearing
			if t.Method == models.MethodBank {
				clearing = ledger.AccBankClearing
			}
			if err := ledger.Post(tx, &ledger.LedgerTxn{Kind: "refund", Memo: t.Reference, TopupID: &t.ID, CreatedBy: &u.ID, CreatedAt: now},
				ledger.Leg{Kind: ledger.AccWallet, OrgID: orgID, AmountFen: -part},
				ledger.Leg{Kind: clearing, AmountFen: part}); err != nil {
				return err
			}
			if err := audit.Record(ctx, tx, audit.RefundAsked, fmt.Sprintf("refund:%d", r.ID), audit.Fen(part), fmt.Sprintf("org %d, %s payment %s", orgID, t.Method, t.Reference),
				locales.M("audit.refund_asked", orgID, locales.M("audit.method."+t.Method), t.Reference)); err != nil {
				return err
			}
			if err := ledger.AddTopupRefunded(tx, t.ID, part); err != nil {
				return err
			}
			refunds = append(refunds, r)
		}
		if left != 0 {
			return apperr.Field("amount_fen", "err.refund_limit", pricing.FenToYuanString(amountFen-left))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Stripe is called after the commit, so a slow provider holds no lock;
	// a failure leaves the refund pending, listed for an admin to retry
	// (the money is out of the wallet and in clearing, so nothing is lost
	// or paid twice: the retry reuses the idempotency key).
	for i := range refunds {
		if refunds[i].Method != models.MethodStripe {
			continue
		}
		if err := w.refundAtStripe(ctx, &refunds[i]); err != nil {
			slog.Error("stripe refund failed; left pending for an admin", "refund", refunds[i].ID, "err", err)
		}
	}
	return refunds, nil
}

// refundAtStripe pays a pending Stripe refund back against its payment
// and marks it done.
func (w *Wallet) refundAtStripe(ctx context.Context, r *models.Refund) error {
	if w.Gateway == nil {
		return payments.ErrNotConfigured
	}
	t, err := w.DB.TopupByID(ctx, *r.TopupID)
	if err != nil {
		return err
	}
	if t.PaymentIntentID == nil {
		return errors.New("the payment has no payment intent")
	}
	id, err := w.Gateway.Refund(ctx, *t.PaymentIntentID, r.AmountFen, "refund-"+strconv.FormatInt(r.ID, 10))
	if err != nil {
		return err
	}
	done := w.DB.Now().UTC()
	if err := w.DB.Tx(ctx, func(tx *gorm.DB) error {
		if err := ledger.RefundPaidAtStripe(tx, r.ID, id, done); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.RefundPaid, fmt.Sprintf("refund:%d", r.ID), audit.Fen(r.AmountFen), "stripe "+id, locales.M("audit.refund_stripe", id))
	}); err != nil {
		return err
	}
	r.Status, r.StripeRefundID, r.DoneAt = ledger.RefundDone, &id, &done
	return nil
}

// SettleRefund is a platform admin finishing a pending refund: a bank
// refund they have paid out, or a Stripe refund that failed and is retried.
func (w *Wallet) SettleRefund(ctx context.Context, admin *models.User, refundID int64) error {
	if admin == nil || !admin.PlatformAdmin {
		return apperr.Errorf(apperr.EFORBIDDEN, "platform admins only")
	}
	r, err := ledger.PendingRefund(ctx, w.DB, refundID)
	if err != nil {
		return err
	}
	if r.Method == models.MethodStripe {
		if err := w.refundAtStripe(ctx, r); err != nil {
			slog.Error("stripe refund retry failed", "refund", r.ID, "err", err)
			return &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "Stripe did not accept the refund; try again later", Key: "err.provider_down"}
		}
		return nil
	}
	return w.DB.Tx(ctx, func(tx *gorm.DB) error {
		changed, err := ledger.FinishPendingRefund(tx, r.ID, w.DB.Now().UTC())
		if err != nil || !changed {
			return err
		}
		return audit.Record(ctx, tx, audit.RefundPaid, fmt.Sprintf("refund:%d", r.ID), audit.Fen(r.AmountFen), "bank transfer", locales.M("audit.refund_bank"))
	})
}
