package payments_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v76"

	"suanli/payments"
	"suanli/stripemock"
)

// Every Connect call is a request stripe-mock accepts: it checks the
// parameters and enums against Stripe's OpenAPI, so a wrong shape fails.
func TestConnectRequestShapesAgainstStripeMock(t *testing.T) {
	s := payments.NewStripe("sk_test_suanli", stripemock.Start(t))
	ctx := context.Background()
	acct, err := s.CreateExpressAccount(ctx, "payouts@provider.example", "HK")
	if err != nil || !strings.HasPrefix(acct, "acct_") {
		t.Fatalf("account: %q %v", acct, err)
	}
	url, err := s.AccountLink(ctx, acct, "https://suanli.test/provider/1/payouts/connected", "https://suanli.test/provider/1/payouts/connect")
	if err != nil || !strings.HasPrefix(url, "http") {
		t.Fatalf("account link: %q %v", url, err)
	}
	if _, _, err := s.Account(ctx, acct); err != nil {
		t.Fatalf("account: %v", err)
	}
	tr, err := s.Transfer(ctx, acct, 865_000, "payout-7", 7)
	if err != nil || !strings.HasPrefix(tr, "tr_") {
		t.Fatalf("transfer: %q %v", tr, err)
	}
}

// Only a refusal is permanent; what a retry may cure is not.
func TestIsPermanent(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&stripe.Error{HTTPStatusCode: 400}, true},
		{&stripe.Error{HTTPStatusCode: 402}, true},
		{&stripe.Error{HTTPStatusCode: 429}, false},
		{&stripe.Error{HTTPStatusCode: 409}, false},
		{&stripe.Error{HTTPStatusCode: 500}, false},
		{errors.New("connection reset"), false},
	} {
		if got := payments.IsPermanent(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}
