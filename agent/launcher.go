package agent

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	// Env is the renter's environment for the workload; the agent has
	// checked it (CheckLaunchEnv) and taken out the names launchers set
	// themselves (ReservedEnvName).
	Env map[string]string
	// Onstart is the renter's script the workload runs each time it
	// starts ("" none).
	Onstart string
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

// MaxEnvBytes and MaxOnstartBytes bound a launch task's renter
// environment (names and values together) and on-start script. The server
// allows far less (32 KiB and 16 KiB); these only stop an absurd task
// before it reaches a launcher.
const (
	MaxEnvBytes     = 64 << 10
	MaxOnstartBytes = 64 << 10
)

// envName is a variable name every shell can export; a name with "=" or
// a NUL would corrupt the environment, and one a shell cannot name would
// reach no login shell.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckLaunchEnv says what is wrong with a renter's environment and
// on-start script, in words for the task's error: a name that is not a
// shell variable name, a value with a NUL byte (no process environment
// can hold one), or either beyond its bound.
func CheckLaunchEnv(env map[string]string, onstart string) error {
	if len(onstart) > MaxOnstartBytes {
		return fmt.Errorf("onstart is %d bytes, more than the %d this agent accepts", len(onstart), MaxOnstartBytes)
	}
	size := 0
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if !envName.MatchString(name) {
			return fmt.Errorf("env name %q is not a variable name (letters, digits and _, not starting with a digit)", name)
		}
		if strings.IndexByte(env[name], 0) >= 0 {
			return fmt.Errorf("env %s: the value holds a NUL byte", name)
		}
		size += len(name) + len(env[name])
	}
	if size > MaxEnvBytes {
		return fmt.Errorf("env is %d bytes, more than the %d this agent accepts", size, MaxEnvBytes)
	}
	return nil
}

// renterNVIDIAEnv are the NVIDIA_* variables a renter may set: they only
// narrow what the NVIDIA container runtime does (which driver libraries
// it mounts, which CUDA version the image needs, or skipping that
// check). Every other NVIDIA_* name is the launcher's: the runtime picks
// a container's GPUs, MIG and IMEX devices from them
// (NVIDIA_VISIBLE_DEVICES, NVIDIA_MIG_*, NVIDIA_IMEX_CHANNELS), and its
// feature switches (NVIDIA_NVSWITCH, NVIDIA_MOFED, NVIDIA_GDS,
// NVIDIA_GDRCOPY) set to "enabled" override the host's configuration and
// hand the container the host's NVSwitch and InfiniBand devices, which
// every tenant shares. Names the runtime may read in a later version are
// reserved too, hence a list of what is allowed rather than of what is
// not.
var renterNVIDIAEnv = []string{"NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_DISABLE_REQUIRE"}

// ReservedEnvName reports whether a renter may not set name: the
// launchers' own SUANLI_* variables (the verifier's endpoint and token,
// a script launcher's task) and every NVIDIA_* variable but those of
// renterNVIDIAEnv and NVIDIA_REQUIRE_*. The server refuses all NVIDIA_*
// already (launch.Spec.Check); the agent checks again as the last line
// of defence.
func ReservedEnvName(name string) bool {
	switch {
	case strings.HasPrefix(name, "SUANLI_"):
		return true
	case strings.HasPrefix(name, "NVIDIA_"):
		return !slices.Contains(renterNVIDIAEnv, name) && !strings.HasPrefix(name, "NVIDIA_REQUIRE_")
	}
	return false
}

// RenterEnv splits a renter's environment into what a launcher passes
// on, as sorted NAME=value pairs, and the reserved names it skips
// (sorted), which the caller logs.
func RenterEnv(env map[string]string) (vars, skipped []string) {
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if ReservedEnvName(name) {
			skipped = append(skipped, name)
			continue
		}
		vars = append(vars, name+"="+env[name])
	}
	return vars, skipped
}
