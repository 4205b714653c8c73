package models

import (
	"time"

	"suanli/pricing"
)

// VolumeStatus is where a volume is in its life: pending (made with a
// rental that has not run yet, unbilled) → active (billed) → deleted.
type VolumeStatus string

// Volume statuses.
const (
	VolumePending VolumeStatus = "pending"
	VolumeActive  VolumeStatus = "active"
	VolumeDeleted VolumeStatus = "deleted"
)

// StorageSecondsPerMonth is the month storage prices are quoted for (30
// days): a volume of S GB at P fen per GB-month owes S×P/StorageSecondsPerMonth
// fen a second (pricing.StorageMonthSeconds, which quotes use).
const StorageSecondsPerMonth = pricing.StorageMonthSeconds

// Volume is an organisation's persistent storage in one datacentre,
// mounted at /workspace in its rental's container.
type Volume struct {
	ID           int64
	OrgID        int64
	UserID       int64
	OfferID      int64
	ProviderID   int64
	DatacenterID int64
	// NodeID is the node whose disk holds it (local storage); on shared
	// storage the node it was last mounted on, if any.
	NodeID  *int64
	Storage Storage
	Name    string
	// WorkspaceKey names it on the node (docker volume or directory).
	WorkspaceKey       string
	SizeGB             int   `gorm:"column:size_gb"`
	PricePerGBMonthFen int64 `gorm:"column:price_per_gb_month_fen"`
	Status             VolumeStatus
	BilledUntil        *time.Time
	CarryNum           int64
	BilledFen          int64
	// DeleteAfter is set while its rental is stopped: the volume is
	// deleted then unless the rental starts again.
	DeleteAfter  *time.Time
	RemindedDays int
	DeleteReason string
	// LeftByRentalID is the rental that moved to another node without
	// this local volume's files; cleared when it mounts the volume again.
	LeftByRentalID *int64
	CreatedAt      time.Time
	DeletedAt      *time.Time
}

// Shared reports whether the volume follows its rental to any node of
// its datacentre.
func (v *Volume) Shared() bool { return v.Storage == StorageShared }
