package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"suanli/agent"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
	"suanli/routenames"
	"suanli/static"
)

// sendHeartbeat posts one heartbeat for the node through the real agent
// endpoint, with its seeded GPUs read from go-nvml's mock servers, its
// node credential, and pingURL as the agent's latency endpoint.
func sendHeartbeat(t *testing.T, a *app, nodeID int64, pingURL string) {
	t.Helper()
	ctx := context.Background()
	var n models.Node
	if err := a.db.R.First(&n, nodeID).Error; err != nil {
		t.Fatal(err)
	}
	var uuids []string
	if err := a.db.R.Model(&models.GPU{}).Where("node_id = ?", nodeID).Order("idx").Pluck("uuid", &uuids).Error; err != nil {
		t.Fatal(err)
	}
	sim, err := gpu.SimulateCatalog(n.GPUModel, len(uuids), gpu.WithUUIDs(uuids))
	if err != nil {
		t.Fatal(err)
	}
	reader, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	cred, err := (&fleet.Fleet{DB: a.db}).IssueCredential(ctx, nodeID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(agent.Heartbeat{AgentVersion: "test", Hostname: n.Name, Launcher: "simulated",
		Host: reader.Read(), PingURL: pingURL, SentAt: time.Now().UTC()})
	req, _ := http.NewRequest("POST", a.srv.URL+agent.PathHeartbeat, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+cred)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	must(t, res.StatusCode == http.StatusOK, "heartbeat of node %d: %d", nodeID, res.StatusCode)
}

// heardFirst makes node first's last heartbeat a second older than node
// then's, as if the two had come a second apart, so that "most recent
// first" does not rest on two heartbeats landing on distinct clock ticks.
func heardFirst(t *testing.T, db *models.DB, first, then int64) {
	t.Helper()
	var n models.Node
	if err := db.R.First(&n, then).Error; err != nil || n.LastHeartbeatAt == nil {
		t.Fatalf("node %d's last heartbeat: %v", then, err)
	}
	if err := db.W.Model(&models.Node{}).Where("id = ?", first).Update("last_heartbeat_at", n.LastHeartbeatAt.Add(-time.Second)).Error; err != nil {
		t.Fatal(err)
	}
}

// dcNodes returns the ids of the datacentre's nodes, in id order.
func dcNodes(t *testing.T, db *models.DB, slug string) []int64 {
	t.Helper()
	var ids []int64
	err := db.R.Raw(`SELECT n.id FROM nodes n JOIN datacenters d ON d.id = n.datacenter_id WHERE d.slug = ? ORDER BY n.id`, slug).Scan(&ids).Error
	must(t, err == nil && len(ids) >= 2, "nodes of %s: %v %v", slug, ids, err)
	return ids
}

// connectSrc returns the sources of the response's CSP connect-src.
func connectSrc(t *testing.T, res *http.Response) []string {
	t.Helper()
	for _, d := range strings.Split(res.Header.Get("Content-Security-Policy"), ";") {
		f := strings.Fields(d)
		if len(f) > 0 && f[0] == "connect-src" {
			return f[1:]
		}
	}
	t.Fatalf("no connect-src in %q", res.Header.Get("Content-Security-Policy"))
	return nil
}

// A heartbeat's ping URL is stored on the node; one a browser must not be
// sent to (not http(s), credentials, something that would break the CSP)
// is dropped, and an agent that stops reporting one clears it.
func TestLatencyHeartbeatStoresPingURL(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		node := dcNodes(t, a.db, "cd-hitech")[0]
		stored := func() string {
			var n models.Node
			if err := a.db.R.First(&n, node).Error; err != nil {
				t.Fatal(err)
			}
			return n.PingURL
		}
		for _, tc := range []struct{ sent, want string }{
			{"https://gpu-a.example.net:7070/ping", "https://gpu-a.example.net:7070/ping"},
			{"http://203.0.113.9:7070/ping", "http://203.0.113.9:7070/ping"},
			{"javascript:alert(1)", ""},
			{"https://x.example.net; script-src *", ""},
			{"https://user:pw@gpu-a.example.net/ping", ""},
			{"https://gpu-a.example.net/ping", "https://gpu-a.example.net/ping"},
			{"", ""},
		} {
			sendHeartbeat(t, a, node, tc.sent)
			if got := stored(); got != tc.want {
				t.Errorf("heartbeat with ping URL %q: stored %q, want %q", tc.sent, got, tc.want)
			}
		}
	})
}

