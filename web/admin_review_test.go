package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/locales"
	"suanli/models"
	"suanli/routenames"
)

// findElement returns the first element of the page for which match is
// true, or nil.
func findElement(page string, match func(n *html.Node) bool) *html.Node {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return nil
	}
	var found *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if found != nil {
			return
		}
		if n.Type == html.ElementNode && match(n) {
			found = n
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return found
}

// linksIn returns the href and text of every link under n.
func linksIn(n *html.Node) [][2]string {
	var out [][2]string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "a" {
			out = append(out, [2]string{htmlAttr(n, "href"), nodeText(n)})
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// The outbox's links to this site are links, as paths, so they open on
// the host the admin reads it on; an address a mail merely quotes (a
// user's text) stays text, and the rest of the body reads as it was sent.
func TestAdminOutboxLinksAreClickable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		admin := loggedIn(a, "platform admin", mustUser(t, db, "root@outbox.example", "Pat Platform", true))
		visitor := newActor(a, "new user")
		res, body := visitor.post(a.url(routenames.AuthSignupPost), url.Values{"email": {"newbie@outbox.example"}, "name": {"Nia Newbie"}, "password": {testPassword}, "lang": {"en"}})
		must(t, res.StatusCode == http.StatusOK, "sign up: %d %s", res.StatusCode, snippet(body))
		quoted := "A user wrote: <b>see https://evil.example/phish</b>, and http://suanli.test.evil.example/x."
		if err := models.EnqueueMail(db.W, &models.OutboxMail{ToAddr: "quoted@outbox.example", Lang: "en", Subject: "quoted", Body: quoted, CreatedAt: db.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		verify := strings.TrimPrefix(a.mailedLink(t, "newbie@outbox.example", "/verify"), a.srv.URL)

		for _, lang := range locales.Supported {
			page := admin.page(t, a.url(routenames.AdminOutbox), lang, 200)
			var bodies []*html.Node
			findElement(page, func(n *html.Node) bool {
				if n.Data == "pre" && strings.Contains(htmlAttr(n, "class"), "mail") {
					bodies = append(bodies, n)
				}
				return false
			})
			var links [][2]string
			quotedShown := false
			for _, b := range bodies {
				links = append(links, linksIn(b)...)
				quotedShown = quotedShown || nodeText(b) == quoted
			}
			must(t, slicesContain(links, [2]string{verify, "http://suanli.test" + verify}),
				"%s: the verification mail's link is not a link to %s: links %q", lang, verify, links)
			for _, l := range links {
				must(t, strings.HasPrefix(l[0], "/"), "%s: outbox link %q leaves the site", lang, l[0])
			}
			must(t, quotedShown, "%s: the quoting mail does not read as sent (%q)", lang, quoted)
		}
		// The link works from here: it verifies the new user.
		res, body = visitor.do("GET", verify, nil)
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, locales.T("en", "verify.done")), "open the outbox link: %d %s", res.StatusCode, snippet(body))
	})
}

func slicesContain(list [][2]string, want [2]string) bool {
	for _, l := range list {
		if l == want {
			return true
		}
	}
	return false
}

// A lab's review card names the applicant: their account email (and that
// it is verified) and the institutional address they gave, unconfirmed
// until its mailed link is opened, then confirmed.
func TestAdminLabReviewCardShowsApplicant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		ctx := context.Background()
		admin := loggedIn(a, "platform admin", mustUser(t, db, "root@review.example", "Pat Platform", true))
		ownerU := mustUser(t, db, "li.wei@gmail.example", "Li Wei", false)
		svc := &accounts.Service{DB: db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
		org, err := svc.ApplyLab(ctx, ownerU, accounts.LabApplication{Institution: "Sichuan University", LabName: "Vision Lab",
			Supervisor: "Prof. Chen", EmailDomain: "scu.edu.cn", EduEmail: "liwei@scu.edu.cn"})
		if err != nil {
			t.Fatal(err)
		}
		card := func(lang string) string {
			t.Helper()
			page := admin.page(t, a.url(routenames.AdminHome), lang, 200)
			n := findElement(page, func(n *html.Node) bool { return htmlAttr(n, "id") == "review-"+idParam(org.ID) })
			must(t, n != nil, "%s: no review card for the lab", lang)
			return strings.Join(strings.Fields(nodeText(n)), " ")
		}
		for _, lang := range locales.Supported {
			c := card(lang)
			for _, want := range []string{"Li Wei", "li.wei@gmail.example", locales.T(lang, "account.verified"), "liwei@scu.edu.cn", locales.T(lang, "admin.applicant.unconfirmed")} {
				must(t, strings.Contains(c, want), "%s: the review card lacks %q:\n%s", lang, want, c)
			}
		}
		owner := loggedIn(a, "applicant", ownerU)
		res, body := owner.do("GET", strings.TrimPrefix(a.mailedLink(t, "liwei@scu.edu.cn", "/labs/confirm"), a.srv.URL), nil)
		must(t, res.StatusCode == http.StatusSeeOther, "confirm the lab address: %d %s", res.StatusCode, snippet(body))
		for _, lang := range locales.Supported {
			c := card(lang)
			must(t, strings.Contains(c, "liwei@scu.edu.cn "+locales.T(lang, "lab.confirmed")), "%s: after the link, the card should say the address is confirmed:\n%s", lang, c)
			must(t, !strings.Contains(c, locales.T(lang, "admin.applicant.unconfirmed")), "%s: the card still says unconfirmed:\n%s", lang, c)
		}
	})
}
