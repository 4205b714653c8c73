// Package workload is the agent's side of the browser's access to the
// containers it runs: what a launcher must offer (Workloads) and the HTTP
// handler that serves the streams the server opens through the agent's
// tunnel (Handler).
package workload

import (
	"context"
	"io"
	"net"
	"os"
	"time"
)

// Workloads is a Launcher whose running workloads the marketplace can
// reach through the agent's tunnel (the docker launcher): their HTTP
// ports, Jupyter, a terminal, their output and their workspace files.
// A rental that has no running workload on this host is an error
// wrapping os.ErrNotExist.
type Workloads interface {
	// DialWorkload connects to port of the rental's container (on an
	// address only this host reaches).
	DialWorkload(ctx context.Context, rentalID int64, port int) (net.Conn, error)
	// JupyterToken is the token of the Jupyter the launcher started in
	// the rental's container; it never leaves this host.
	JupyterToken(ctx context.Context, rentalID int64) (string, error)
	// Terminal starts a login shell with a TTY of size in the rental's
	// container, in /workspace.
	Terminal(ctx context.Context, rentalID int64, size TermSize) (Terminal, error)
	// Logs is the container's output (stdout and stderr), each line
	// prefixed with its RFC 3339 timestamp and a space.
	Logs(ctx context.Context, rentalID int64, opts LogOptions) (io.ReadCloser, error)
	// Workspace opens the rental's /workspace on this host, confined to
	// it (a symbolic link in it cannot reach outside).
	Workspace(ctx context.Context, rentalID int64) (*os.Root, error)
}

// TermSize is a terminal's size in characters.
type TermSize struct {
	Cols uint `json:"cols"`
	Rows uint `json:"rows"`
}

// Terminal is a shell running with a TTY: what is written to it is
// typed, what is read from it is the screen's output.
type Terminal interface {
	io.ReadWriteCloser
	// Resize tells the TTY its new size.
	Resize(ctx context.Context, size TermSize) error
}

// LogOptions select a container's output.
type LogOptions struct {
	// Tail is the number of last lines to start with (0: all).
	Tail int
	// Since starts after this time (zero: from the start, or Tail).
	Since time.Time
	// Follow keeps the reader open for new output until ctx ends or the
	// container stops.
	Follow bool
}
