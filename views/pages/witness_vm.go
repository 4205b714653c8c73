package pages

import "time"

// OfferWitnesses is what witnesses other than the provider's agent
// measured on an offer's GPUs (DESIGN.md §8), shown beside the agent's
// report: runs of the verifier inside renters' containers and in the
// platform's audit rentals over the last WindowDays days.
type OfferWitnesses struct {
	// Renter and Audit are nil without runs in the window.
	Renter, Audit *WitnessFigures
	WindowDays    int
	// Command is what a renter runs in a rental to verify on demand.
	Command string
	// Disputed: the agent's figure and an independent one are more than
	// TolerancePct apart; AgentTFLOPS is the agent's.
	Disputed     bool
	AgentTFLOPS  *float64
	TolerancePct float64
}

// WitnessFigures are one witness's runs.
type WitnessFigures struct {
	Runs int
	// MedianBF16TFLOPS is nil when no run measured (no CUDA PyTorch in
	// the image, or a simulated node).
	MedianBF16TFLOPS *float64
	LastAt           time.Time
	// Simulated: the runs were on a simulated node and measured nothing.
	Simulated bool
	// Unhealthy is how many runs saw a GPU failing a check.
	Unhealthy int
}
