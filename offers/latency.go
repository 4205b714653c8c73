package offers

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"time"

	"suanli/models"
	"suanli/models/supply"
)

// MaxPingURLs is how many of a datacentre's ping endpoints a page hands
// to the visitor's browser: its nodes share the network, so the first
// that answers is enough, and a few cover one that went away.
const MaxPingURLs = 3

// pingFresh is how recent a node's heartbeat must be for its ping URL to
// be offered: the endpoint of an agent not heard from is likely gone.
const pingFresh = 10 * time.Minute

// pingHost is a host name, IPv4 address or bracketed IPv6 address with an
// optional port: nothing that could end a Content-Security-Policy source
// or an HTML attribute.
var pingHost = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$`)

// CleanPingURL returns the ping URL an agent reported if it is one a
// browser may be sent to (http or https, a plain host, no credentials,
// no fragment, at most 512 bytes), and "" otherwise.
func CleanPingURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > 512 {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Fragment != "" || u.Opaque != "" || !pingHost.MatchString(u.Host) {
		return ""
	}
	return u.String()
}

// PingOrigin returns the origin (scheme://host[:port]) of a clean ping
// URL, as a Content-Security-Policy connect-src source; "" if it is not
// clean.
func PingOrigin(pingURL string) string {
	if CleanPingURL(pingURL) == "" {
		return ""
	}
	u, _ := url.Parse(pingURL)
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// PingURLs returns the ping endpoints of a datacentre's nodes that were
// heard from lately, most recent heartbeat first, without repeats and at
// most MaxPingURLs of them (none is not an error).
func PingURLs(ctx context.Context, db *models.DB, datacenterID int64) ([]string, error) {
	raw, err := supply.RecentPingURLs(ctx, db, datacenterID, db.Now().UTC().Add(-pingFresh), 20)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range raw {
		if u := CleanPingURL(r); u != "" && !seen[u] && len(out) < MaxPingURLs {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out, nil
}
