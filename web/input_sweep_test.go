package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"suanli/agent"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/handlers"
	"suanli/models"
	"suanli/web"
)

// badText are the kinds of text PostgreSQL refuses in a text column (and
// so would turn into a 500): a NUL character and bytes that are not UTF-8.
var badText = []struct{ name, raw string }{
	{"NUL", "a\x00b"},
	{"not UTF-8", "a\xffb"},
	{"a UTF-16 surrogate", "a\xed\xa0\x80b"},
}

// fillPath builds a request path from an echo route path: each :param
// and * becomes value (already escaped for a path).
func fillPath(route, value string) string {
	segs := strings.Split(route, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") || s == "*" {
			segs[i] = value
		}
	}
	return strings.Join(segs, "/")
}

// allRowCounts counts the rows of every table.
func allRowCounts(t *testing.T, db *models.DB) map[string]int64 {
	t.Helper()
	tables, err := db.W.Migrator().GetTables()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, tb := range tables {
		var n int64
		if err := db.W.Table(tb).Count(&n).Error; err != nil {
			t.Fatalf("count %s: %v", tb, err)
		}
		out[tb] = n
	}
	return out
}

// sweeper sends requests as a logged-in platform admin: with the
// session's cookie and CSRF token for pages, an API token for /api/ and
// a node credential for /agent/, so that every route gets as far as it
// can.
type sweeper struct {
	t      *testing.T
	a      *app
	admin  *actor
	token  string
	nodeCr string
}

