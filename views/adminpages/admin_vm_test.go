package adminpages

import "testing"

// Links to this site in a mail become paths; one a browser would read as
// another host (a mail may quote what a user typed) stays text.
func TestMailPartsLinkOnlyThisSite(t *testing.T) {
	const base = "https://suanli.example"
	for _, c := range []struct{ body, href string }{
		{"open https://suanli.example/verify?token=abc now", "/verify?token=abc"},
		{"open https://suanli.example now", "/"},
		{"see https://suanli.example//evil.example/x", ""},
		{`see https://suanli.example/\evil.example/x`, ""},
		{"see https://suanli.example.evil.example/x", ""},
		{"see https://evil.example/https://suanli.example/x", ""},
	} {
		var hrefs []string
		for _, p := range mailParts(c.body, base) {
			if p.Href != "" {
				hrefs = append(hrefs, p.Href)
			}
		}
		switch {
		case c.href == "" && len(hrefs) > 0:
			t.Errorf("%q links %v, want no link", c.body, hrefs)
		case c.href != "" && (len(hrefs) != 1 || hrefs[0] != c.href):
			t.Errorf("%q links %v, want %q", c.body, hrefs, c.href)
		}
	}
}
