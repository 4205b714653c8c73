// Package demodata writes the demo market (datacentres, nodes, offers)
// and answers the demo's own lookups; only demo runs and tests use it.
package demodata
