// Package payments is the Stripe gateway: Checkout sessions for top-ups
// (card, Alipay, WeChat Pay in CNY), refunds, and webhook verification.
package payments

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"github.com/stripe/stripe-go/v76/webhook"
)

// ErrNotConfigured is returned when no Stripe secret key is set.
var ErrNotConfigured = errors.New("card payments are not configured (STRIPE_SECRET_KEY)")

// Gateway is what the market needs from a payment provider.
type Gateway interface {
	// Checkout starts a hosted payment for a top-up and returns the
	// session id and the URL to send the payer to.
	Checkout(ctx context.Context, c CheckoutRequest) (sessionID, url string, err error)
	// Refund refunds part of a payment; the key makes a retry safe.
	Refund(ctx context.Context, paymentIntentID string, amountFen int64, idempotencyKey string) (refundID string, err error)
}

// CheckoutRequest is one top-up's payment.
type CheckoutRequest struct {
	TopupID    int64
	AmountFen  int64
	Email      string
	SuccessURL string
	CancelURL  string
	Locale     string // "zh" or "en"
}

// Stripe is the Gateway on Stripe's API.
type Stripe struct {
	api *client.API
}

// NewStripe returns a gateway using the secret key; apiBase, when not
// empty, replaces Stripe's API URL (stripe-mock in tests and local runs).
func NewStripe(secretKey, apiBase string) *Stripe {
	var backends *stripe.Backends
	if apiBase != "" {
		cfg := &stripe.BackendConfig{URL: stripe.String(apiBase), MaxNetworkRetries: stripe.Int64(1)}
		backends = &stripe.Backends{
			API:     stripe.GetBackendWithConfig(stripe.APIBackend, cfg),
			Connect: stripe.GetBackendWithConfig(stripe.ConnectBackend, cfg),
			Uploads: stripe.GetBackendWithConfig(stripe.UploadsBackend, cfg),
		}
	}
	return &Stripe{api: client.New(secretKey, backends)}
}

// Checkout implements Gateway: a Checkout session in CNY offering card,
// Alipay and WeChat Pay, carrying the top-up id as client_reference_id and
// in metadata, created with an idempotency key per top-up.
func (s *Stripe) Checkout(ctx context.Context, c CheckoutRequest) (string, string, error) {
	id := strconv.FormatInt(c.TopupID, 10)
	p := &stripe.CheckoutSessionParams{
		Mode:               stripe.String(string(stripe.CheckoutSessionModePayment)),
		PaymentMethodTypes: stripe.StringSlice([]string{"card", "alipay", "wechat_pay"}),
		PaymentMethodOptions: &stripe.CheckoutSessionPaymentMethodOptionsParams{
			WeChatPay: &stripe.CheckoutSessionPaymentMethodOptionsWeChatPayParams{Client: stripe.String("web")},
		},
		LineItems: []*stripe.CheckoutSessionLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionLineItemPriceDataParams{
				Currency:    stripe.String("cny"),
				UnitAmount:  stripe.Int64(c.AmountFen),
				ProductData: &stripe.CheckoutSessionLineItemPriceDataProductDataParams{Name: stripe.String("Suanli wallet top-up #" + id)},
			},
		}},
		ClientReferenceID: stripe.String(id),
		SuccessURL:        stripe.String(c.SuccessURL),
		CancelURL:         stripe.String(c.CancelURL),
		ExpiresAt:         stripe.Int64(time.Now().Add(2 * time.Hour).Unix()),
	}
	if c.Email != "" {
		p.CustomerEmail = stripe.String(c.Email)
	}
	if c.Locale == "en" {
		p.Locale = stripe.String("en")
	} else {
		p.Locale = stripe.String("zh")
	}
	p.AddMetadata("topup_id", id)
	p.SetIdempotencyKey("topup-checkout-" + id)
	p.Context = ctx
	sess, err := s.api.CheckoutSessions.New(p)
	if err != nil {
		return "", "", fmt.Errorf("stripe checkout: %w", err)
	}
	return sess.ID, sess.URL, nil
}

// Refund implements Gateway.
func (s *Stripe) Refund(ctx context.Context, paymentIntentID string, amountFen int64, key string) (string, error) {
	p := &stripe.RefundParams{PaymentIntent: stripe.String(paymentIntentID), Amount: stripe.Int64(amountFen)}
	p.SetIdempotencyKey(key)
	p.Context = ctx
	r, err := s.api.Refunds.New(p)
	if err != nil {
		return "", fmt.Errorf("stripe refund: %w", err)
	}
	return r.ID, nil
}

// WebhookTolerance is how old a signed event may be, and how far ahead of
// this server's clock its signature may be dated.
const WebhookTolerance = 5 * time.Minute

// ErrWebhookFromFuture is a correctly signed event dated more than
// WebhookTolerance ahead.
var ErrWebhookFromFuture = errors.New("the signature's timestamp is in the future")

// VerifyWebhook checks an event's signature and age, parses it and
// translates it into the gateway-neutral Event. Events must be of
// stripe-go's API version (2023-10-16), which is what the production
// webhook endpoint is created for.
func VerifyWebhook(payload []byte, signature, secret string) (Event, error) {
	ev, err := webhook.ConstructEventWithTolerance(payload, signature, secret, WebhookTolerance)
	if err != nil {
		return Event{}, err
	}
	// stripe-go only checks that the signature is not too old: one dated
	// years ahead would pass, and could be replayed until then. The
	// timestamp is covered by the signature just checked.
	if at, ok := signedAt(signature); !ok || at.After(time.Now().Add(WebhookTolerance)) {
		return Event{}, ErrWebhookFromFuture
	}
	return stripeToEvent(ev), nil
}

// signedAt is the timestamp ("t=") of a Stripe-Signature header.
func signedAt(header string) (time.Time, bool) {
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			secs, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(secs, 0), true
		}
	}
	return time.Time{}, false
}
