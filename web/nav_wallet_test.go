package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/locales"
	"suanli/models"
	"suanli/routenames"
)

// The wallet is in the navigation of every page for a logged-in user, in
// both languages, and leads to their own (personal) wallet even when they
// belong to other organisations too; visitors have no wallet link.
func TestNavigationLeadsToTheWallet(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		u := mustUser(t, db, "wanda@wallet.example", "Wanda Wallet", false)
		team, err := (&accounts.Service{DB: db}).CreateOrg(context.Background(), u, models.OrgTeam, "Wanda's Team")
		if err != nil {
			t.Fatal(err)
		}
		personal, err := models.PersonalOrgOf(db.R, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		must(t, personal != team.ID, "the team is not the personal organisation")
		ac := loggedIn(a, "wanda", u)
		for _, lang := range locales.Supported {
			for _, path := range []string{a.url(routenames.OffersList), a.url(routenames.Console), a.url(routenames.AccountShow)} {
				page := ac.page(t, path, lang, 200)
				nav := findElement(page, func(n *html.Node) bool {
					return n.Data == "nav" && htmlAttr(n, "aria-label") == locales.T(lang, "nav.label")
				})
				must(t, nav != nil, "%s %s: no main navigation", lang, path)
				var href string
				for _, l := range linksIn(nav) {
					if strings.TrimSpace(l[1]) == locales.T(lang, "nav.wallet") {
						href = l[0]
					}
				}
				must(t, href != "", "%s %s: the navigation has no %q link: %q", lang, path, locales.T(lang, "nav.wallet"), linksIn(nav))
				res, _ := ac.do("GET", href, nil, inLang(lang)...)
				must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == a.url(routenames.WalletShow, idParam(personal)),
					"%s: the wallet link %s answers %d to %q, want 303 to the personal wallet %s", lang, href, res.StatusCode, res.Header.Get("Location"), a.url(routenames.WalletShow, idParam(personal)))
				contains(t, ac.page(t, res.Header.Get("Location"), lang, 200), `id="wallet-balance"`)
			}
		}
		anon := newActor(a, "visitor")
		must(t, !strings.Contains(anon.page(t, a.url(routenames.OffersList), "en", 200), `id="nav-wallet"`), "a visitor's navigation has a wallet link")
	})
}