// The offer and datacentre pages hand the visitor's browser the ping URLs
// of the datacentre's nodes and the script that times them, and their CSP
// lets scripts reach exactly those origins; other pages keep 'self' alone.
func TestLatencyPagesTimeTheDatacentresNodes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		nodes := dcNodes(t, a.db, "cd-hitech")
		sendHeartbeat(t, a, nodes[0], "http://203.0.113.9:7070/ping")
		sendHeartbeat(t, a, nodes[1], "https://gpu-b.example.net:7443/ping")
		heardFirst(t, a.db, nodes[0], nodes[1]) // the newest heartbeat comes first
		wantURLs := "https://gpu-b.example.net:7443/ping http://203.0.113.9:7070/ping"
		wantOrigins := []string{"'self'", "https://gpu-b.example.net:7443", "http://203.0.113.9:7070"}

		offer := rtxOffer(t, a.db)
		for _, path := range []string{a.url(routenames.OffersShow, idParam(offer.ID)), a.url(routenames.DatacentersShow, "cd-hitech")} {
			res, body := a.get(path, "Accept-Language", "en")
			must(t, res.StatusCode == 200, "GET %s: %d", path, res.StatusCode)
			contains(t, body,
				`data-ping-urls="`+wantURLs+`"`,
				`<script src="`+static.URL("latency.js")+`" defer></script>`,
				html.EscapeString("Measured from your browser"),
			)
			if got := connectSrc(t, res); !slices.Equal(got, wantOrigins) {
				t.Errorf("GET %s: connect-src %v, want %v", path, got, wantOrigins)
			}
		}

		// A datacentre none of whose agents reported a ping URL: nothing to
		// time, no script, and the narrow CSP.
		var other models.Offer
		if err := a.db.R.Raw(`SELECT o.* FROM offers o JOIN datacenters d ON d.id = o.datacenter_id WHERE d.slug <> 'cd-hitech' ORDER BY o.id LIMIT 1`).Scan(&other).Error; err != nil || other.ID == 0 {
			t.Fatalf("an offer elsewhere: %v", err)
		}
		for _, path := range []string{a.url(routenames.OffersShow, idParam(other.ID)), a.url(routenames.OffersList), a.url(routenames.AuthLogin)} {
			res, body := a.get(path)
			must(t, res.StatusCode == 200, "GET %s: %d", path, res.StatusCode)
			if strings.Contains(body, "data-ping-urls") || strings.Contains(body, static.URL("latency.js")) {
				t.Errorf("GET %s: has the latency element or script", path)
			}
			if got := connectSrc(t, res); !slices.Equal(got, []string{"'self'"}) {
				t.Errorf("GET %s: connect-src %v, want 'self' alone", path, got)
			}
		}

		// A node not heard from lately is not timed.
		if err := a.db.W.Model(&models.Node{}).Where("id IN ?", nodes[:2]).Update("last_heartbeat_at", time.Now().Add(-time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		res, body := a.get(a.url(routenames.OffersShow, idParam(offer.ID)))
		must(t, !strings.Contains(body, "data-ping-urls"), "a silent node's ping URL is still offered")
		must(t, slices.Equal(connectSrc(t, res), []string{"'self'"}), "connect-src %v after the nodes went quiet", connectSrc(t, res))
	})
}

// Without JavaScript the page shows the published figures with their
// source, and the visitor's own latency stays hidden (nothing measures it).
func TestLatencyPublishedFiguresWithoutJavaScript(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	sendHeartbeat(t, a, dcNodes(t, a.db, "cd-hitech")[0], "https://gpu-a.example.net:7070/ping")
	_, body := a.get(a.url(routenames.OffersShow, idParam(rtxOffer(t, a.db).ID)), "Accept-Language", "en")
	contains(t, body, `<table class="kv latency">`, "Source: demo data", `<p class="your-latency" id="your-latency"`)
	el := body[strings.Index(body, `<p class="your-latency"`):]
	el = el[:strings.Index(el, ">")]
	must(t, strings.Contains(el, " hidden"), "the latency element is shown without JavaScript: %s", el)
}

// The marketplace serves the ping endpoint itself (the demo's in-process
// nodes report it), and a page timing it says what it measures.
func TestLatencyServerPing(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	req, _ := http.NewRequest("GET", a.srv.URL+a.url(routenames.Ping), nil)
	req.Header.Set("Origin", "http://elsewhere.example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	must(t, res.StatusCode == http.StatusNoContent, "GET /ping: %d", res.StatusCode)
	for h, want := range map[string]string{"Access-Control-Allow-Origin": "*", "Timing-Allow-Origin": "*", "Cache-Control": "no-store"} {
		must(t, res.Header.Get(h) == want, "GET /ping: %s %q, want %q", h, res.Header.Get(h), want)
	}

	// testHandler's base URL is http://suanli.test.
	sendHeartbeat(t, a, dcNodes(t, a.db, "cd-hitech")[0], "http://suanli.test/ping")
	_, body := a.get(a.url(routenames.DatacentersShow, "cd-hitech"), "Accept-Language", "en")
	contains(t, body, `data-ping-urls="http://suanli.test/ping"`, "measured from your browser to this demo server")
}

// In a real browser the script times the first endpoint that answers
// (across origins, under the page's CSP) and shows the figure in ms.
func TestLatencyBrowserMeasures(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	a := newApp(t, dbtest.SQLite(t))
	ctx := newBrowser(t, 60*time.Second)

	// An agent's endpoint on another port (another origin), and before it
	// one that answers nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = agent.ServePing(pctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := agent.DefaultPingURL("127.0.0.1", dead)
	dead.Close()

	nodes := dcNodes(t, a.db, "cd-hitech")
	sendHeartbeat(t, a, nodes[0], agent.DefaultPingURL("127.0.0.1", ln))
	sendHeartbeat(t, a, nodes[1], deadURL)
	heardFirst(t, a.db, nodes[0], nodes[1]) // the dead endpoint is listed first

	if err := chromedp.Do(ctx,
		chromedp.Navigate(a.srv.URL+a.url(routenames.OffersShow, idParam(rtxOffer(t, a.db).ID))),
		chromedp.WaitVisible(chromedp.CSS(`#your-latency[data-ping-state]:not([data-ping-state="measuring"])`)),
	); err != nil {
		t.Fatalf("the latency figure never appeared: %v", err)
	}
	state := eval[string](t, ctx, `document.getElementById("your-latency").dataset.pingState`)
	text := eval[string](t, ctx, `document.querySelector("#your-latency [data-ping-out]").textContent`)
	t.Logf("shown: %s", text)
	must(t, state == "done" && strings.HasPrefix(text, "你的延迟：") && strings.HasSuffix(text, " ms"), "shown %q (state %q)", text, state)
}
