package models

import (
	"strings"
)

// SellsTier reports whether the offer sells the SLA tier ("" is standard).
func (o *Offer) SellsTier(tier string) bool {
	if tier == "" {
		tier = "standard"
	}
	if o.SLATiers == "" {
		return tier == "standard"
	}
	for _, t := range strings.Split(o.SLATiers, ",") {
		if strings.TrimSpace(t) == tier {
			return true
		}
	}
	return false
}

// Visible reports whether the offer shows in the public list: listed,
// and not waiting for its node.
func (o *Offer) Visible() bool { return o.Status == OfferListed && !o.AwaitingNode }
