package web_test

import (
	"net/http"
	"testing"

	"suanli/dbtest"
	"suanli/models"
	"suanli/routenames"
)

// A script that asks the workspace's routes for JSON (Accept:
// application/json, as docs/api.md says for the file listing and the
// upload) gets its errors as JSON too, in the API's shape; a browser
// gets the page. Here the rental's node runs no container (409), and
// another organisation's user gets 404.
func TestWorkspaceErrorsAnswerJSONToScripts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		u, org := fundedRenter(t, db, "json-errors@example.com", testPassword, 0)
		id := mustRunningRental(t, db, org, u.ID, rtxOffer(t, db))
		renter := loggedIn(a, "renter", u)
		list := a.url(routenames.RentalsFilesList, idParam(id))

		res, body := renter.do("GET", list, nil, "Accept", "application/json")
		code, _, msg := errorCode(t, body)
		must(t, res.StatusCode == http.StatusConflict && code == "conflict" && msg != "" && res.Header.Get("Content-Type") == "application/json",
			"the listing of a rental without a container, as JSON: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
		res, body = renter.do("GET", list, nil)
		must(t, res.StatusCode == http.StatusConflict && res.Header.Get("Content-Type") == "text/html; charset=UTF-8",
			"the same for a browser: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), snippet(body))

		other, _ := fundedRenter(t, db, "json-errors-other@example.com", testPassword, 0)
		res, body = loggedIn(a, "other", other).do("GET", list, nil, "Accept", "application/json")
		code, _, _ = errorCode(t, body)
		must(t, res.StatusCode == http.StatusNotFound && code == "not_found", "another organisation's user, as JSON: %d %s", res.StatusCode, body)
	})
}
