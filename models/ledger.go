package models

import (
	"time"
)

// LedgerFilter narrows a wallet's ledger.
type LedgerFilter struct {
	Kind     string
	From, To time.Time // zero: open
	Limit    int
	// Offset skips that many entries (the API's pages).
	Offset int
}
