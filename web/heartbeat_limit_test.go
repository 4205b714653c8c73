package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"suanli/agent"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/models"
	"suanli/offers"
	"suanli/web"
)

// Heartbeats are limited per node: a short burst, then one per second on
// average; one over the limit is a 429 with Retry-After that runs nothing
// (the node's row is not touched), and another node is not affected.
func TestHeartbeatsAreLimitedPerNode(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		ix := offers.NewIndex(db)
		if _, err := ix.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		clock := &manualClock{now: time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)}
		srv := httptest.NewServer(web.New(testHandler(db, ix), web.Options{Heartbeats: web.HeartbeatLimit{Now: clock.Now}}))
		t.Cleanup(srv.Close)

		var nodes []models.Node
		if err := db.R.Order("id").Limit(2).Find(&nodes).Error; err != nil || len(nodes) != 2 {
			t.Fatalf("two nodes: %v", err)
		}
		creds := map[int64]string{}
		for _, n := range nodes {
			cred, err := (&fleet.Fleet{DB: db}).IssueCredential(ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			creds[n.ID] = cred
		}
		a, b := nodes[0].ID, nodes[1].ID
		body, _ := json.Marshal(agent.Heartbeat{AgentVersion: "test", Launcher: "simulated"})
		beat := func(node int64) *http.Response {
			t.Helper()
			req, _ := http.NewRequest("POST", srv.URL+agent.PathHeartbeat, strings.NewReader(string(body)))
			req.Header.Set("Authorization", "Bearer "+creds[node])
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			_ = json.NewDecoder(res.Body).Decode(&e)
			if res.StatusCode == http.StatusTooManyRequests && e.Error.Code != "rate_limited" {
				t.Errorf("a 429 with code %q, want rate_limited", e.Error.Code)
			}
			return res
		}
		lastBeat := func(node int64) time.Time {
			t.Helper()
			var n models.Node
			if err := db.R.First(&n, node).Error; err != nil || n.LastHeartbeatAt == nil {
				t.Fatalf("node %d: %v, last heartbeat %v", node, err, n.LastHeartbeatAt)
			}
			return *n.LastHeartbeatAt
		}

		for i := range 3 {
			must(t, beat(a).StatusCode == 200, "heartbeat %d of a burst refused", i+1)
		}
		seen := lastBeat(a)
		for range 50 {
			res := beat(a)
			must(t, res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "1",
				"a heartbeat over the limit: %d, Retry-After %q; want 429, 1", res.StatusCode, res.Header.Get("Retry-After"))
		}
		must(t, lastBeat(a).Equal(seen), "a refused heartbeat was recorded (%v, was %v)", lastBeat(a), seen)
		must(t, beat(b).StatusCode == 200, "another node's heartbeat was refused")

		clock.Advance(time.Second)
		must(t, beat(a).StatusCode == 200, "a heartbeat a second later was refused")
		must(t, beat(a).StatusCode == http.StatusTooManyRequests, "two heartbeats a second were accepted")
		clock.Advance(fleet.HeartbeatEvery)
		must(t, beat(a).StatusCode == 200, "a heartbeat at the agents' interval was refused")
	})
}
