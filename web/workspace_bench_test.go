package web_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"suanli/agent/docker"
	"suanli/dockertest"
)

// The workspace's speed through the agent's tunnel on loopback, against
// the same app reached directly at the container's address (what the
// tunnel adds). Run them with
//
//	SUANLI_TEST_DOCKER_HOST=unix:///tmp/dockerd/docker.sock go test -run '^$' -bench Workspace ./web/
//
// Each benchmark sets up its own rental of the Jupyter test image (a few
// seconds, not timed). The targets: one download ≥ 50 MB/s,
// added latency p50 ≤ 2 ms per request, 100 concurrent requests without
// errors, and memory that does not grow with the bytes proxied. The
// benchmarks report; only an error fails them, never a time.

// benchRig is newWorkspaceRig for a benchmark, prepared by prepare (files
// written, apps started) with the rig's test helpers. The rig's helpers
// take a *testing.T, so the rig lives in a test of its own (run with
// testing.RunTests) that holds it until the benchmark ends; its cleanups
// (the agent stopped, the containers and volumes removed) run then.
func benchRig(b *testing.B, ports []int, prepare func(t *testing.T, w *workspaceRig)) *workspaceRig {
	b.Helper()
	dockertest.Require(b)
	ready := make(chan *workspaceRig, 1)
	release := make(chan struct{})
	finished := make(chan bool, 1)
	var once atomic.Bool
	go func() {
		// RunTests matches its tests against the run's -run pattern (^$
		// when only benchmarks run) and -skip: the rig's test matches any
		// -run and no -skip.
		skip, _, _ := strings.Cut(flagValue("test.skip"), "/")
		match := func(pat, _ string) (bool, error) { return skip == "" || pat != skip, nil }
		finished <- testing.RunTests(match, []testing.InternalTest{{Name: "WorkspaceBenchRig", F: func(t *testing.T) {
			if !once.CompareAndSwap(false, true) {
				return // -count=N runs the rig's test N times: one rig serves
			}
			w := newWorkspaceRig(t, ports)
			if prepare != nil {
				prepare(t, w)
			}
			ready <- w
			<-release
		}}})
	}()
	select {
	case w := <-ready:
		b.Cleanup(func() {
			close(release)
			if !<-finished {
				b.Error("the workspace rig's test failed (its log is above)")
			}
		})
		return w
	case ok := <-finished:
		if ok {
			b.Skip("the workspace rig was skipped (its log is above)")
		}
		b.Fatal("setting up the workspace rig failed (its log is above)")
		return nil
	}
}

// flagValue is the value of the command line's flag name ("" if none).
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// startInContainer runs a shell command line in the rental's container
// through its terminal, in the background, detached from the terminal.
func startInContainer(t *testing.T, w *workspaceRig, cmd string) {
	t.Helper()
	term, _, err := wsDial(t, w.renter, w.base+"/terminal/ws", w.a.srv.URL)
	if err != nil {
		t.Fatalf("the terminal's WebSocket: %v", err)
	}
	defer term.Close(websocket.StatusNormalClosure, "")
	terminalRun(t, term, "setsid "+cmd+" < /dev/null & echo started-$((40+2))", "started-42")
}

// containerAddr is the address of the rental's container on the
// workloads network: the agent's own way to its ports, without the
// tunnel.
func containerAddr(t *testing.T, w *workspaceRig) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := w.launcher.Client.ContainerInspect(ctx, w.launcher.ContainerName(w.rental))
	if err != nil {
		t.Fatal(err)
	}
	ep := info.NetworkSettings.Networks[docker.DefaultNetwork]
	if ep == nil || ep.IPAddress == "" {
		t.Fatalf("the container %s has no address on %s", info.Name, docker.DefaultNetwork)
	}
	return ep.IPAddress
}

