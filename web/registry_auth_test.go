package web_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/handlers"
	"suanli/handlers/rentaljson"
	"suanli/images"
	"suanli/models"
	"suanli/routenames"
	"suanli/secrets"
)

// Registry credentials for a custom image, through the API and the rent
// form: refused naming registry_auth with nothing made when they are bad
// (not for a custom image, a NUL, too long, half given); accepted, the
// answers, the rental page and every row of the database show the
// username and that a password is set — never the password.
func TestRentWithRegistryCredentials(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		key, err := secrets.ParseKey(secrets.GenerateKey())
		must(t, err == nil, "key: %v", err)
		a := newAppWith(t, db, func(h *handlers.Handler) { h.Rentals.Credentials = key.Box(images.RegistryAuthPurpose) })
		const email = "registry@example.com"
		org, token, base := idemRenter(t, a, email)
		o := rtxOffer(t, db)
		must(t, db.W.Model(&models.Offer{}).Where("id = ?", o.ID).Update("custom_images", true).Error == nil, "allow custom images")
		_, err = a.index.Refresh(context.Background())
		must(t, err == nil, "index: %v", err)
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		pw := "pw-" + hex.EncodeToString(b)
		const ref = "registry.example.cn:5000/lab/train:v1"
		body := func(image, auth string) string {
			return strings.TrimSuffix(base, "}") + `,"image":"` + image + `","registry_auth":` + auth + `}`
		}

		for name, c := range map[string]struct{ body, code, param string }{
			"for a catalogue image": {body("debian-sshd", `{"username":"bob","password":"`+pw+`"}`), "invalid", "registry_auth"},
			"a line break in it":    {body(ref, `{"username":"bob","password":"`+pw+`\n"}`), "invalid", "registry_auth"},
			"a password too long":   {body(ref, `{"username":"bob","password":"`+pw+strings.Repeat("p", images.MaxRegistryPassword)+`"}`), "invalid", "registry_auth"},
			"no password":           {body(ref, `{"username":"bob"}`), "invalid", "registry_auth"},
			"a colon in the user":   {body(ref, `{"username":"bob:x","password":"`+pw+`"}`), "invalid", "registry_auth"},
			"an unknown field":      {body(ref, `{"username":"bob","password":"`+pw+`","server":"x"}`), "invalid", "body"},
			"not an object":         {body(ref, `"bob:`+pw+`"`), "invalid", "registry_auth"},
			// The API refuses a NUL anywhere in a body before any handler.
			"a NUL in the password": {body(ref, `{"username":"bob","password":"`+pw+`\u0000"}`), "malformed", "body"},
		} {
			st, _, resp, _ := idemPost(a, "/api/v1/rentals", token, "", c.body)
			code, param, msg := errorCode(t, resp)
			if st != http.StatusBadRequest || code != c.code || param != c.param || strings.Contains(resp, pw) {
				t.Errorf("%s: %d %s %s %q, want 400 %s naming %s without the password", name, st, code, param, msg, c.code, c.param)
			}
			must(t, rentalsOf(t, db, org) == 0, "%s: a refused rent made a rental", name)
		}

		st, h, created, _ := idemPost(a, "/api/v1/rentals", token, "registry-1", body(ref, `{"username":"bob","password":"`+pw+`"}`))
		must(t, st == http.StatusCreated, "rent: %d %s", st, created)
		rental := decode[rentaljson.Rental](t, created)
		must(t, rental.Image == ref && rental.RegistryAuth != nil && *rental.RegistryAuth == images.RegistryAuthShown{Username: "bob", Set: true},
			"answer: %s", created)
		_, _, again, _ := idemPost(a, "/api/v1/rentals", token, "registry-1", body(ref, `{"username":"bob","password":"`+pw+`"}`))
		must(t, again == created && rentalsOf(t, db, org) == 1, "the retry: %s", again)
		// The request's stored hash is keyed: a plain SHA-256 of a body
		// with a password would let a reader of the table test guesses.
		plain := sha256.Sum256([]byte("POST /api/v1/rentals\n" + body(ref, `{"username":"bob","password":"`+pw+`"}`)))
		var hashes []string
		must(t, db.R.Model(&models.IdempotencyKey{}).Where("idem_key = ?", "registry-1").Pluck("request_hash", &hashes).Error == nil && len(hashes) == 1 &&
			hashes[0] != hex.EncodeToString(plain[:]), "the idempotency key's request hash: %v", hashes)
		auth := []string{"Authorization", "Bearer " + token}
		_, shown := a.get(h.Get("Location"), auth...)
		_, list := a.get("/api/v1/rentals", auth...)
		for what, got := range map[string]string{"POST": created, "GET": shown, "list": list} {
			if strings.Contains(got, pw) || !strings.Contains(got, `"registry_auth":{"username":"bob","set":true}`) {
				t.Errorf("%s answer: %s", what, got)
			}
		}
		renter := loginWith(a, "renter", email, testPassword)
		page := renter.page(t, a.url(routenames.RentalsShow, idParam(rental.ID)), "en", 200)
		contains(t, page, `id="rental-registry"`, "bob · password stored encrypted, not shown")
		must(t, !strings.Contains(page, pw), "the rental page shows the password")
		zh := renter.page(t, a.url(routenames.RentalsShow, idParam(rental.ID)), "zh-CN", 200)
		contains(t, zh, "镜像仓库凭据", "密码已加密保存")

		// The rent form: the credentials beside the custom image.
		form := renter.page(t, a.url(routenames.RentalsNew, idParam(o.ID))+"?registry_password="+pw, "en", 200)
		contains(t, form, `id="rent-registry"`, `name="registry_username"`, `name="registry_password" type="password"`, "Private registry (optional)",
			"never shown again")
		must(t, !strings.Contains(form, `value="`+pw), "the form fills in a password from the query")
		post := func(image, custom, user, pass string) (*http.Response, string) {
			return renter.post(a.url(routenames.RentalsCreate, idParam(o.ID)), url.Values{"org_id": {idParam(org)}, "gpus": {"1"},
				"term": {"on_demand"}, "sla": {"standard"}, "ssh_public_key": {testSSHKey(t)}, "image": {image}, "image_custom": {custom},
				"registry_username": {user}, "registry_password": {pass}})
		}
		for name, c := range map[string][4]string{
			"for a catalogue image": {"debian-sshd", "", "bob", pw},
			"a tab in the password": {"_custom", ref, "bob", pw + "\t"},
			"no username":           {"_custom", ref, "", pw},
		} {
			res, page := post(c[0], c[1], c[2], c[3])
			if res.StatusCode != http.StatusUnprocessableEntity || fieldMessage(page, "registry_auth") == "" || strings.Contains(page, pw) {
				t.Errorf("form %s: %d, message %q, password shown %v", name, res.StatusCode, fieldMessage(page, "registry_auth"), strings.Contains(page, pw))
			}
			must(t, rentalsOf(t, db, org) == 1, "form %s: a refused rent made a rental", name)
		}
		// A NUL anywhere in a request is refused before any handler.
		res, page := post("_custom", ref, "bob", pw+"\x00")
		must(t, res.StatusCode == http.StatusBadRequest && !strings.Contains(page, pw) && rentalsOf(t, db, org) == 1, "form with a NUL: %d", res.StatusCode)
		res, _ = post("_custom", ref, "carol", pw)
		must(t, res.StatusCode == http.StatusSeeOther && rentalsOf(t, db, org) == 2, "form rent: %d", res.StatusCode)
		var users []string
		must(t, db.R.Model(&models.RentalRegistryAuth{}).Order("rental_id").Pluck("username", &users).Error == nil && strings.Join(users, ",") == "bob,carol",
			"stored credentials: %v", users)

		if where := dbtest.Find(t, db, []byte(pw)); len(where) > 0 {
			t.Errorf("the password is stored in %v", where)
		}

		// An offer without custom images has no credentials on its form.
		other := renter.page(t, a.url(routenames.RentalsNew, idParam(otherOffer(t, db, o.ID))), "en", 200)
		must(t, !strings.Contains(other, `id="rent-registry"`), "credentials on an offer without custom images")
	})
}

