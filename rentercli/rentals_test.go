package rentercli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"suanli/locales"
)

// namedRental is one rental of the fake API below.
type namedRental struct {
	id    int
	org   int
	name  string
	state string
	at    time.Time
}

// rentalsAPI is a stand-in for GET /api/v1/me and GET /api/v1/rentals
// (org_id, name, page, per_page, as the API takes them; org 3 is one
// whose rentals the caller may not see) that records the list requests.
func rentalsAPI(t *testing.T, rentals []namedRental) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var lists []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/me":
			fmt.Fprint(w, `{"id":1,"email":"r@example.com","name":"R","lang":"en","email_verified":true,"platform_admin":false,"student_pricing":false,
				"orgs":[{"id":1,"kind":"company","name":"R","personal":true,"role":"owner","status":""},
				{"id":2,"kind":"company","name":"Team","personal":false,"role":"member","status":""},
				{"id":3,"kind":"lab","name":"Lab","personal":false,"role":"member","status":"approved"}]}`)
			return
		case "/api/v1/rentals":
		default:
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		mu.Lock()
		lists = append(lists, q.Encode())
		mu.Unlock()
		org, _ := strconv.Atoi(q.Get("org_id"))
		if org == 0 {
			org = 1
		}
		if org == 3 {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error":{"code":"forbidden","message":"you may not see this organisation's rentals"}}`)
			return
		}
		page, _ := strconv.Atoi(q.Get("page"))
		per, _ := strconv.Atoi(q.Get("per_page"))
		if page < 1 || per < 1 || per > 200 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":"invalid","message":"page","param":"page"}}`)
			return
		}
		var match []map[string]any
		for _, x := range rentals {
			if x.org == org && x.name == q.Get("name") {
				match = append(match, map[string]any{"id": x.id, "name": x.name, "state": x.state, "created_at": x.at, "gpus": 1})
			}
		}
		from, to := min((page-1)*per, len(match)), min(page*per, len(match))
		if page > 1 && from >= len(match) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":"invalid","message":"page past the last","param":"page"}}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"org_id": org, "rentals": append([]map[string]any{}, match[from:to]...), "total": len(match), "page": page, "per_page": per})
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lists...)
	}
}

// A RENTAL name is looked up with the API's name filter in every
// organisation of the caller (or --org's), every page: the one live
// rental of that name wherever it is; several are a usage error listing
// their ids; none live, the newest of that name; none, exit 6.
func TestRentalArgByName(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var rs []namedRental
	// Org 2 holds 200 ended "trainer"s before the live one (page 2).
	for i := range 200 {
		rs = append(rs, namedRental{id: 1000 + i, org: 2, name: "trainer", state: "released", at: t0})
	}
	rs = append(rs,
		namedRental{id: 42, org: 2, name: "trainer", state: "running", at: t0.Add(-time.Hour)},
		namedRental{id: 7, org: 1, name: "twin", state: "running", at: t0},
		namedRental{id: 8, org: 2, name: "twin", state: "stopped", at: t0},
		namedRental{id: 20, org: 1, name: "old", state: "released", at: t0},
		namedRental{id: 21, org: 2, name: "old", state: "failed", at: t0.Add(time.Hour)},
		namedRental{id: 22, org: 2, name: "old", state: "released", at: t0.Add(-time.Hour)},
	)
	srv, lists := rentalsAPI(t, rs)
	a := &app{ctx: context.Background(), stderr: &bytes.Buffer{}, lang: locales.EN}
	c, err := a.newClient(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := a.rentalArg(c, []string{"trainer"}, 0); err != nil || id != 42 {
		t.Errorf("trainer: %d, %v; want 42 (org 2, page 2)", id, err)
	}
	want := []string{"name=trainer&org_id=1&page=1&per_page=200", "name=trainer&org_id=2&page=1&per_page=200",
		"name=trainer&org_id=2&page=2&per_page=200", "name=trainer&org_id=3&page=1&per_page=200"}
	if got := lists(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("list requests:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err = a.rentalArg(c, []string{"twin"}, 0)
	if exitCodeOf(err) != ExitUsage || !strings.Contains(err.Error(), `several live rentals are named "twin" (7, 8)`) {
		t.Errorf("twin: exit %d, %v", exitCodeOf(err), err)
	}
	if id, err := a.rentalArg(c, []string{"old"}, 0); err != nil || id != 21 {
		t.Errorf("old: %d, %v; want 21, the newest of the ended ones", id, err)
	}
	if _, err := a.rentalArg(c, []string{"nope"}, 0); exitCodeOf(err) != ExitNotFound {
		t.Errorf("nope: exit %d, %v", exitCodeOf(err), err)
	}
	// --org: that organisation only; one the caller may not see is the
	// error it is.
	if id, err := a.rentalArg(c, []string{"twin"}, 1); err != nil || id != 7 {
		t.Errorf("twin in org 1: %d, %v", id, err)
	}
	if _, err := a.rentalArg(c, []string{"twin"}, 3); exitCodeOf(err) != ExitForbidden {
		t.Errorf("twin in org 3: exit %d, %v", exitCodeOf(err), err)
	}
	// An id is an id, without a request.
	before := len(lists())
	if id, err := a.rentalArg(c, []string{"#12"}, 0); err != nil || id != 12 || len(lists()) != before {
		t.Errorf("#12: %d, %v", id, err)
	}
}
