// Package supply holds the queries of what providers sell: providers,
// their nodes and GPUs (heartbeats, states, credentials, incidents),
// offers and their availability, the agent's tasks and benchmark
// reports. Records are in package models.
package supply
