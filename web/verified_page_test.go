package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/locales"
	"suanli/models"
	"suanli/routenames"
)

// The page that says "email verified" is drawn for the user as they are
// after the link, not before it: no "check your email for the
// verification link" banner, in either language, whether the link was
// opened logged out (it logs in) or in the session that signed up.
func TestVerifiedPageHasNoVerificationBanner(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		for _, lang := range locales.Supported {
			for _, loggedIn := range []bool{false, true} {
				name := lang + "/logged out"
				if loggedIn {
					name = lang + "/logged in, unverified"
				}
				t.Run(name, func(t *testing.T) {
					email := strings.ToLower(strings.ReplaceAll(name, " ", "")) + "@verify.example"
					email = strings.NewReplacer("/", ".", ",", ".").Replace(email)
					ac := newActor(a, name)
					res, body := ac.post(a.url(routenames.AuthSignupPost), url.Values{
						"email": {email}, "name": {"Vera Verify"}, "password": {testPassword}, "lang": {lang},
					}, "Accept-Language", lang)
					must(t, res.StatusCode == http.StatusOK || res.StatusCode == http.StatusSeeOther, "sign up %s: %d %s", email, res.StatusCode, snippet(body))
					banner := locales.T(lang, "account.unverified_banner", email)
					if loggedIn {
						// A session of the unverified user, where the banner belongs.
						ac = newActor(a, name)
						res, body = ac.post(a.url(routenames.AuthLoginPost), url.Values{"email": {email}, "password": {testPassword}}, "Accept-Language", lang)
						must(t, res.StatusCode == http.StatusSeeOther, "log in unverified: %d %s", res.StatusCode, snippet(body))
						_, body = ac.do("GET", a.url(routenames.OffersList), nil, "Accept-Language", lang)
						must(t, strings.Contains(body, banner), "an unverified user's page lacks the banner %q, so this test proves nothing", banner)
					}
					link := a.mailedLink(t, email, "/verify")
					res, body = ac.do("GET", strings.TrimPrefix(link, a.srv.URL), nil, "Accept-Language", lang)
					must(t, res.StatusCode == http.StatusOK, "open the verification link: %d %s", res.StatusCode, snippet(body))
					contains(t, body, locales.T(lang, "verify.done"))
					if strings.Contains(body, banner) {
						t.Errorf("the email-verified page still shows %q", banner)
					}
					if strings.Contains(body, `class="notice"`) && strings.Contains(body, locales.T(lang, "account.resend_link")) {
						t.Errorf("the email-verified page still offers to resend the link")
					}
					// The header shows the user, verified, from this page on.
					contains(t, body, `id="nav-account"`)
					_, body = ac.do("GET", a.url(routenames.OffersList), nil, "Accept-Language", lang)
					if strings.Contains(body, banner) {
						t.Errorf("the next page still shows %q", banner)
					}
				})
			}
		}
	})
}