// send sends one request and returns its status and body.
func (s *sweeper) send(method, path, ctype string, body string) (int, string) {
	s.t.Helper()
	var headers []string
	if body != "" {
		headers = append(headers, "Content-Type", ctype)
	}
	switch {
	case strings.HasPrefix(path, "/api/"):
		headers = append(headers, "Authorization", "Bearer "+s.token)
	case strings.HasPrefix(path, "/agent/"):
		headers = append(headers, "Authorization", "Bearer "+s.nodeCr)
	default:
		headers = append(headers, "X-CSRF-Token", s.admin.csrf())
	}
	req, err := http.NewRequest(method, s.a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept-Language", "en")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, b := s.admin.a.doWith(s.admin.c, req)
	return res.StatusCode, b
}

// doWith sends req with client c and returns the answer and its body.
func (a *app) doWith(c *http.Client, req *http.Request) (*http.Response, string) {
	a.t.Helper()
	res, err := c.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return res, sb.String()
}

// refused reports whether an answer is the malformed-text refusal: a 400
// with code malformed (JSON) or its message (a page).
func refused(status int, body string) bool {
	return status == http.StatusBadRequest &&
		(strings.Contains(body, `"code":"malformed"`) || strings.Contains(body, "NUL character or bytes that are not UTF-8"))
}

// Text that PostgreSQL cannot store (a NUL character, bytes that are not
// UTF-8) is refused with a 400, and changes nothing, wherever it is in a
// request to any route of the route table: in the path, in a query name
// or value, in a form (urlencoded or multipart) and in a JSON body,
// escaped or raw. No such request is answered 5xx on either database.
func TestMalformedTextIsRefusedOnEveryRoute(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		// Without the heartbeat limit: this sends one node's agent routes
		// dozens of requests in a row (TestHeartbeatsAreLimitedPerNode
		// covers the limit).
		a := newAppOptions(t, db, web.Options{Heartbeats: web.HeartbeatLimit{Every: -1}},
			func(h *handlers.Handler) { h.StripeWebhookSecret = webhookSecret })
		ctx := context.Background()
		root := mustUser(t, db, "sweep-root@suanli.example", "Sam Sweep", true)
		_, _, token := apiUser(t, a, "sweep-api@example.com")
		var node models.Node
		if err := db.R.Order("id").First(&node).Error; err != nil {
			t.Fatal(err)
		}
		cred, err := (&fleet.Fleet{DB: db}).IssueCredential(ctx, node.ID)
		if err != nil {
			t.Fatal(err)
		}
		s := &sweeper{t: t, a: a, admin: loggedIn(a, "platform admin", root), token: token, nodeCr: cred}
		before := allRowCounts(t, db)

		routes := a.e.Routes()
		sort.Slice(routes, func(i, j int) bool { return routes[i].Method+routes[i].Path < routes[j].Method+routes[j].Path })
		must(t, len(routes) > 100, "the route table has %d routes", len(routes))
		// A path parameter that names nothing: a request that got past
		// the guard could not change anything.
		const none = "999999"
		fivexx := 0
		for _, r := range routes {
			has := strings.Contains(r.Path, ":") || strings.Contains(r.Path, "*")
			var cases []struct{ where, path, ctype, body string }
			add := func(where, path, ctype, body string) {
				cases = append(cases, struct{ where, path, ctype, body string }{where, path, ctype, body})
			}
			for _, bt := range badText {
				esc := url.PathEscape(bt.raw)
				if has {
					add("path parameter ("+bt.name+")", fillPath(r.Path, esc), "", "")
				}
				q := url.QueryEscape(bt.raw)
				add("query value ("+bt.name+")", fillPath(r.Path, none)+"?page=1&q="+q, "", "")
				add("query name ("+bt.name+")", fillPath(r.Path, none)+"?"+q+"=1", "", "")
				if r.Method == http.MethodGet || r.Method == http.MethodHead {
					continue
				}
				if web.RawRoutes[r.Name] != 0 {
					// Its body streams to a container as it is (a
					// proxied app's, an upload's bytes) and is never
					// stored as text; its path and query are checked
					// as everywhere, and the upload's own text parts
					// are refused in TestWorkspaceThroughTheTunnel.
					continue
				}
				form := url.Values{"_csrf": {s.admin.csrf()}, "name": {bt.raw}, "ssh_public_key": {bt.raw}}
				add("urlencoded form ("+bt.name+")", fillPath(r.Path, none), "application/x-www-form-urlencoded", form.Encode())
				var mp strings.Builder
				mw := multipart.NewWriter(&mp)
				_ = mw.WriteField("_csrf", s.admin.csrf())
				_ = mw.WriteField("reason", bt.raw)
				_ = mw.Close()
				add("multipart form ("+bt.name+")", fillPath(r.Path, none), mw.FormDataContentType(), mp.String())
			}
			for _, c := range cases {
				st, body := s.send(r.Method, c.path, c.ctype, c.body)
				if st >= 500 {
					fivexx++
				}
				if r.Method == http.MethodHead && st == http.StatusBadRequest && body == "" {
					continue // the answer of a HEAD has no body to read the code in
				}
				if !refused(st, body) {
					t.Errorf("%s %s, %s: %d, want 400 malformed: %s", r.Method, r.Path, c.where, st, snippet(body))
				}
			}
		}

		// JSON bodies, escaped (\u0000) or raw, to every route that takes
		// JSON: the API's writes, the agents' and the webhook.
		for _, r := range routes {
			if r.Method == http.MethodGet || !(strings.HasPrefix(r.Path, "/api/") || strings.HasPrefix(r.Path, "/agent/") || strings.HasPrefix(r.Path, "/webhooks/")) {
				continue
			}
			for _, body := range []string{`{"name":"a\u0000b"}`, `{"a\u0000b":1}`, `{"name":"a\\\u0000b"}`, "{\"name\":\"a\xffb\"}", "{\"name\":\"a\x00b\"}"} {
				st, b := s.send(r.Method, fillPath(r.Path, none), "application/json", body)
				if st >= 500 {
					fivexx++
					t.Errorf("%s %s, JSON %q: %d", r.Method, r.Path, body, st)
				}
				// A route that reads its body refuses it; one that
				// answers before reading (a path naming nothing) may
				// answer that instead, but never with a success.
				if st < 400 {
					t.Errorf("%s %s, JSON %q: %d, want a refusal: %s", r.Method, r.Path, body, st, snippet(b))
				}
			}
		}
		must(t, fivexx == 0, "%d answers were 5xx", fivexx)

		// The cases that were seen to answer 500 on PostgreSQL, one by one.
		anon := newActor(a, "anonymous")
		res, body := anon.do("GET", "/datacenters/a%00b", nil)
		must(t, refused(res.StatusCode, body), "anonymous GET /datacenters/a%%00b: %d %s", res.StatusCode, snippet(body))
		contains(t, body, "NUL character")

		var offer models.Offer
		if err := db.R.Where("status = ?", "listed").Order("id").First(&offer).Error; err != nil {
			t.Fatal(err)
		}
		key := testSSHKey(t) + "\x00"
		rent, _ := json.Marshal(map[string]any{"offer_id": offer.ID, "gpus": 1, "sla": "standard", "term": "on_demand", "ssh_public_key": key})
		st, b := s.send("POST", "/api/v1/rentals", "application/json", string(rent))
		must(t, refused(st, b), "API rent with a NUL in the SSH key: %d %s", st, b)
		st, b = s.send("POST", fmt.Sprintf("/offers/%d/rent", offer.ID), "application/x-www-form-urlencoded",
			url.Values{"_csrf": {s.admin.csrf()}, "gpus": {"1"}, "sla": {"standard"}, "term": {"on_demand"}, "ssh_public_key": {key}}.Encode())
		must(t, refused(st, b), "rent form with a NUL in the SSH key: %d %s", st, snippet(b))

		// Heartbeats with a NUL in a GPU's name, UUID or failure reason.
		for _, field := range []string{"name", "uuid", "reason"} {
			info := gpu.Info{Index: 0, UUID: "GPU-sweep-0", Name: "NVIDIA GeForce RTX 4090", Health: gpu.Verdict{Healthy: false, Reasons: []string{"xid 79"}}}
			switch field {
			case "name":
				info.Name += "\x00"
			case "uuid":
				info.UUID += "\x00"
			case "reason":
				info.Health.Reasons[0] += "\x00"
			}
			hb, _ := json.Marshal(agent.Heartbeat{AgentVersion: "test", Launcher: "simulated", Host: gpu.Host{GPUs: []gpu.Info{info}}})
			must(t, strings.Contains(string(hb), `\u0000`), "the heartbeat escapes the NUL: %s", hb)
			st, b := s.send("POST", agent.PathHeartbeat, "application/json", string(hb))
			must(t, refused(st, b), "heartbeat with a NUL in the GPU %s: %d %s", field, st, b)
		}

		after := allRowCounts(t, db)
		for tb, n := range before {
			if after[tb] != n {
				t.Errorf("table %s: %d rows before the sweep, %d after", tb, n, after[tb])
			}
		}
		var n models.Node
		if err := db.R.First(&n, node.ID).Error; err != nil {
			t.Fatal(err)
		}
		must(t, n.LastHeartbeatAt == nil, "a refused heartbeat was recorded at %v", n.LastHeartbeatAt)
	})
}
