package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/payments"
	"suanli/routenames"
	"suanli/stripemock"
)

const webhookSecret = "whsec_test_suanli"

// stripeApp is the real router with Stripe pointed at stripe-mock.
func stripeApp(t *testing.T, db *models.DB) (*app, string) {
	mock := stripemock.Start(t)
	a := newAppWith(t, db, func(h *handlers.Handler) {
		h.Wallet.Gateway = payments.NewStripe("sk_test_suanli", mock)
		h.StripeWebhookSecret = webhookSecret
	})
	return a, mock
}

// apiUser is a verified user with a personal organisation and an API token.
func apiUser(t *testing.T, a *app, email string) (u *models.User, org int64, token string) {
	ctx := context.Background()
	svc := &accounts.Service{DB: a.db}
	u, err := svc.CreateUser(ctx, email, testPassword, "Wallet User", false)
	if err != nil {
		t.Fatal(err)
	}
	orgs, _ := a.db.OrgsOfUser(ctx, u.ID)
	token, _, err = svc.CreateAPIToken(ctx, u, "test")
	if err != nil {
		t.Fatal(err)
	}
	return u, orgs[0].Org.ID, token
}

func (a *app) apiPost(path, token, body string) (*http.Response, string) {
	a.t.Helper()
	req, _ := http.NewRequest("POST", a.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return a.do(req)
}

func (a *app) do(req *http.Request) (*http.Response, string) {
	a.t.Helper()
	res, err := a.c.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// event is a signed Stripe event as Stripe would send it.
func event(id, typ string, object map[string]any, at time.Time, secret string) (payload []byte, header string) {
	payload, _ = json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": "2023-10-16", "created": at.Unix(), "type": typ,
		"data": map[string]any{"object": object},
	})
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at})
	return payload, signed.Header
}

func session(topupID int64, sessionID string, amount int64, paid string) map[string]any {
	return map[string]any{
		"id": sessionID, "object": "checkout.session", "client_reference_id": fmt.Sprint(topupID),
		"amount_total": amount, "currency": "cny", "payment_status": paid, "payment_intent": "pi_" + fmt.Sprint(topupID),
		"metadata": map[string]string{"topup_id": fmt.Sprint(topupID)},
	}
}

func (a *app) deliver(payload []byte, header string) int {
	a.t.Helper()
	req, _ := http.NewRequest("POST", a.srv.URL+"/webhooks/stripe", strings.NewReader(string(payload)))
	req.Header.Set("Stripe-Signature", header)
	req.Header.Set("Content-Type", "application/json")
	res, _ := a.do(req)
	return res.StatusCode
}

type topupResp struct {
	ID                int64  `json:"id"`
	Status            string `json:"status"`
	CheckoutURL       string `json:"checkout_url"`
	CheckoutSessionID string `json:"checkout_session_id"`
	Reference         string `json:"reference"`
}

func (a *app) balance(org int64) int64 {
	a.t.Helper()
	b, err := ledger.WalletBalance(context.Background(), a.db, org)
	if err != nil {
		a.t.Fatal(err)
	}
	return b
}

// The webhook credits a Stripe top-up exactly once, however the event
// arrives; a bad, stale or altered event credits nothing.
func TestStripeTopupAndWebhooks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, testStripeTopupAndWebhooks)
}

