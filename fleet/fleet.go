// Package fleet is the providers' GPU hosts as the server sees them:
// node credentials, the agents' heartbeats and what they say about each
// GPU (inventory, NVML verdicts, incidents), the offers that wait for a
// node's GPUs, and the queue of tasks the agents long-poll for.
package fleet

import "suanli/models"

// Fleet records what node agents report and hands them their tasks.
type Fleet struct {
	DB *models.DB
	// Hub wakes the agents' long polls and the waits for task results.
	Hub *Hub
}
