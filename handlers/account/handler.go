// Package account holds the handlers of a person's account and what they
// pay with: sign-up, login, verification and password reset, the account
// page and API tokens, organisations and labs (members, invitations,
// budgets), and the wallet (top-ups, refunds, the ledger and its CSV, the
// Stripe webhook).
package account

import "suanli/handlers"

// Handler is the account area's handlers, on the shared dependencies.
type Handler struct{ *handlers.Handler }
