package fleet

import (
	"context"
	"sync"
	"sync/atomic"
)

// Hub wakes goroutines of this process that wait for something in the
// database: an agent's long-poll for a new task, a provisioning step for a
// task's result. It is only a shortcut: waiters also poll the database, so
// a signal from another replica arrives within the poll interval, or at
// once where a HubRelay carries signals between processes.
type Hub struct {
	mu     sync.Mutex
	ch     map[string]chan struct{}
	closed chan struct{}
	once   sync.Once
	// notify, once set by RelayOverPostgres, sends every signal to the
	// other processes too.
	notify atomic.Pointer[func(key string)]
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{ch: map[string]chan struct{}{}, closed: make(chan struct{})} }

// Close ends every long wait (agents' long-polls) at once: the HTTP
// server's graceful shutdown would otherwise wait for each poll to time out.
func (h *Hub) Close() { h.once.Do(func() { close(h.closed) }) }

// Closed is closed once Close was called.
func (h *Hub) Closed() <-chan struct{} { return h.closed }

// Wait returns a channel closed at the next Signal of key.
func (h *Hub) Wait(key string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.ch[key]
	if !ok {
		c = make(chan struct{})
		h.ch[key] = c
	}
	return c
}

// Signal wakes every waiter of key, in this process and, with a relay,
// in every other process on the database.
func (h *Hub) Signal(key string) {
	h.wake(key)
	if n := h.notify.Load(); n != nil {
		(*n)(key)
	}
}

// wake wakes this process's waiters of key.
func (h *Hub) wake(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.ch[key]; ok {
		close(c)
		delete(h.ch, key)
	}
}

// HubChannel is the PostgreSQL notification channel of hub signals.
const HubChannel = "suanli_hub"

// Notifier carries short messages between the processes on one
// database: platform.NotifyRelay, over PostgreSQL's LISTEN/NOTIFY on
// HubChannel.
type Notifier interface {
	// Send passes payload to the other processes, best effort.
	Send(payload string)
	// Run hands the other processes' payloads to receive until ctx ends.
	Run(ctx context.Context, receive func(payload string))
}

// HubRelay carries hub signals between the processes (web and worker
// replicas) on one PostgreSQL database: a task that a worker queues wakes
// the agent's long-poll held by a web replica at once, and a result posted
// to a web replica wakes the worker's provisioning step. Without it
// (SQLite, or while its connection is down) waiters fall back to polling
// the database.
type HubRelay struct {
	hub *Hub
	n   Notifier
}

// RelayOverPostgres makes h's signals reach every process through n (a
// platform.NotifyRelay on HubChannel) and returns the relay; call Run to
// receive theirs.
func RelayOverPostgres(h *Hub, n Notifier) *HubRelay {
	r := &HubRelay{hub: h, n: n}
	// The key is sent after the commit that caused the signal; a failure
	// only costs the other processes a poll interval.
	send := n.Send
	h.notify.Store(&send)
	return r
}

// Run wakes this process's waiters on the other processes' signals until
// ctx ends.
func (r *HubRelay) Run(ctx context.Context) { r.n.Run(ctx, r.hub.wake) }
