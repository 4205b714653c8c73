package models

import "time"

// RentalRegistryAuth is a renter's credential for pulling a rental's
// custom image from a private registry: the username as given and the
// password sealed (secrets.Box, bound to the rental and the username).
// Only the server's hand-over of a launch task to the node's agent opens
// it; no page or answer ever shows it.
type RentalRegistryAuth struct {
	RentalID       int64 `gorm:"primaryKey;autoIncrement:false"`
	Username       string
	SealedPassword string
	CreatedAt      time.Time
}

// TableName implements gorm's tabler.
func (RentalRegistryAuth) TableName() string { return "rental_registry_auths" }

// NodePrivatePull is an image reference a node pulled with a renter's
// registry credentials: launched there later without them, it is pulled
// again rather than run from that copy.
type NodePrivatePull struct {
	NodeID    int64  `gorm:"primaryKey;autoIncrement:false"`
	Reference string `gorm:"primaryKey"`
	PulledAt  time.Time
}

// TableName implements gorm's tabler.
func (NodePrivatePull) TableName() string { return "node_private_pulls" }
