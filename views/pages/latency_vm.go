package pages

import "strings"

// Ping is what a page needs to time the visitor's own round trip to a
// datacentre: the ping endpoints its node agents reported.
type Ping struct {
	// URLs are the endpoints, most recently heard from first; the
	// browser uses the first that answers. None: nothing is measured.
	URLs []string
	// Simulated is true when the endpoints are the marketplace server's own
	// (the demo's simulated nodes run inside it): the figure is then the
	// round trip to this server, and the page says so.
	Simulated bool
}

// attr is the data-ping-urls value: the URLs separated by spaces.
func (p Ping) attr() string { return strings.Join(p.URLs, " ") }
