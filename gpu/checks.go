package gpu

import (
	"encoding/json"
	"sort"
	"time"
)

// Checks are the NVML checks that passed on a node before a rental's GPUs
// were handed over, as the renter is shown them.
type Checks struct {
	NodeID   int64              `json:"node_id"`
	At       time.Time          `json:"at"`
	Verdicts map[string]Verdict `json:"verdicts"`
}

// Passed counts the checks that passed over every GPU.
func (c *Checks) Passed() (passed, total int) {
	for _, v := range c.Verdicts {
		for _, ch := range v.Checks {
			total++
			if ch.OK {
				passed++
			}
		}
	}
	return passed, total
}

// UUIDs lists the checked GPUs in order.
func (c *Checks) UUIDs() []string {
	var us []string
	for u := range c.Verdicts {
		us = append(us, u)
	}
	sort.Strings(us)
	return us
}

// ParseChecks decodes stored checks (nil for none, or what does not
// decode).
func ParseChecks(raw string) *Checks {
	if raw == "" {
		return nil
	}
	var c Checks
	if json.Unmarshal([]byte(raw), &c) != nil {
		return nil
	}
	return &c
}
