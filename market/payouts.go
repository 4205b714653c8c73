package market

import "suanli/models"

// Payouts pays providers their payable balance: monthly payouts by Stripe
// Connect transfer or bank transfer, and Connect onboarding.
type Payouts struct {
	DB *models.DB
}
