package payments_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"

	"suanli/payments"
)

const secret = "whsec_event_test"

// signed is a Stripe event as Stripe would send it, signed at the time.
func signed(t *testing.T, id, typ string, object any, at time.Time) ([]byte, string) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": "2023-10-16", "created": at.Unix(), "type": typ,
		"data": map[string]any{"object": object},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at})
	return payload, s.Header
}

// A verified Stripe event arrives as the neutral Event carrying what the
// wallet reads; an object that does not decode is left nil for the
// wallet to refuse, and other types carry none.
func TestVerifyWebhookTranslatesTheEvent(t *testing.T) {
	now := time.Now()
	p, h := signed(t, "evt_s", payments.EventCheckoutCompleted, map[string]any{
		"id": "cs_1", "object": "checkout.session", "client_reference_id": "42", "amount_total": 10000, "currency": "cny",
		"payment_status": "paid", "payment_intent": "pi_1", "metadata": map[string]string{"topup_id": "42"},
	}, now)
	ev, err := payments.VerifyWebhook(p, h, secret)
	if err != nil {
		t.Fatal(err)
	}
	s := ev.Session
	if ev.ID != "evt_s" || ev.Type != payments.EventCheckoutCompleted || ev.Charge != nil || s == nil {
		t.Fatalf("event %+v", ev)
	}
	if s.ID != "cs_1" || s.ClientReferenceID != "42" || s.Metadata["topup_id"] != "42" || s.AmountTotal != 10000 || s.Currency != "cny" || !s.Paid || s.PaymentIntentID != "pi_1" {
		t.Errorf("session %+v", s)
	}

	p, h = signed(t, "evt_u", payments.EventAsyncPaymentSucceeded, map[string]any{"id": "cs_2", "object": "checkout.session", "payment_status": "unpaid"}, now)
	if ev, err := payments.VerifyWebhook(p, h, secret); err != nil || ev.Session == nil || ev.Session.Paid || ev.Session.PaymentIntentID != "" {
		t.Errorf("unpaid session %+v %v", ev, err)
	}

	p, h = signed(t, "evt_c", payments.EventChargeRefunded, map[string]any{"id": "ch_1", "object": "charge", "amount_refunded": 500, "payment_intent": "pi_1"}, now)
	if ev, err := payments.VerifyWebhook(p, h, secret); err != nil || ev.Charge == nil || ev.Session != nil || ev.Charge.AmountRefunded != 500 || ev.Charge.PaymentIntentID != "pi_1" {
		t.Errorf("charge %+v %v", ev, err)
	}

	p, h = signed(t, "evt_bad", payments.EventCheckoutCompleted, map[string]any{"id": "cs_3", "amount_total": "lots"}, now)
	if ev, err := payments.VerifyWebhook(p, h, secret); err != nil || ev.ID != "evt_bad" || ev.Session != nil {
		t.Errorf("undecodable session %+v %v", ev, err)
	}

	p, h = signed(t, "evt_o", "customer.created", map[string]any{"id": "cus_1", "object": "customer"}, now)
	if ev, err := payments.VerifyWebhook(p, h, secret); err != nil || ev.Type != "customer.created" || ev.Session != nil || ev.Charge != nil {
		t.Errorf("other event %+v %v", ev, err)
	}

	if _, err := payments.VerifyWebhook(p, h, "whsec_other"); err == nil {
		t.Error("an event signed with another secret verified")
	}
}
