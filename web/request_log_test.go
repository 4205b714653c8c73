package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"suanli/fleet"
	"suanli/models"
)

// captureLogs sends the default logger's lines, at level and above, to a
// buffer for the rest of the test.
func captureLogs(t *testing.T, level slog.Level) *lockedBuffer {
	t.Helper()
	logs := &lockedBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: level})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return logs
}

// requestLines returns the request log lines ("http") among lines.
func requestLines(lines []map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] == "http" {
			out = append(out, l)
		}
	}
	return out
}

// A node agent's routine traffic (heartbeats, task polls) is logged at
// debug, so that it does not bury everything else; an agent request that
// is refused still shows at info, and pages stay at info.
func TestAgentTrafficLogsAtDebug(t *testing.T) {
	a := newSQLiteApp(t)
	var offer models.Offer
	if err := a.db.R.Where("status = ?", models.OfferListed).Order("id").First(&offer).Error; err != nil {
		t.Fatal(err)
	}
	token, err := (&fleet.Fleet{DB: a.db}).IssueCredential(context.Background(), offer.NodeID)
	if err != nil {
		t.Fatal(err)
	}
	agentReq := func(method, path, body, bearer string) int {
		t.Helper()
		req, _ := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	routine := func() {
		t.Helper()
		if st := agentReq("POST", "/agent/v1/heartbeat", `{"agent_version":"test"}`, token); st != http.StatusOK {
			t.Fatalf("heartbeat: %d, want 200", st)
		}
		if st := agentReq("GET", "/agent/v1/tasks?wait=0", "", token); st != http.StatusOK {
			t.Fatalf("task poll: %d, want 200", st)
		}
	}

	t.Run("routine agent requests log nothing at info", func(t *testing.T) {
		logs := captureLogs(t, slog.LevelInfo)
		routine()
		if got := requestLines(logs.lines(t)); len(got) != 0 {
			t.Errorf("a heartbeat and a task poll logged %d request lines at info, want none: %v", len(got), got)
		}
	})

	t.Run("they are still there at debug", func(t *testing.T) {
		logs := captureLogs(t, slog.LevelDebug)
		routine()
		got := requestLines(logs.lines(t))
		if len(got) != 2 {
			t.Fatalf("%d request lines at debug, want 2 (heartbeat, poll): %v", len(got), got)
		}
		for _, l := range got {
			if l["level"] != "DEBUG" {
				t.Errorf("%v %v logged at %v, want DEBUG", l["method"], l["path"], l["level"])
			}
		}
	})

	t.Run("a refused agent request shows at info", func(t *testing.T) {
		logs := captureLogs(t, slog.LevelInfo)
		if st := agentReq("POST", "/agent/v1/heartbeat", `{"agent_version":"test"}`, "not-a-token"); st != http.StatusUnauthorized {
			t.Fatalf("heartbeat with a bad token: %d, want 401", st)
		}
		got := requestLines(logs.lines(t))
		if len(got) != 1 || got[0]["level"] != "INFO" || got[0]["status"] != float64(401) {
			t.Errorf("refused heartbeat: request lines %v, want one at INFO with status 401", got)
		}
	})

	t.Run("pages still log at info", func(t *testing.T) {
		logs := captureLogs(t, slog.LevelInfo)
		a.get("/offers")
		if got := requestLines(logs.lines(t)); len(got) != 1 || got[0]["level"] != "INFO" {
			t.Errorf("GET /offers: request lines %v, want one at INFO", got)
		}
	})
}
