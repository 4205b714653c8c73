package platform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// NotifyRelay carries short messages between the processes (web and
// worker replicas) on one PostgreSQL database with LISTEN/NOTIFY on one
// channel. Each process ignores the messages it sent itself. Delivery is
// best effort: a message sent while a listener's connection is down is
// lost, so what rides on it must also be found by polling.
type NotifyRelay struct {
	pool    *pgxpool.Pool
	channel string
	// self prefixes this process's notifications ("<hex>|"), which it
	// ignores; the payload follows the "|".
	self string
}

// NewNotifyRelay returns a relay on the channel (a plain SQL identifier,
// given by code, never by users) of pool's database.
func NewNotifyRelay(pool *pgxpool.Pool, channel string) *NotifyRelay {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &NotifyRelay{pool: pool, channel: channel, self: hex.EncodeToString(b) + "|"}
}

// Send notifies the other processes of payload, at once (NOTIFY outside a
// transaction: callers send after the commit that caused it). A failure is
// logged; it only costs the others a poll interval.
func (r *NotifyRelay) Send(payload string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := r.pool.Exec(ctx, "SELECT pg_notify($1, $2)", r.channel, r.self+payload); err != nil {
		slog.Warn("notify relay: notify failed; other replicas poll instead", "channel", r.channel, "payload", payload, "err", err)
	}
}

// Run hands every other process's payload to receive, listening on a
// connection of its own (a pool's connections are shared and reset) until
// ctx ends, and reconnecting a second after errors.
func (r *NotifyRelay) Run(ctx context.Context, receive func(payload string)) {
	for ctx.Err() == nil {
		err := r.listen(ctx, receive)
		if ctx.Err() != nil {
			return
		}
		slog.Warn("notify relay: listening failed; reconnecting in 1s (replicas poll meanwhile)", "channel", r.channel, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (r *NotifyRelay) listen(ctx context.Context, receive func(payload string)) error {
	conn, err := pgx.ConnectConfig(ctx, r.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{r.channel}.Sanitize()); err != nil {
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
		if _, payload, ok := strings.Cut(n.Payload, "|"); ok {
			receive(payload)
		}
	}
}
