package web_test

import (
	"strings"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
)

// A signed event that is not a usable event is a 400 that credits and
// records nothing: one without an id, one signed too far in the future (a
// replay kept for later, or a sender whose clock is wrong), one without a
// type. Whatever the payload, the webhook never answers 500 for it.
func TestStripeMalformedSignedEventsAre400(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, _ := stripeApp(t, db)
		_, org, token := apiUser(t, a, "malformed@example.com")
		res, body := a.apiPost("/api/v1/wallet/topups", token, `{"amount_fen":10000,"method":"stripe"}`)
		must(t, res.StatusCode == 201, "top-up: %d %s", res.StatusCode, body)
		tp := decode[topupResp](t, body)
		paid := session(tp.ID, tp.CheckoutSessionID, 10000, "paid")
		now := time.Now()

		cases := []struct {
			name, id, typ string
			at            time.Time
		}{
			{"empty id", "", "checkout.session.completed", now},
			{"blank id", "   ", "checkout.session.completed", now},
			{"id with a NUL byte", "evt_a\x00b", "checkout.session.completed", now},
			{"id longer than any Stripe id", "evt_" + strings.Repeat("x", 300), "checkout.session.completed", now},
			{"empty type", "evt_no_type", "", now},
			{"signed ten years ahead", "evt_future_10y", "checkout.session.completed", now.AddDate(10, 0, 0)},
			{"signed an hour ahead", "evt_future_1h", "checkout.session.completed", now.Add(time.Hour)},
		}
		for _, tc := range cases {
			p, h := event(tc.id, tc.typ, paid, tc.at, webhookSecret)
			if st := a.deliver(p, h); st != 400 {
				t.Errorf("%s: %d, want 400", tc.name, st)
			}
		}
		must(t, a.balance(org) == 0, "a malformed event credited %d fen", a.balance(org))
		var n int64
		if err := db.R.Model(&models.StripeEvent{}).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		must(t, n == 0, "%d malformed events recorded", n)

		// A sender's clock a little ahead (within the tolerance) is fine.
		p, h := event("evt_skewed", "checkout.session.completed", paid, now.Add(time.Minute), webhookSecret)
		must(t, a.deliver(p, h) == 200 && a.balance(org) == 10000, "an event signed a minute ahead: balance %d", a.balance(org))
	})
}
