package agent

import (
	"context"
	"fmt"
)

// Launcher starts and stops renters' workloads on this host. A provider
// picks one: docker, a script of their own, or simulated.
type Launcher interface {
	// Name is what heartbeats report: "docker", "script" or "simulated".
	Name() string
	// Launch starts the workload on exactly spec's GPUs and says how the
	// renter reaches it.
	Launch(ctx context.Context, spec LaunchSpec) (*Access, error)
	// Stop stops the rental's workload and keeps its workspace. Stopping
	// a workload that is not running is not an error.
	Stop(ctx context.Context, spec StopSpec) error
}

// LaunchSpec is what a launch task asks for.
type LaunchSpec struct {
	RentalID int64
	// WorkspaceID stays the same when a rental moves to another node, so
	// the workload finds its files again there.
	WorkspaceID  string
	GPUUUIDs     []string
	SSHPublicKey string
	// Image is the container image; empty means the launcher's default.
	Image string
}

// StopSpec is what a stop task names.
type StopSpec struct {
	RentalID    int64
	WorkspaceID string
	GPUUUIDs    []string
}

// DefaultPortBase is the first SSH port handed to rentals.
const DefaultPortBase = 22000

// SSHPort is the host port that rental's SSH is published on: base plus
// the rental id modulo 10000. It is derived, not allocated, so that a
// restarted agent, a repeated launch and the stop all agree on it without
// any state. Two live rentals on one host whose ids differ by a multiple
// of 10000 would collide; the second launch then fails and the server
// places that rental on another node.
func SSHPort(base int, rentalID int64) int {
	return base + int((rentalID%10000+10000)%10000)
}

// sshCommand is the command line a renter pastes into a terminal.
func sshCommand(user, host string, port int) string {
	return fmt.Sprintf("ssh -p %d %s@%s", port, user, host)
}
