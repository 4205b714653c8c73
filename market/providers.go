package market

import "suanli/models"

// Providers is the provider side of the market: onboarding, datacentres,
// nodes, offers, capacity and earnings.
type Providers struct {
	DB *models.DB
	// Rentals is used to stop or drain work on a provider's nodes.
	Rentals *Rentals
	// BaseURL is the public address agents are told to connect to.
	BaseURL string
}
