package fleet

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/yamux"

	"suanli/models"
	"suanli/models/supply"
	"suanli/tunnel"
)

// Tunnels knows where each node agent's tunnel is. A process holds the
// tunnels its agents opened to it (Local); with several web replicas on
// one PostgreSQL database, each records in the database which replica
// holds a node's tunnel (under its own Self URL), so that a replica that
// gets a renter's request for that node passes it on to the holder.
type Tunnels struct {
	DB    *models.DB
	Local *tunnel.Registry
	// Self is this replica's URL as the other replicas reach it
	// (--advertise-url); empty in a single process, which records
	// nothing.
	Self string
}

// NewTunnels returns the tunnels of a process reachable at self.
func NewTunnels(db *models.DB, self string) *Tunnels {
	return &Tunnels{DB: db, Local: tunnel.NewRegistry(), Self: self}
}

// Serve holds an agent's tunnel for node until it closes or ctx ends,
// recording this replica as its holder meanwhile.
func (t *Tunnels) Serve(ctx context.Context, node int64, s *yamux.Session) {
	var since time.Time
	t.Local.Serve(ctx, node, s, func(connected bool) {
		if t.Self == "" {
			return
		}
		// The record must outlive the request that carried the tunnel.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		var err error
		if connected {
			since = t.DB.Now()
			err = supply.SetTunnelHolder(rctx, t.DB, node, t.Self, since)
		} else {
			err = supply.ClearTunnelHolder(rctx, t.DB, node, t.Self, since)
		}
		if err != nil {
			// A stale or missing record costs requests a 502 until the
			// agent connects again; it is not worth more.
			slog.Warn("tunnel: recording where a node's tunnel is", "node_id", node, "connected", connected, "err", err)
		}
	})
}

// Route says where node's tunnel is: here (local), at another replica
// (its URL), or nowhere known ("" and false).
func (t *Tunnels) Route(ctx context.Context, node int64) (local bool, replica string, err error) {
	if t.Local.Connected(node) {
		return true, "", nil
	}
	if t.Self == "" {
		return false, "", nil
	}
	url, found, err := supply.TunnelHolderOf(ctx, t.DB, node)
	if err != nil || !found || url == t.Self {
		// A record naming this replica without a tunnel here is stale:
		// this replica lost it and the agent has not dialled again yet.
		return false, "", err
	}
	return false, url, nil
}

// Dial opens a stream to node's agent through its tunnel to this process.
func (t *Tunnels) Dial(ctx context.Context, node int64) (net.Conn, error) {
	return t.Local.Dial(ctx, node)
}

// Forget clears what this replica recorded before it last stopped (its
// tunnels ended with it), at start.
func (t *Tunnels) Forget(ctx context.Context) error {
	if t.Self == "" {
		return nil
	}
	return supply.ClearTunnelHoldersOf(ctx, t.DB, t.Self)
}
