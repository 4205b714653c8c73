package market

import "sync"

// Hub wakes goroutines of this process that wait for something in the
// database: an agent's long-poll for a new task, a provisioning step for a
// task's result. It is only a shortcut: waiters also poll the database, so
// a signal from another replica arrives within the poll interval.
type Hub struct {
	mu     sync.Mutex
	ch     map[string]chan struct{}
	closed chan struct{}
	once   sync.Once
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

// Signal wakes every waiter of key.
func (h *Hub) Signal(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.ch[key]; ok {
		close(c)
		delete(h.ch, key)
	}
}
