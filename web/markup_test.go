package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"suanli/locales"
	"suanli/models"
	"suanli/providers"
	"suanli/routenames"
)

// labelable are the elements a <label> may name (HTML's "labelable").
var labelable = map[string]bool{"input": true, "select": true, "textarea": true, "button": true, "meter": true, "output": true, "progress": true}

// markupProblems returns what an HTML checker and an accessibility audit
// would flag in a page, of the kinds a template can get wrong without any
// test noticing: an id used twice, a label naming no control (or a hidden
// one), a control with two labels, and a table header cell with no text
// for a screen reader to announce.
func markupProblems(page string) []string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return []string{"parse: " + err.Error()}
	}
	var problems []string
	ids := map[string]*html.Node{}
	labelsOf := map[*html.Node]int{}
	var labelFor []*html.Node
	var walk func(n *html.Node, inLabel *html.Node)
	walk = func(n *html.Node, inLabel *html.Node) {
		if n.Type == html.ElementNode {
			// templ writes this class for a value it cannot turn into one
			// (a named string type): the element silently loses its style.
			if strings.Contains(htmlAttr(n, "class"), "--templ-css-class-unknown-type") {
				problems = append(problems, fmt.Sprintf("<%s> has a class templ could not render: %q", n.Data, htmlAttr(n, "class")))
			}
			if id := htmlAttr(n, "id"); id != "" {
				if _, dup := ids[id]; dup {
					problems = append(problems, fmt.Sprintf("id %q is used twice", id))
				}
				ids[id] = n
			}
			switch {
			case n.Data == "label":
				if htmlAttr(n, "for") != "" {
					labelFor = append(labelFor, n)
				} else {
					inLabel = n
				}
			case labelable[n.Data] && inLabel != nil && htmlAttr(n, "type") != "hidden":
				// A label without for names the first control inside it.
				labelsOf[n]++
				inLabel = nil
			case n.Data == "th":
				if strings.TrimSpace(nodeText(n)) == "" && strings.TrimSpace(htmlAttr(n, "aria-label")) == "" {
					problems = append(problems, "a table header cell has no text: "+startTag(n))
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inLabel)
		}
	}
	walk(doc, nil)
	for _, l := range labelFor {
		target := ids[htmlAttr(l, "for")]
		switch {
		case target == nil:
			problems = append(problems, fmt.Sprintf("label for %q names no element", htmlAttr(l, "for")))
		case !labelable[target.Data] || htmlAttr(target, "type") == "hidden":
			problems = append(problems, fmt.Sprintf("label for %q names a %s that cannot be labelled", htmlAttr(l, "for"), startTag(target)))
		default:
			labelsOf[target]++
		}
	}
	for n, count := range labelsOf {
		if count > 1 {
			problems = append(problems, fmt.Sprintf("%d labels name one control: %s", count, startTag(n)))
		}
	}
	return problems
}

func htmlAttr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func nodeText(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(nodeText(c))
	}
	return b.String()
}

// render is an element's start tag, to name it in a message.
func startTag(n *html.Node) string {
	var b strings.Builder
	b.WriteString("<" + n.Data)
	for _, a := range n.Attr {
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Val)
	}
	return b.String() + ">"
}

// The checker itself finds each kind of problem it looks for.
func TestMarkupProblemsFindsEachKind(t *testing.T) {
	t.Parallel()
	for page, want := range map[string]string{
		`<p id="a"></p><p id="a"></p>`:                                                  `id "a" is used twice`,
		`<label for="x">X</label><input id="x"><label for="x">Again</label>`:            "2 labels name one control",
		`<label>X <input id="x"></label><label for="x">Again</label>`:                   "2 labels name one control",
		`<label for="nowhere">X</label>`:                                                `label for "nowhere" names no element`,
		`<label for="h">X</label><input type="hidden" id="h">`:                          "cannot be labelled",
		`<table><thead><tr><th>GPU</th><th></th></tr></thead></table>`:                  "a table header cell has no text",
		`<table><thead><tr><th scope="col"> </th></tr></thead></table>`:                 "a table header cell has no text",
		`<label for="x">X</label><input id="x"><label>Y <select></select></label>`:      "",
		`<table><tr><th><span class="visually-hidden">Actions</span></th></tr></table>`: "",
		`<table><tr><th aria-label="Actions"></th></tr></table>`:                        "",
	} {
		got := strings.Join(markupProblems(page), "; ")
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: problems %q, want %q", page, got, want)
		}
	}
}

