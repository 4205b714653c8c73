package tunnel

import (
	"context"
	"net"
	"sync"

	"github.com/hashicorp/yamux"
)

// Registry is a server process's tunnels: at most one live session per
// node. A node whose agent reconnects replaces its old session, which is
// closed (its streams end); a process holds only the tunnels its agents
// opened to it (see fleet.Tunnels for reaching one held elsewhere).
type Registry struct {
	mu       sync.Mutex
	sessions map[int64]*yamux.Session
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{sessions: map[int64]*yamux.Session{}} }

// Serve holds s as node's tunnel until it closes or ctx ends, then
// forgets it (unless a newer one replaced it) and closes it. onChange,
// if not nil, is called after s became the node's tunnel and again once
// it is gone, so that a caller can record where the tunnel is.
func (r *Registry) Serve(ctx context.Context, node int64, s *yamux.Session, onChange func(connected bool)) {
	r.mu.Lock()
	old := r.sessions[node]
	r.sessions[node] = s
	r.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	if onChange != nil {
		onChange(true)
	}
	select {
	case <-s.CloseChan():
	case <-ctx.Done():
	}
	_ = s.Close()
	r.mu.Lock()
	current := r.sessions[node] == s
	if current {
		delete(r.sessions, node)
	}
	r.mu.Unlock()
	if current && onChange != nil {
		onChange(false)
	}
}

// Dial opens a stream to node's agent: ErrNotConnected if the node has
// no tunnel here.
func (r *Registry) Dial(ctx context.Context, node int64) (net.Conn, error) {
	r.mu.Lock()
	s := r.sessions[node]
	r.mu.Unlock()
	if s == nil || s.IsClosed() {
		return nil, ErrNotConnected
	}
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := s.Open()
		done <- result{c, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, ErrNotConnected
		}
		return res.c, nil
	case <-ctx.Done():
		// The stream, if it opens after all, is closed unused.
		go func() {
			if res := <-done; res.c != nil {
				_ = res.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Connected reports whether node has a live tunnel to this process.
func (r *Registry) Connected(node int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[node]
	return s != nil && !s.IsClosed()
}

// Close closes every tunnel (at shutdown: the agents dial again, to
// another replica or to this one once it is back).
func (r *Registry) Close() {
	r.mu.Lock()
	all := make([]*yamux.Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		all = append(all, s)
	}
	r.mu.Unlock()
	for _, s := range all {
		_ = s.Close()
	}
}
