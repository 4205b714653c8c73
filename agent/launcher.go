package agent

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Launcher starts and stops renters' workloads on this host. A provider
// picks one: docker, a script of their own, or simulated.
type Launcher interface {
	// Name is what heartbeats report: "docker", "script" or "simulated".
	Name() string
	// Launch starts the workload on exactly spec's GPUs (none with
	// spec.NoGPU) and says how the renter reaches it.
	Launch(ctx context.Context, spec LaunchSpec) (*Access, error)
	// Stop stops the rental's workload and keeps its workspace. Stopping
	// a workload that is not running is not an error.
	Stop(ctx context.Context, spec StopSpec) error
	// DeleteVolume removes the workspace for good, and the rental's
	// workload first if it still runs. Deleting one that is not there is
	// not an error.
	DeleteVolume(ctx context.Context, spec VolumeSpec) error
}

// ImageLister is a Launcher that can say which container images the host
// has, for the heartbeat (the docker launcher).
type ImageLister interface {
	LocalImages(ctx context.Context) ([]LocalImage, error)
}

// SharedStorage is a Launcher that keeps workspaces under a path that
// every node of the datacentre mounts (--volume-root); heartbeats report
// it ("" means workspaces are on this node's disk).
type SharedStorage interface {
	SharedVolumeRoot() string
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
	// RegistryAuth is the X-Registry-Auth credential for pulling Image,
	// if it is private.
	RegistryAuth string
	// PullAlways pulls Image even when the host has it (see
	// Task.PullAlways).
	PullAlways bool
	// VolumeGB is the workspace's size, applied as a quota where the
	// storage allows (0: none).
	VolumeGB int
	// Limits are the workload's CPU, memory and shm limits (nil: none).
	Limits *Limits
	// NoGPU starts the workload without any GPU (无卡模式).
	NoGPU bool
	// Verify is the verifier's endpoint and credential for the
	// container (nil: none).
	Verify *Verify
	// Progress, when set, is told how a long step goes (an image pull).
	// It is called from the launching goroutine and must not block.
	Progress func(Progress)
}

// StopSpec is what a stop task names.
type StopSpec struct {
	RentalID    int64
	WorkspaceID string
	GPUUUIDs    []string
	// Grace is how long the workload has between its stop signal and
	// being killed (zero: it is removed at once).
	Grace time.Duration
}

// VolumeSpec names the workspace a delete_volume task removes, and the
// rental whose workload may still use it.
type VolumeSpec struct {
	RentalID    int64
	WorkspaceID string
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

// WorkspaceName is the workspace's id, or one derived from the rental
// for a task that names none.
func WorkspaceName(workspaceID string, rentalID int64) string {
	if workspaceID != "" {
		return workspaceID
	}
	return "r" + strconv.FormatInt(rentalID, 10)
}

// SSHCommand is the command line a renter pastes into a terminal.
func SSHCommand(user, host string, port int) string {
	return fmt.Sprintf("ssh -p %d %s@%s", port, user, host)
}

// SCPCommand is the command line that copies a local file into dest in
// the workload (scp's port flag is -P).
func SCPCommand(user, host string, port int, dest string) string {
	return fmt.Sprintf("scp -P %d FILE %s@%s:%s", port, user, host, dest)
}

// RsyncCommand is the command line that copies a local directory into
// the workload's /workspace over SSH (resumable, with progress).
func RsyncCommand(user, host string, port int) string {
	return fmt.Sprintf(`rsync -avP -e "ssh -p %d" ./DIR/ %s@%s:/workspace/DIR/`, port, user, host)
}
