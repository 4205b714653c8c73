package pricing

// Tier is an SLA tier: the monthly uptime promised and the surcharge on
// the price for it. This is the one table of tiers; the SLA page and the
// credit computation read it too.
type Tier struct {
	Name         string
	UptimePct    float64
	SurchargePct int
}

// Tiers are the SLA tiers, standard first.
var Tiers = []Tier{
	{Name: "standard", UptimePct: 99.5, SurchargePct: 0},
	{Name: "premium", UptimePct: 99.9, SurchargePct: 15},
}

// TierByName returns a tier; "" is standard.
func TierByName(name string) (Tier, bool) {
	if name == "" {
		return Tiers[0], true
	}
	for _, t := range Tiers {
		if t.Name == name {
			return t, true
		}
	}
	return Tier{}, false
}
