package payments

import (
	"encoding/json"

	"github.com/stripe/stripe-go/v76"
)

// Event types the wallet acts on. They are Stripe's names, which are what
// the stored event records (models.StripeEvent.Type) have always held.
const (
	EventCheckoutCompleted     = "checkout.session.completed"
	EventAsyncPaymentSucceeded = "checkout.session.async_payment_succeeded"
	EventAsyncPaymentFailed    = "checkout.session.async_payment_failed"
	EventChargeRefunded        = "charge.refunded"
)

// Event is a verified payment event in the gateway's neutral form: what
// the wallet reads, without the gateway's SDK types, so that the use case
// depends on this package only.
type Event struct {
	// ID is the gateway's event id, which makes a delivery idempotent.
	ID string
	// Type is the event's type (the Event… constants, or any other the
	// wallet ignores).
	Type string
	// Session is the checkout session of a checkout.session.* event; nil
	// for other types, and when the payload could not be decoded (the
	// wallet refuses such an event as a bad payload).
	Session *CheckoutSession
	// Charge is the charge of a charge.refunded event; nil for other
	// types, and when the payload could not be decoded.
	Charge *Charge
}

// CheckoutSession is a hosted payment for a top-up.
type CheckoutSession struct {
	ID string
	// ClientReferenceID and Metadata carry the top-up id (Checkout sets both).
	ClientReferenceID string
	Metadata          map[string]string
	// AmountTotal is in the currency's minor unit (fen for "cny").
	AmountTotal int64
	// Currency is the lower-case ISO code, "cny" for a top-up.
	Currency string
	// Paid is whether the payment has been received (an async method such
	// as a bank debit completes the session before it is paid).
	Paid bool
	// PaymentIntentID is the payment the session made, "" when none.
	PaymentIntentID string
}

// Charge is a card or wallet payment, as far as refunds go.
type Charge struct {
	// PaymentIntentID is the charge's payment, "" when none.
	PaymentIntentID string
	// AmountRefunded is what the gateway has refunded of it in total.
	AmountRefunded int64
}

// stripeToEvent translates a verified Stripe event. Only the objects of
// the types the wallet acts on are decoded; a payload that does not decode
// leaves Session or Charge nil rather than failing here, so that the
// wallet checks the id and type and the event's idempotency first, as it
// did when it decoded Stripe's payload itself.
func stripeToEvent(ev stripe.Event) Event {
	out := Event{ID: ev.ID, Type: string(ev.Type)}
	var raw json.RawMessage
	if ev.Data != nil {
		raw = ev.Data.Raw
	}
	switch out.Type {
	case EventCheckoutCompleted, EventAsyncPaymentSucceeded, EventAsyncPaymentFailed:
		var s stripe.CheckoutSession
		if raw == nil || json.Unmarshal(raw, &s) != nil {
			return out
		}
		out.Session = &CheckoutSession{
			ID: s.ID, ClientReferenceID: s.ClientReferenceID, Metadata: s.Metadata,
			AmountTotal: s.AmountTotal, Currency: string(s.Currency),
			Paid: s.PaymentStatus == stripe.CheckoutSessionPaymentStatusPaid,
		}
		if s.PaymentIntent != nil {
			out.Session.PaymentIntentID = s.PaymentIntent.ID
		}
	case EventChargeRefunded:
		var c stripe.Charge
		if raw == nil || json.Unmarshal(raw, &c) != nil {
			return out
		}
		out.Charge = &Charge{AmountRefunded: c.AmountRefunded}
		if c.PaymentIntent != nil {
			out.Charge.PaymentIntentID = c.PaymentIntent.ID
		}
	}
	return out
}
