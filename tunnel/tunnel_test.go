package tunnel_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"suanli/tunnel"
)

// server is the marketplace's end of tunnels for a test: it accepts an
// agent's tunnel (node 7 for the token "node-7", refused otherwise) and
// holds it in a registry.
type server struct {
	reg *tunnel.Registry
	srv *httptest.Server
	mu  sync.Mutex
	// changes records the registry's onChange calls.
	changes []bool
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{reg: tunnel.NewRegistry()}
	mux := http.NewServeMux()
	mux.HandleFunc(tunnel.PathAgent, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer node-7" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		sess, err := tunnel.Accept(r.Context(), w, r)
		if err != nil {
			return
		}
		s.reg.Serve(r.Context(), 7, sess, func(connected bool) {
			s.mu.Lock()
			s.changes = append(s.changes, connected)
			s.mu.Unlock()
		})
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.reg.Close()
		s.srv.Close()
	})
	return s
}

// agentEnd dials the tunnel and serves HTTP on it (each answer names
// which, so that a test tells two agent connections apart) until ctx
// ends or the connection drops; done is closed then.
func agentEnd(t *testing.T, ctx context.Context, s *server, name string) (done chan struct{}) {
	t.Helper()
	sess, err := tunnel.Dial(ctx, http.DefaultClient, s.srv.URL, "node-7")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	done = make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", name, r.Method, r.URL.Path)
	})}
	go func() {
		defer close(done)
		_ = srv.Serve(sess)
	}()
	go func() {
		<-ctx.Done()
		_ = sess.Close()
	}()
	return done
}

// get sends a GET through node 7's tunnel.
func get(t *testing.T, reg *tunnel.Registry, path string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := reg.Dial(ctx, 7)
	if err != nil {
		return "", err
	}
	defer c.Close()
	req, _ := http.NewRequest("GET", "http://agent"+path, nil)
	if err := req.Write(c); err != nil {
		return "", err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

// eventually waits until cond holds, looking every 5 ms, and fails with
// what once 10 s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("not within 10 s: %s", what)
		case <-tick.C:
		}
	}
}

// waitConnected waits until node 7's tunnel is (or is not) held.
func waitConnected(t *testing.T, reg *tunnel.Registry, want bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("node 7 connected = %v", want), func() bool { return reg.Connected(7) == want })
}

// An agent's tunnel carries the server's requests; many at once each get
// their own stream; a node without a tunnel is ErrNotConnected.
func TestTunnelCarriesRequests(t *testing.T) {
	s := newServer(t)
	if _, err := get(t, s.reg, "/x"); !errors.Is(err, tunnel.ErrNotConnected) {
		t.Fatalf("before any agent: %v, want ErrNotConnected", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := agentEnd(t, ctx, s, "a")
	waitConnected(t, s.reg, true)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			body, err := get(t, s.reg, fmt.Sprintf("/r/%d", i))
			if err == nil && body != fmt.Sprintf("a GET /r/%d", i) {
				err = fmt.Errorf("request %d answered %q", i, body)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cancel()
	<-done
	waitConnected(t, s.reg, false)
	if _, err := get(t, s.reg, "/x"); !errors.Is(err, tunnel.ErrNotConnected) {
		t.Fatalf("after the agent went: %v, want ErrNotConnected", err)
	}
	// Told after the tunnel is forgotten (Connected says so first).
	eventually(t, "onChange calls [true false]", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Sprint(s.changes) == "[true false]"
	})
}

// An agent that dials again replaces its older tunnel, which is closed:
// the requests go to the newest.
func TestTunnelReconnectReplacesTheOldOne(t *testing.T) {
	s := newServer(t)
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	done1 := agentEnd(t, ctx1, s, "first")
	waitConnected(t, s.reg, true)
	if body, err := get(t, s.reg, "/"); err != nil || !strings.HasPrefix(body, "first ") {
		t.Fatalf("first tunnel: %q %v", body, err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	agentEnd(t, ctx2, s, "second")
	select {
	case <-done1:
	case <-time.After(10 * time.Second):
		t.Fatal("the older tunnel was not closed when the agent dialled again")
	}
	waitConnected(t, s.reg, true)
	if body, err := get(t, s.reg, "/"); err != nil || !strings.HasPrefix(body, "second ") {
		t.Fatalf("after the reconnect: %q %v", body, err)
	}
}

// A refused credential is a RefusedError with the server's status.
func TestTunnelRefused(t *testing.T) {
	s := newServer(t)
	_, err := tunnel.Dial(context.Background(), http.DefaultClient, s.srv.URL, "node-8")
	var re *tunnel.RefusedError
	if !errors.As(err, &re) || re.Code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %v, want a RefusedError 401", err)
	}
	if _, err := tunnel.Dial(context.Background(), http.DefaultClient, "ftp://example", "x"); err == nil {
		t.Fatal("an ftp server URL was dialled")
	}
}

// Streams are the server's to open: one the agent opens is closed by the
// server at once, and the tunnel goes on carrying the server's requests.
func TestTunnelAgentStreamsAreClosed(t *testing.T) {
	s := newServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess, err := tunnel.Dial(ctx, http.DefaultClient, s.srv.URL, "node-7")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })}
	go func() { _ = srv.Serve(sess) }()
	waitConnected(t, s.reg, true)
	for i := range 20 {
		st, err := sess.Open()
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		_ = st.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := st.Write([]byte("hello")); err == nil {
			buf := make([]byte, 1)
			_, err := st.Read(buf)
			switch {
			case err == nil:
				t.Fatalf("stream %d: the server read and answered an agent's stream", i)
			case isTimeout(err):
				// Left open: the agent's stream would wait there.
				t.Fatalf("stream %d: the server did not close the agent's stream", i)
			}
		}
		_ = st.Close()
	}
	if body, err := get(t, s.reg, "/after"); err != nil || body != "ok" {
		t.Fatalf("the server's request after the agent's streams: %q %v", body, err)
	}
}

// A workspace path stays in the workspace, whatever the renter typed.
func TestWorkspacePath(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "/": "", "/workspace": "", "/workspace/": "", "data/x": "data/x", "/workspace/data/x": "data/x",
		"../../etc/passwd": "etc/passwd", "/workspace/../etc": "etc", "a/./b/../c": "a/c", " notes.txt ": "notes.txt",
		"/workspace2/x": "workspace2/x", "/etc/passwd": "etc/passwd",
	} {
		if got, ok := tunnel.WorkspacePath(in); !ok || got != want {
			t.Errorf("WorkspacePath(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"a\x00b", "a\\b", "\xff"} {
		if _, ok := tunnel.WorkspacePath(bad); ok {
			t.Errorf("WorkspacePath(%q) accepted", bad)
		}
	}
}

// isTimeout reports whether err is a read that ran into its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
