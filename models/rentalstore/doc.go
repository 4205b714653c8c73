// Package rentalstore holds the queries of rentals once made: claiming
// GPUs, moves and failures, stops and ends, and the uptime and charges
// that SLA credits are computed from. Records are in package models.
package rentalstore