// waitServing waits until url answers 200 to the client.
func waitServing(t *testing.T, c *http.Client, url string) {
	t.Helper()
	dockertest.Eventually(t, 60*time.Second, url, func() (bool, string) {
		res, err := c.Get(url)
		if err != nil {
			return false, err.Error()
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode == http.StatusOK, res.Status
	})
}

// benchClient is a browser of the renter's (its cookies) that keeps up
// to conns connections open per host, and takes bodies as they are.
func benchClient(w *workspaceRig, conns int) *http.Client {
	return &http.Client{Jar: w.renter.c.Jar, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// fetch GETs url and reads the body (want: its exact bytes, "" for any);
// it returns the body's length.
func fetch(c *http.Client, url, want string) (int64, error) {
	res, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return 0, fmt.Errorf("GET %s: %s %s", url, res.Status, b)
	}
	if want != "" {
		b, err := io.ReadAll(io.LimitReader(res.Body, int64(len(want))+1))
		if err == nil && string(b) != want {
			err = fmt.Errorf("GET %s: %q, want %q", url, b, want)
		}
		return int64(len(b)), err
	}
	return io.Copy(io.Discard, res.Body)
}

// BenchmarkWorkspaceDownload is one download of a 256 MiB file of the
// workspace: through the files route (the agent reads the volume), from
// python3 -m http.server on a declared port through the tunnel, and from
// the same server at the container's address (no tunnel, the baseline).
// MB/s is the throughput; heapinuse-MiB and sys-MiB are how much the
// process (server, agent and client together) grew over its baseline at
// the peak (sampled every 20 ms): streamed, they stay far below the file.
// An op takes a second or more: -benchtime=5x gives steadier figures.
func BenchmarkWorkspaceDownload(b *testing.B) {
	const size = 256 * mib
	var direct string
	w := benchRig(b, []int{8000}, func(t *testing.T, w *workspaceRig) {
		term, _, err := wsDial(t, w.renter, w.base+"/terminal/ws", w.a.srv.URL)
		if err != nil {
			t.Fatalf("the terminal's WebSocket: %v", err)
		}
		defer term.Close(websocket.StatusNormalClosure, "")
		terminalRun(t, term, fmt.Sprintf("head -c %d /dev/urandom > /workspace/big && stat -c size=%%s /workspace/big", size), fmt.Sprintf("size=%d", size))
		startInContainer(t, w, "python3 -m http.server 8000 --bind 0.0.0.0 --directory /workspace >/tmp/http.log 2>&1")
		direct = "http://" + containerAddr(t, w) + ":8000/big"
		waitServing(t, benchClient(w, 1), w.a.srv.URL+w.base+"/ports/8000/")
	})
	for _, c := range []struct{ name, url string }{
		{"files", w.a.srv.URL + w.base + "/files/download?path=big"},
		{"port", w.a.srv.URL + w.base + "/ports/8000/big"},
		{"direct", direct},
	} {
		b.Run(c.name, func(b *testing.B) {
			client := benchClient(w, 1)
			defer client.CloseIdleConnections()
			b.SetBytes(size)
			mem := sampleMemory()
			for b.Loop() {
				n, err := fetch(client, c.url, "")
				if err != nil || n != size {
					b.Fatalf("%s: %d bytes, %v; want %d", c.url, n, err, size)
				}
			}
			g := mem.Stop()
			b.ReportMetric(float64(g.Heap())/mib, "heapinuse-MiB")
			b.ReportMetric(float64(g.Sys())/mib, "sys-MiB")
		})
	}
}

// latencyApp is a small HTTP/1.1 app with keep-alive that answers "ok"
// (Nagle's algorithm off: its headers and body leave at once).
const latencyApp = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_GET(self):
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
class S(http.server.ThreadingHTTPServer):
    request_queue_size = 512
    daemon_threads = True
S(("0.0.0.0", 8003), H).serve_forever()
`

// latencyRig is a rig whose declared port 8003 runs latencyApp; it
// returns the app's URL through the marketplace and at the container.
func latencyRig(b *testing.B) (w *workspaceRig, proxied, direct string) {
	w = benchRig(b, []int{8003}, func(t *testing.T, w *workspaceRig) {
		res, body := upload(t, w.renter, w.base, "bench", map[string][]byte{"latency.py": []byte(latencyApp)})
		must(t, res.StatusCode == http.StatusCreated, "uploading the app: %d %s", res.StatusCode, snippet(body))
		startInContainer(t, w, "python3 /workspace/bench/latency.py >/tmp/latency.log 2>&1")
		direct = "http://" + containerAddr(t, w) + ":8003/small"
		waitServing(t, benchClient(w, 1), w.a.srv.URL+w.base+"/ports/8003/small")
	})
	return w, w.a.srv.URL + w.base + "/ports/8003/small", direct
}

// BenchmarkWorkspaceRequestLatency is what the tunnel adds to a small
// request: each op is one GET of a tiny page through the marketplace
// (the session and the rental's authorisation read, the tunnel, the
// agent) and one straight to the container, on kept-alive connections,
// in turn (so that the machine's load falls on both alike). It reports
// each one's p50/p90/p99 in ms, and added-p50-ms = proxied p50 − direct
// p50 (the target: ≤ 2 ms).
func BenchmarkWorkspaceRequestLatency(b *testing.B) {
	w, proxied, direct := latencyRig(b)
	b.Run("keepalive", func(b *testing.B) {
		client := benchClient(w, 2)
		defer client.CloseIdleConnections()
		var viaTunnel, straight []time.Duration
		get := func(url string, into *[]time.Duration) {
			began := time.Now()
			if _, err := fetch(client, url, "ok\n"); err != nil {
				b.Fatal(err)
			}
			*into = append(*into, time.Since(began))
		}
		// A first request each way opens the connections.
		get(proxied, &viaTunnel)
		get(direct, &straight)
		viaTunnel, straight = viaTunnel[:0], straight[:0]
		i := 0
		for b.Loop() {
			if i%2 == 0 {
				get(proxied, &viaTunnel)
				get(direct, &straight)
			} else {
				get(direct, &straight)
				get(proxied, &viaTunnel)
			}
			i++
		}
		slices.Sort(viaTunnel)
		slices.Sort(straight)
		// percentile is rentals_bench_test.go's (nearest rank).
		for _, q := range []int{50, 90, 99} {
			b.ReportMetric(msOf(percentile(viaTunnel, q)), fmt.Sprintf("proxied-p%d-ms", q))
			b.ReportMetric(msOf(percentile(straight, q)), fmt.Sprintf("direct-p%d-ms", q))
		}
		b.ReportMetric(msOf(percentile(viaTunnel, 50)-percentile(straight, 50)), "added-p50-ms")
	})
}

// BenchmarkWorkspace100Concurrent is 100 browsers' requests at once:
// each op is 100 GETs of a tiny page through the marketplace, each from
// its own goroutine. It fails on any error (a status other than 200, a
// broken connection, a wrong body); it reports the errors (0), the p50
// and p99 of the requests' times and the requests per second.
func BenchmarkWorkspace100Concurrent(b *testing.B) {
	const concurrent = 100
	w, proxied, _ := latencyRig(b)
	b.Run("proxied", func(b *testing.B) {
		client := benchClient(w, concurrent)
		defer client.CloseIdleConnections()
		var (
			mu     sync.Mutex
			took   []time.Duration
			errs   []error // the first few
			failed int
		)
		began := time.Now()
		for b.Loop() {
			var wg sync.WaitGroup
			for range concurrent {
				wg.Go(func() {
					t0 := time.Now()
					_, err := fetch(client, proxied, "ok\n")
					d := time.Since(t0)
					mu.Lock()
					defer mu.Unlock()
					took = append(took, d)
					if err != nil {
						failed++
						if len(errs) < 5 {
							errs = append(errs, err)
						}
					}
				})
			}
			wg.Wait()
		}
		elapsed := time.Since(began)
		b.ReportMetric(float64(failed), "errors")
		if failed > 0 {
			var msgs []string
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			b.Fatalf("%d of %d concurrent proxied requests failed; the first: %s", failed, len(took), strings.Join(msgs, "; "))
		}
		slices.Sort(took)
		b.ReportMetric(msOf(percentile(took, 50)), "p50-ms")
		b.ReportMetric(msOf(percentile(took, 99)), "p99-ms")
		b.ReportMetric(float64(len(took))/elapsed.Seconds(), "req/s")
	})
}
