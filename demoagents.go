package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"suanli/agent"
	"suanli/gpu"
	"suanli/models"
	"suanli/models/demodata"
	"suanli/rentals"
)

// startDemoAgents runs one simulated node agent per demo node, in this
// process but speaking the same HTTP protocol to the server as a remote
// agent: go-nvml's mock servers with the node's seeded GPU UUIDs, and a
// launcher that starts nothing. Everything they report is marked
// simulated. A removed demo node stays removed: it gets no agent and no
// credential.
func startDemoAgents(ctx context.Context, wg *sync.WaitGroup, db *models.DB, rentals *rentals.Service, server string) (int, error) {
	nodes, err := demodata.DemoNodesToRun(ctx, db)
	if err != nil {
		return 0, err
	}
	client := &http.Client{Timeout: 60 * time.Second}
	// The simulated hosts are this process, so a browser's round trip to
	// them is its round trip to this server: they report the server's own
	// ping endpoint, and pages say that the figure is measured to it.
	pingURL := ""
	if rentals.BaseURL != "" {
		pingURL = strings.TrimRight(rentals.BaseURL, "/") + agent.PathPing
	}
	for _, n := range nodes {
		uuids, err := demodata.GPUUUIDsOfNode(ctx, db, n.ID)
		if err != nil {
			return 0, err
		}
		sim, err := simulated(n.GPUModel, len(uuids), uuids)
		if err != nil {
			return 0, fmt.Errorf("node %s: %w", n.Name, err)
		}
		reader, err := gpu.Open(sim, gpu.Options{})
		if err != nil {
			return 0, fmt.Errorf("node %s: %w", n.Name, err)
		}
		cred, err := rentals.Fleet().IssueCredential(ctx, n.ID)
		if err != nil {
			reader.Close()
			return 0, err
		}
		a, err := agent.New(agent.Config{Server: server, Token: cred, HTTPClient: client, GPUs: reader,
			Launcher: &agent.SimulatedLauncher{Host: n.Name + ".sim.invalid"}, Silent: sim.Silent, Version: version + "-demo", PingURL: pingURL,
			Logger: slog.New(routineAtDebug{slog.Default().Handler()}).With("node", n.Name)})
		if err != nil {
			reader.Close()
			return 0, err
		}
		wg.Go(func() {
			defer reader.Close()
			if err := a.Run(ctx); err != nil {
				slog.Error("demo agent stopped", "node", n.Name, "err", err)
			}
		})
	}
	return len(nodes), nil
}

// routineAtDebug logs a demo agent's info lines at debug: dozens of
// simulated nodes each saying "agent starting", "task started", "task
// done" is routine traffic that buries what a demo's reader looks for.
// Warnings and errors keep their level.
type routineAtDebug struct{ slog.Handler }

func demoted(l slog.Level) slog.Level {
	if l > slog.LevelDebug && l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

// Enabled reports whether the line, at its demoted level, is logged.
func (h routineAtDebug) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demoted(l))
}

// Handle logs the record at its demoted level.
func (h routineAtDebug) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demoted(r.Level)
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the demotion on a logger with attributes.
func (h routineAtDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return routineAtDebug{h.Handler.WithAttrs(as)}
}

// WithGroup keeps the demotion on a logger with a group.
func (h routineAtDebug) WithGroup(name string) slog.Handler {
	return routineAtDebug{h.Handler.WithGroup(name)}
}