func testStripeTopupAndWebhooks(t *testing.T, db *models.DB) {
	a, _ := stripeApp(t, db)
	payer, org, token := apiUser(t, a, "payer@example.com")

	// Limits are a 400 naming the parameter.
	for _, body := range []string{`{"amount_fen":999,"method":"stripe"}`, `{"amount_fen":50000001,"method":"stripe"}`, `{"amount_fen":1000,"method":"paypal"}`, `{"amount_fen":"x"}`, `not json`} {
		res, b := a.apiPost("/api/v1/wallet/topups", token, body)
		must(t, res.StatusCode == 400 && strings.Contains(b, `"code":"invalid"`), "%s: %d %s", body, res.StatusCode, b)
	}
	// A Checkout session through stripe-mock (which checks the request's shape).
	res, body := a.apiPost("/api/v1/wallet/topups", token, `{"amount_fen":10000,"method":"stripe"}`)
	must(t, res.StatusCode == 201, "top-up: %d %s", res.StatusCode, body)
	tp := decode[topupResp](t, body)
	must(t, tp.Status == "pending" && tp.CheckoutSessionID != "" && a.balance(org) == 0, "top-up %+v", tp)

	now := time.Now()
	paid, hdr := event("evt_paid_1", "checkout.session.completed", session(tp.ID, tp.CheckoutSessionID, 10000, "paid"), now, webhookSecret)
	first, second := a.deliver(paid, hdr), a.deliver(paid, hdr) // the same event twice
	must(t, first == 200 && second == 200, "delivery: %d then %d", first, second)
	must(t, a.balance(org) == 10000, "after the same event twice: %d", a.balance(org))
	// A redelivery with a fresh signature (Stripe's retry) is still the same event.
	again, hdr2 := event("evt_paid_1", "checkout.session.completed", session(tp.ID, tp.CheckoutSessionID, 10000, "paid"), now.Add(time.Second), webhookSecret)
	must(t, a.deliver(again, hdr2) == 200 && a.balance(org) == 10000, "retry: %d", a.balance(org))

	// Ten concurrent deliveries of a second top-up's event.
	_, body = a.apiPost("/api/v1/wallet/topups", token, `{"amount_fen":2500,"method":"stripe"}`)
	tp2 := decode[topupResp](t, body)
	ev2, hdr3 := event("evt_paid_2", "checkout.session.completed", session(tp2.ID, tp2.CheckoutSessionID, 2500, "paid"), now, webhookSecret)
	var wg sync.WaitGroup
	codes := make([]int, 10)
	for i := range codes {
		wg.Add(1)
		go func(i int) { defer wg.Done(); codes[i] = a.deliver(ev2, hdr3) }(i)
	}
	wg.Wait()
	must(t, a.balance(org) == 12500, "after 10 concurrent deliveries: %d (codes %v)", a.balance(org), codes)

	// A third top-up: wrong signature, stale timestamp, altered amount.
	_, body = a.apiPost("/api/v1/wallet/topups", token, `{"amount_fen":3000,"method":"stripe"}`)
	tp3 := decode[topupResp](t, body)
	good, _ := event("evt_paid_3", "checkout.session.completed", session(tp3.ID, tp3.CheckoutSessionID, 3000, "paid"), now, webhookSecret)
	_, forged := event("evt_paid_3", "checkout.session.completed", session(tp3.ID, tp3.CheckoutSessionID, 3000, "paid"), now, "whsec_wrong")
	must(t, a.deliver(good, forged) == 400, "wrong signature accepted")
	stale, staleHdr := event("evt_paid_3", "checkout.session.completed", session(tp3.ID, tp3.CheckoutSessionID, 3000, "paid"), now.Add(-10*time.Minute), webhookSecret)
	must(t, a.deliver(stale, staleHdr) == 400, "stale event accepted")
	altered, altHdr := event("evt_paid_3b", "checkout.session.completed", session(tp3.ID, tp3.CheckoutSessionID, 1, "paid"), now, webhookSecret)
	must(t, a.deliver(altered, altHdr) == 200, "altered amount: want 200 (recorded, flagged)")
	must(t, a.balance(org) == 12500, "an altered amount credited: %d", a.balance(org))
	flagged, _ := a.db.FlaggedStripeEvents(context.Background())
	must(t, len(flagged) == 1 && flagged[0].ID == "evt_paid_3b", "flagged %+v", flagged)
	t3, _ := a.db.TopupByID(context.Background(), tp3.ID)
	must(t, t3.Status == models.TopupFlagged, "top-up 3 is %s", t3.Status)

	// Async methods: completed-but-unpaid credits nothing; success does.
	_, body = a.apiPost("/api/v1/wallet/topups", token, `{"amount_fen":4000,"method":"stripe"}`)
	tp4 := decode[topupResp](t, body)
	p1, h1 := event("evt_async_1", "checkout.session.completed", session(tp4.ID, tp4.CheckoutSessionID, 4000, "unpaid"), now, webhookSecret)
	must(t, a.deliver(p1, h1) == 200 && a.balance(org) == 12500, "unpaid credited: %d", a.balance(org))
	p2, h2 := event("evt_async_2", "checkout.session.async_payment_succeeded", session(tp4.ID, tp4.CheckoutSessionID, 4000, "paid"), now, webhookSecret)
	must(t, a.deliver(p2, h2) == 200 && a.balance(org) == 16500, "async success: %d", a.balance(org))
	_, body = a.apiPost("/api/v1/wallet/topups", token, `{"amount_fen":5000,"method":"stripe"}`)
	tp5 := decode[topupResp](t, body)
	p3, h3 := event("evt_async_3", "checkout.session.async_payment_failed", session(tp5.ID, tp5.CheckoutSessionID, 5000, "unpaid"), now, webhookSecret)
	must(t, a.deliver(p3, h3) == 200 && a.balance(org) == 16500, "async failure credited")
	t5, _ := a.db.TopupByID(context.Background(), tp5.ID)
	must(t, t5.Status == models.TopupFailed, "top-up 5 is %s", t5.Status)

	if problems, err := ledger.LedgerCheck(context.Background(), a.db); err != nil || len(problems) > 0 {
		t.Errorf("ledger: %v %v", problems, err)
	}
	// The API shows the balance.
	req, _ := http.NewRequest("GET", a.srv.URL+"/api/v1/wallet", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, body = a.do(req)
	must(t, res.StatusCode == 200 && strings.Contains(body, `"balance_fen":16500`) && strings.Contains(body, `"currency":"cny"`), "wallet API %d %s", res.StatusCode, body)

	// A refund of ¥50 goes back through Stripe (stripe-mock) against the
	// newest payments first; the ledger shows it.
	owner := loggedIn(a, "payer", payer)
	res, _ = owner.post(a.url(routenames.WalletRefund, org), url.Values{"refund_amount": {"50"}})
	must(t, res.StatusCode == http.StatusSeeOther, "refund: %d", res.StatusCode)
	must(t, a.balance(org) == 11500, "after a ¥50 refund: %d", a.balance(org))
	rs, _ := a.db.RefundsOf(context.Background(), org)
	// Newest payment first: all ¥40 of top-up 4, then ¥10 of top-up 2.
	must(t, len(rs) == 2, "refunds %+v", rs)
	byTopup := map[int64]models.Refund{*rs[0].TopupID: rs[0], *rs[1].TopupID: rs[1]}
	must(t, byTopup[tp4.ID].AmountFen == 4000 && byTopup[tp2.ID].AmountFen == 1000, "split %+v", byTopup)
	for _, r := range rs {
		must(t, r.Status == "done" && r.StripeRefundID != nil, "refund %+v not done at Stripe", r)
	}
	// More than was paid in cannot be refunded.
	res, body = owner.post(a.url(routenames.WalletRefund, org), url.Values{"refund_amount": {"1000"}})
	must(t, res.StatusCode == 422 && strings.Contains(body, "At most ¥115"), "over-refund: %d", res.StatusCode)
	if problems, err := ledger.LedgerCheck(context.Background(), a.db); err != nil || len(problems) > 0 {
		t.Errorf("ledger: %v %v", problems, err)
	}
}

// Without a secret the webhook does not exist; without a key card
// payment says it is not configured.
func TestStripeNotConfigured(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	_, _, token := apiUser(t, a, "nocard@example.com")
	res, body := a.apiPost("/api/v1/wallet/topups", token, `{"amount_fen":10000,"method":"stripe"}`)
	must(t, res.StatusCode == 400 && strings.Contains(body, `"param":"method"`), "card without a key: %d %s", res.StatusCode, body)
	res, body = a.apiPost("/api/v1/wallet/topups", token, `{"amount_fen":10000,"method":"bank_transfer"}`)
	must(t, res.StatusCode == 201 && strings.Contains(body, `"reference":"SL`), "bank transfer: %d %s", res.StatusCode, body)
	p, h := event("evt_x", "checkout.session.completed", map[string]any{}, time.Now(), webhookSecret)
	must(t, a.deliver(p, h) == 404, "webhook without a secret")
}
