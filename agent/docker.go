package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// DefaultDockerImage is the image a rental gets when neither the task nor
// the provider names one. An image used with DockerLauncher must run sshd
// on port 22 and authorise the key in $SSH_PUBLIC_KEY.
const DefaultDockerImage = "nvidia/cuda:12.4.1-runtime-ubuntu22.04"

// DockerLauncher runs each rental as a docker container with its GPUs
// (NVIDIA Container Toolkit), its SSH port published on the host, and its
// workspace in a named volume that outlives the container.
type DockerLauncher struct {
	// Image is the provider's default image (DefaultDockerImage if empty).
	Image string
	// Host is the public host name or IP renters connect to.
	Host string
	// PortBase is the first SSH port (DefaultPortBase if zero); see SSHPort.
	PortBase int
	// Runner runs a command and returns its combined output; it defaults
	// to os/exec. Tests replace it.
	Runner func(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Name implements Launcher.
func (DockerLauncher) Name() string { return "docker" }

// ContainerName is the container that runs a rental.
func ContainerName(rentalID int64) string {
	return "suanli-r" + strconv.FormatInt(rentalID, 10)
}

// VolumeName is the docker volume that holds a workspace.
func VolumeName(spec LaunchSpec) string {
	ws := spec.WorkspaceID
	if ws == "" {
		ws = "r" + strconv.FormatInt(spec.RentalID, 10)
	}
	return "suanli-ws-" + ws
}

// DockerRunArgs is the argv after "docker" that launches spec, for
// exec (no shell is involved, so nothing is shell-quoted).
//
// The --gpus value is one argv element with double quotes inside it:
// `"device=UUID1,UUID2"`. docker's CLI reads --gpus as one CSV record
// (docker/cli opts/gpus.go: GpuOpts.Set uses encoding/csv), so without
// the quotes the comma would split it into "device=UUID1" and "UUID2",
// and "UUID2" fails as a count. The quotes a shell user types around the
// whole flag value are not enough there; the inner ones must reach docker.
func DockerRunArgs(spec LaunchSpec, image string, port int) []string {
	args := []string{
		"run", "-d",
		"--name", ContainerName(spec.RentalID),
		"--gpus", `"device=` + strings.Join(spec.GPUUUIDs, ",") + `"`,
		"-p", strconv.Itoa(port) + ":22",
	}
	if spec.SSHPublicKey != "" {
		args = append(args, "-e", "SSH_PUBLIC_KEY="+spec.SSHPublicKey)
	}
	return append(args,
		"-v", VolumeName(spec)+":/workspace",
		"--restart", "unless-stopped",
		image,
	)
}

// dockerName is what docker accepts in container and volume names.
var dockerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Launch implements Launcher.
func (d DockerLauncher) Launch(ctx context.Context, spec LaunchSpec) (*Access, error) {
	if d.Host == "" {
		return nil, errors.New("docker launcher: Host (the address renters connect to) is not set")
	}
	if len(spec.GPUUUIDs) == 0 {
		return nil, errors.New("docker launcher: no GPUs to launch on")
	}
	for _, u := range spec.GPUUUIDs {
		if !dockerName.MatchString(u) {
			return nil, fmt.Errorf("docker launcher: GPU UUID %q is not usable in --gpus", u)
		}
	}
	if spec.WorkspaceID != "" && !dockerName.MatchString(spec.WorkspaceID) {
		return nil, fmt.Errorf("docker launcher: workspace id %q is not a valid volume name", spec.WorkspaceID)
	}
	image := cmp.Or(spec.Image, d.Image, DefaultDockerImage)
	port := SSHPort(cmp.Or(d.PortBase, DefaultPortBase), spec.RentalID)
	name := ContainerName(spec.RentalID)

	// A container left from an earlier launch of this rental (one that
	// failed half way, or one from before the node restarted) would make
	// docker run fail on the name. The workspace is in the volume, so
	// removing the container loses nothing.
	_, _ = d.run(ctx, "docker", "rm", "-f", name)
	if out, err := d.run(ctx, "docker", DockerRunArgs(spec, image, port)...); err != nil {
		return nil, fmt.Errorf("docker run %s: %w: %s", name, err, tail(out))
	}
	return &Access{Host: d.Host, Port: port, User: "root", Command: sshCommand("root", d.Host, port)}, nil
}

// Stop implements Launcher. The workspace volume is kept.
func (d DockerLauncher) Stop(ctx context.Context, spec StopSpec) error {
	name := ContainerName(spec.RentalID)
	out, err := d.run(ctx, "docker", "rm", "-f", name)
	if err != nil && !strings.Contains(string(out), "No such container") {
		return fmt.Errorf("docker rm %s: %w: %s", name, err, tail(out))
	}
	return nil
}

func (d DockerLauncher) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if d.Runner != nil {
		return d.Runner(ctx, name, args...)
	}
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// tailBytes is how much of a command's output goes into an error.
const tailBytes = 2048

// tail is the end of a command's output, where the reason it failed is.
func tail(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > tailBytes {
		s = "…" + s[len(s)-tailBytes:]
	}
	return s
}