// A platform without a secret key takes no registry credentials: its
// rent form has none, and the API refuses them.
func TestRegistryCredentialsNeedAPlatformKey(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	a := newApp(t, db)
	org, token, base := idemRenter(t, a, "nokey@example.com")
	o := rtxOffer(t, db)
	must(t, db.W.Model(&models.Offer{}).Where("id = ?", o.ID).Update("custom_images", true).Error == nil, "allow custom images")
	_, err := a.index.Refresh(context.Background())
	must(t, err == nil, "index: %v", err)
	st, _, resp, _ := idemPost(a, "/api/v1/rentals", token, "", strings.TrimSuffix(base, "}")+`,"image":"ghcr.io/lab/x:1","registry_auth":{"username":"bob","password":"pw"}}`)
	_, param, msg := errorCode(t, resp)
	must(t, st == http.StatusBadRequest && param == "registry_auth" && strings.Contains(msg, "secret key"), "no key: %d %s", st, resp)
	must(t, rentalsOf(t, db, org) == 0, "a refused rent made a rental")
	form := loginWith(a, "renter", "nokey@example.com", testPassword).page(t, a.url(routenames.RentalsNew, idParam(o.ID)), "en", 200)
	must(t, strings.Contains(form, `id="f-image_custom"`) && !strings.Contains(form, `id="rent-registry"`), "the form offers credentials it cannot keep")
}

// otherOffer is a listed offer other than id that allows no custom images.
func otherOffer(t *testing.T, db *models.DB, id int64) int64 {
	t.Helper()
	var o models.Offer
	must(t, db.R.Where("id <> ? AND custom_images = ? AND status = ?", id, false, models.OfferListed).Order("id").First(&o).Error == nil, "another offer")
	return o.ID
}