// Every page we can render, in both languages, for the people who see it
// (a visitor, a lab's owner with a running rental, a provider, a platform
// admin), has unique ids, one label per control and a text in every
// table header cell.
func TestPagesMarkup(t *testing.T) {
	t.Parallel()
	f := newMatrixFixture(t)
	a := f.a
	owner, platform, anon := f.actors[asOwner], f.actors[asPlatform], f.actors[asAnon]
	p := newProviderFixture(t, a, "ops@markup-gpu.example", "Markup GPU")
	node, token := p.addNode(t, "mk-node-1")
	heartbeatSimulated(t, a, token, "a100-40g-sxm", 4)
	po, err := p.svc.CreateOffer(t.Context(), p.owner.user, p.acc.Provider.ID, providers.OfferInput{NodeID: node.ID, GPU: "a100-40g-sxm", MaxGPUs: 4, PricePerGPUHourFen: 900})
	if err != nil {
		t.Fatal(err)
	}
	var dc models.Datacenter
	if err := a.db.R.Order("id").First(&dc).Error; err != nil {
		t.Fatal(err)
	}
	pid := p.pid()
	pages := []struct {
		who  *actor
		path string
	}{
		{anon, a.url(routenames.Home)},
		{anon, a.url(routenames.OffersList) + query("gpu", "h100-sxm", "sort", "latency", "from", "chengdu")},
		{anon, a.url(routenames.OffersList) + query("max_price", "0.01")}, // the empty result
		{anon, a.url(routenames.OffersShow, idParam(f.offer))},
		{anon, a.url(routenames.DatacentersShow, dc.Slug)},
		{anon, a.url(routenames.SLA)},
		{anon, a.url(routenames.TCO)},
		{anon, a.url(routenames.AuthSignup)},
		{anon, a.url(routenames.AuthLogin)},
		{anon, a.url(routenames.PasswordForgot)},
		{anon, a.url(routenames.APIDocs)},
		{owner, a.url(routenames.AccountShow)},
		{owner, a.url(routenames.OrgsShow, idParam(f.orgA.ID))},
		{owner, a.url(routenames.LabsApply)},
		{owner, a.url(routenames.WalletShow, idParam(f.orgA.ID))},
		{owner, a.url(routenames.TopupsShow, idParam(f.topup))},
		{owner, a.url(routenames.Console)},
		{owner, a.url(routenames.StandingOrders)},
		{owner, a.url(routenames.OffersList)},
		{owner, a.url(routenames.RentalsNew, idParam(f.offer))},
		{owner, a.url(routenames.RentalsShow, idParam(f.runningRental))},
		{owner, a.url(routenames.RentalsShow, idParam(f.ownerRental))},
		{platform, a.url(routenames.AdminHome)},
		{platform, a.url(routenames.AdminUsers) + query("q", "pku")},
		{platform, a.url(routenames.AdminOrgs)},
		{platform, a.url(routenames.AdminPayouts)},
		{platform, a.url(routenames.AdminOutbox)},
		{platform, a.url(routenames.AdminJobs)},
		{platform, a.url(routenames.AdminAudit)},
		{owner, a.url(routenames.RealNameShow)},
		{platform, a.url(routenames.AdminRealName, idParam(f.memberUser.ID))},
		{platform, a.url(routenames.AdminSMS)},
		{p.owner, a.url(routenames.ProviderDashboard, pid)},
		{p.owner, a.url(routenames.ProviderProfile, pid)},
		{p.owner, a.url(routenames.ProviderDatacenters, pid)},
		{p.owner, a.url(routenames.ProviderDatacentersEdit, pid, idParam(p.dc))},
		{p.owner, a.url(routenames.ProviderNodes, pid)},
		{p.owner, a.url(routenames.ProviderNodesShow, pid, idParam(node.ID))},
		{p.owner, a.url(routenames.ProviderOffers, pid)},
		{p.owner, a.url(routenames.ProviderOffersNew, pid)},
		{p.owner, a.url(routenames.ProviderOffersEdit, pid, idParam(po.ID))},
		{p.owner, a.url(routenames.ProviderCapacity, pid)},
		{p.owner, a.url(routenames.ProviderEarnings, pid)},
		{p.owner, a.url(routenames.ProviderStatement, pid)},
	}
	for _, lang := range locales.Supported {
		for _, pg := range pages {
			res, body := pg.who.do("GET", pg.path, nil, inLang(lang)...)
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s %s GET %s: %d\n%s", lang, pg.who.name, pg.path, res.StatusCode, snippet(body))
				continue
			}
			for _, problem := range markupProblems(body) {
				t.Errorf("%s %s GET %s: %s", lang, pg.who.name, pg.path, problem)
			}
		}
	}
}
