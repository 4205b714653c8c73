package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"suanli/dbtest"
	"suanli/models"
	"suanli/routenames"
)

// portsOf are the HTTP ports a rental declared.
func portsOf(t *testing.T, db *models.DB, id int64) []int {
	t.Helper()
	r, err := db.RentalByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.DeclaredPorts()
}

// A rental declares its HTTP ports on the rent form (one list, "6006,
// 7860", or the field repeated) and in the API ("ports": [N, …]); they
// are kept sorted without repeats and answered in the rental's JSON. Bad
// ports (22, out of range, not a number, more than eight) are refused
// beside the field (422) or naming "ports" (400), and rent nothing.
func TestRentPortsThroughTheFormAndTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		const email = "ports@example.com"
		org, token, base := idemRenter(t, a, email)
		o := rtxOffer(t, db)
		renter := loginWith(a, "renter", email, testPassword)
		contains(t, renter.page(t, a.url(routenames.RentalsNew, idParam(o.ID)), "en", 200), `name="ports"`)

		rent := func(ports ...string) (*http.Response, string) {
			return renter.post(a.url(routenames.RentalsCreate, idParam(o.ID)), url.Values{"org_id": {idParam(org)}, "gpus": {"1"},
				"term": {"on_demand"}, "sla": {"standard"}, "ssh_public_key": {testSSHKey(t)}, "ports": ports})
		}
		for name, bad := range map[string][]string{"22": {"22"}, "0": {"0"}, "65536": {"65536"}, "a word": {"8000, http"},
			"nine": {"1,2,3,4,5,6,7,8,9"}, "nine repeated": {"1", "2", "3", "4", "5", "6", "7", "8", "9"}} {
			res, page := rent(bad...)
			if res.StatusCode != http.StatusUnprocessableEntity || fieldMessage(page, "ports") == "" {
				t.Errorf("rent form with ports %s: %d, message %q", name, res.StatusCode, fieldMessage(page, "ports"))
			}
		}
		must(t, rentalsOf(t, db, org) == 0, "a refused rent form made a rental")
		res, _ := rent("7860, 6006，6006")
		must(t, res.StatusCode == http.StatusSeeOther && rentalsOf(t, db, org) == 1, "rent with a list of ports: %d", res.StatusCode)
		res, _ = rent("8888", "6006")
		must(t, res.StatusCode == http.StatusSeeOther && rentalsOf(t, db, org) == 2, "rent with repeated ports: %d", res.StatusCode)
		var ids []int64
		must(t, db.R.Model(&models.Rental{}).Where("org_id = ?", org).Order("id").Pluck("id", &ids).Error == nil, "rentals")
		must(t, slices.Equal(portsOf(t, db, ids[0]), []int{6006, 7860}) && slices.Equal(portsOf(t, db, ids[1]), []int{6006, 8888}),
			"stored ports: %v %v", portsOf(t, db, ids[0]), portsOf(t, db, ids[1]))

		withPorts := func(v string) string { return strings.TrimSuffix(base, "}") + `,"ports":` + v + `}` }
		for _, bad := range []string{`[22]`, `[70000]`, `["8000"]`, `8000`, `[1,2,3,4,5,6,7,8,9]`} {
			st, _, body, _ := idemPost(a, "/api/v1/rentals", token, "", withPorts(bad))
			code, param, _ := errorCode(t, body)
			if st != http.StatusBadRequest || code != "invalid" || param != "ports" {
				t.Errorf("API rent with ports %s: %d %s %s, want 400 naming ports", bad, st, code, param)
			}
		}
		must(t, rentalsOf(t, db, org) == 2, "a refused API rent made a rental")
		st, _, body, _ := idemPost(a, "/api/v1/rentals", token, "", withPorts(`[8000,6006,8000]`))
		must(t, st == http.StatusCreated && strings.Contains(body, `"ports":[6006,8000]`), "API rent with ports: %d %s", st, body)
	})
}
