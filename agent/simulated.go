package agent

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// SimulatedLauncher starts nothing: it hands out access details marked
// Simulated and remembers which rentals it "runs". It serves the demo's
// in-process agents and tests. A launch's environment and on-start script
// are only recorded (Launched): nothing runs them, and nothing says they
// ran.
type SimulatedLauncher struct {
	// Host goes into the access details ("localhost" if empty).
	Host string

	mu      sync.Mutex
	running map[int64]LaunchSpec
	deleted []string
}

// Name implements Launcher.
func (*SimulatedLauncher) Name() string { return "simulated" }

// Launch implements Launcher.
func (l *SimulatedLauncher) Launch(_ context.Context, spec LaunchSpec) (*Access, error) {
	host := l.Host
	if host == "" {
		host = "localhost"
	}
	port := SSHPort(DefaultPortBase, spec.RentalID)
	spec.GPUUUIDs = slices.Clone(spec.GPUUUIDs)
	spec.Env = maps.Clone(spec.Env)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running == nil {
		l.running = map[int64]LaunchSpec{}
	}
	l.running[spec.RentalID] = spec
	return &Access{Host: host, Port: port, User: "root", Command: SSHCommand("root", host, port), Simulated: true}, nil
}

// Stop implements Launcher.
func (l *SimulatedLauncher) Stop(_ context.Context, spec StopSpec) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.running, spec.RentalID)
	return nil
}

// DeleteVolume implements Launcher: it stops the rental and remembers
// that its workspace was deleted.
func (l *SimulatedLauncher) DeleteVolume(_ context.Context, spec VolumeSpec) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if spec.RentalID != 0 {
		delete(l.running, spec.RentalID)
	}
	l.deleted = append(l.deleted, WorkspaceName(spec.WorkspaceID, spec.RentalID))
	return nil
}

// DeletedVolumes returns the workspaces deleted so far, in the order of
// their deletion.
func (l *SimulatedLauncher) DeletedVolumes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.deleted)
}

// Running returns the ids of the rentals launched and not stopped, in
// ascending order.
func (l *SimulatedLauncher) Running() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int64, 0, len(l.running))
	for id := range l.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Launched returns what the running rental was launched with (its
// environment and on-start script, recorded, never run), and false when
// it is not running.
func (l *SimulatedLauncher) Launched(rentalID int64) (LaunchSpec, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	spec, ok := l.running[rentalID]
	spec.GPUUUIDs = slices.Clone(spec.GPUUUIDs)
	spec.Env = maps.Clone(spec.Env)
	return spec, ok
}
