package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// PathPing is the path of the latency endpoint, on an agent's ping
// listener and on the marketplace itself (for the in-process demo agents).
const PathPing = "/ping"

// maxPingConns bounds the ping listener's open connections: the endpoint
// is unauthenticated and has no rate limit, so its cost must be bounded
// another way.
const maxPingConns = 256

// PingHandler answers GET and HEAD /ping with 204 and nothing else, for
// browsers that measure their round-trip time to the node: any origin may
// read it (CORS and resource timing), and nothing may cache it. Other
// paths are 404, other methods 405.
func PingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != PathPing {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Timing-Allow-Origin", "*")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	})
}

// ServePing serves PingHandler on ln until ctx ends, then closes the
// listener and its connections. Slow or idle clients are cut off by short
// timeouts, and at most maxPingConns connections are open at once.
func ServePing(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           PingHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       5 * time.Second,
		WriteTimeout:      5 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(limitListener(ln, maxPingConns)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// DefaultPingURL is the URL reported when none is configured:
// http://HOST:PORT/ping, PORT being the one ln listens on.
func DefaultPingURL(host string, ln net.Listener) string {
	port := 0
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + PathPing
}

// limitListener accepts at most n connections at a time; further ones wait
// in the kernel's backlog until one closes (or the listener does).
func limitListener(ln net.Listener, n int) net.Listener {
	return &limitedListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitedListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
