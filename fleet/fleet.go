// Package fleet is the providers' GPU hosts as the server sees them:
// node credentials, the agents' heartbeats and what they say about each
// GPU (inventory, NVML verdicts, incidents), the offers that wait for a
// node's GPUs, and the queue of tasks the agents long-poll for.
package fleet

import (
	"suanli/models"
	"suanli/secrets"
)

// Fleet records what node agents report and hands them their tasks.
type Fleet struct {
	DB *models.DB
	// Hub wakes the agents' long polls and the waits for task results.
	Hub *Hub
	// Credentials opens renters' sealed registry passwords for the launch
	// tasks handed to agents (images.PullAuth); nil: none can be opened.
	Credentials *secrets.Box
	// VerifyBaseURL is the address rentals' containers reach the server
	// at: launch tasks carry the verifier's endpoint under it and a
	// rental-scoped credential (witness.LaunchVerify); "" gives none.
	VerifyBaseURL string
}
