package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/stripe/stripe-go/v76"
)

// Connect is what provider payouts need from Stripe Connect: Express
// accounts, onboarding links, their capabilities, and transfers to them.
type Connect interface {
	// CreateExpressAccount creates an Express account able to receive
	// transfers and returns its id ("acct_…").
	CreateExpressAccount(ctx context.Context, email, country string) (accountID string, err error)
	// AccountLink returns a one-time onboarding URL for the account.
	AccountLink(ctx context.Context, accountID, returnURL, refreshURL string) (url string, err error)
	// Account reports whether the account may take charges and receive payouts.
	Account(ctx context.Context, accountID string) (chargesEnabled, payoutsEnabled bool, err error)
	// Transfer moves amountFen CNY from the platform's balance to the
	// account; key makes a retry safe (Stripe's idempotency key).
	Transfer(ctx context.Context, accountID string, amountFen int64, key string, payoutID int64) (transferID string, err error)
}

// *Stripe is the Connect implementation too, on the same client.
var _ Connect = (*Stripe)(nil)

// CreateExpressAccount implements Connect.
func (s *Stripe) CreateExpressAccount(ctx context.Context, email, country string) (string, error) {
	p := &stripe.AccountParams{
		Type:    stripe.String(string(stripe.AccountTypeExpress)),
		Country: stripe.String(country),
		Capabilities: &stripe.AccountCapabilitiesParams{
			Transfers: &stripe.AccountCapabilitiesTransfersParams{Requested: stripe.Bool(true)},
		},
	}
	if email != "" {
		p.Email = stripe.String(email)
	}
	p.Context = ctx
	a, err := s.api.Accounts.New(p)
	if err != nil {
		return "", fmt.Errorf("stripe account: %w", err)
	}
	return a.ID, nil
}

// AccountLink implements Connect with an onboarding link.
func (s *Stripe) AccountLink(ctx context.Context, accountID, returnURL, refreshURL string) (string, error) {
	p := &stripe.AccountLinkParams{
		Account:    stripe.String(accountID),
		ReturnURL:  stripe.String(returnURL),
		RefreshURL: stripe.String(refreshURL),
		Type:       stripe.String(string(stripe.AccountLinkTypeAccountOnboarding)),
	}
	p.Context = ctx
	l, err := s.api.AccountLinks.New(p)
	if err != nil {
		return "", fmt.Errorf("stripe account link: %w", err)
	}
	return l.URL, nil
}

// Account implements Connect.
func (s *Stripe) Account(ctx context.Context, accountID string) (bool, bool, error) {
	p := &stripe.AccountParams{}
	p.Context = ctx
	a, err := s.api.Accounts.GetByID(accountID, p)
	if err != nil {
		return false, false, fmt.Errorf("stripe account: %w", err)
	}
	return a.ChargesEnabled, a.PayoutsEnabled, nil
}

// Transfer implements Connect: a transfer in CNY carrying the payout id in
// metadata and transfer_group, so that Stripe's dashboard ties it back.
func (s *Stripe) Transfer(ctx context.Context, accountID string, amountFen int64, key string, payoutID int64) (string, error) {
	id := strconv.FormatInt(payoutID, 10)
	p := &stripe.TransferParams{
		Amount:        stripe.Int64(amountFen),
		Currency:      stripe.String(string(stripe.CurrencyCNY)),
		Destination:   stripe.String(accountID),
		Description:   stripe.String("Suanli payout #" + id),
		TransferGroup: stripe.String("payout-" + id),
	}
	p.AddMetadata("payout_id", id)
	p.SetIdempotencyKey(key)
	p.Context = ctx
	t, err := s.api.Transfers.New(p)
	if err != nil {
		return "", fmt.Errorf("stripe transfer: %w", err)
	}
	return t.ID, nil
}

// IsPermanent reports whether a Stripe call failed for good: Stripe
// answered and refused the request (a 4xx other than a rate limit or an
// idempotent request still in flight). Network errors and 5xx answers may
// succeed on a retry with the same idempotency key, so they are not.
func IsPermanent(err error) bool {
	var se *stripe.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.HTTPStatusCode {
	case http.StatusTooManyRequests, http.StatusConflict:
		return false
	}
	return se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500
}
