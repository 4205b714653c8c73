package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// hubChannel is the PostgreSQL notification channel of hub signals.
const hubChannel = "suanli_hub"

// HubRelay carries hub signals between the processes (web and worker
// replicas) on one PostgreSQL database with LISTEN/NOTIFY: a task that a
// worker queues wakes the agent's long-poll held by a web replica at once,
// and a result posted to a web replica wakes the worker's provisioning
// step. Without it (SQLite, or while its connection is down) waiters fall
// back to polling the database.
type HubRelay struct {
	hub  *Hub
	pool *pgxpool.Pool
	// self prefixes this process's notifications, which it ignores.
	self string
}

// RelayOverPostgres makes h's signals reach every process on pool's
// database and returns the relay; call Run to receive theirs.
func RelayOverPostgres(h *Hub, pool *pgxpool.Pool) *HubRelay {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	r := &HubRelay{hub: h, pool: pool, self: hex.EncodeToString(b) + "|"}
	send := r.send
	h.notify.Store(&send)
	return r
}

// send notifies the other processes of a signal, after the commit that
// caused it (NOTIFY outside a transaction). A failure only costs them a
// poll interval.
func (r *HubRelay) send(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := r.pool.Exec(ctx, "SELECT pg_notify($1, $2)", hubChannel, r.self+key); err != nil {
		slog.Warn("hub relay: notify failed; other replicas poll instead", "key", key, "err", err)
	}
}

// Run listens for the other processes' signals on a connection of its
// own (not one of the pool's) until ctx ends, reconnecting after errors.
func (r *HubRelay) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := r.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		slog.Warn("hub relay: listening failed; reconnecting in 1s (replicas poll meanwhile)", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (r *HubRelay) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, r.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+hubChannel); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if strings.HasPrefix(n.Payload, r.self) {
			continue
		}
		if _, key, ok := strings.Cut(n.Payload, "|"); ok {
			r.hub.wake(key)
		}
	}
}
