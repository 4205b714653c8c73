package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ScriptLauncher hands launching and stopping to the provider's own
// executable, for hosts that run workloads some other way (Slurm, VMs,
// Kubernetes). The script gets everything in its environment:
//
//	SUANLI_ACTION          launch, stop or delete_volume
//	SUANLI_RENTAL_ID       the rental id
//	SUANLI_WORKSPACE_ID    the workspace to mount (kept across moves)
//	SUANLI_GPU_UUIDS       the GPUs, comma-separated (none with SUANLI_NO_GPU)
//	SUANLI_SSH_PUBLIC_KEY  the renter's key (launch)
//	SUANLI_IMAGE           the image asked for, if any (launch)
//	SUANLI_REGISTRY_AUTH   the X-Registry-Auth credential for a private image, if any (launch)
//	SUANLI_VOLUME_GB       the workspace's size in GB, 0 if not given (launch)
//	SUANLI_CPUS, SUANLI_MEMORY_MIB, SUANLI_SHM_MIB
//	                       the workload's limits, 0 if none (launch)
//	SUANLI_NO_GPU          1 to start without any GPU (无卡模式), else 0 (launch)
//	SUANLI_PULL_ALWAYS     1 to pull the image even if the host has it (its copy
//	                       came with another renter's credentials), else 0 (launch)
//	SUANLI_ENV_FILE        a file with the renter's environment, "" if none (launch)
//	SUANLI_ENV_NAMES       the names in it, comma-separated (launch)
//	SUANLI_ONSTART_FILE    a file with the renter's on-start script, "" if none (launch)
//
// The renter's environment and script may hold secrets (tokens) and any
// bytes (quotes, $, newlines), so they are not in the script's own
// environment, which every program it starts inherits, but in two files
// only the agent's user may read (0600, in a 0700 directory), deleted
// once the script exits: a script that needs them later copies them.
// SUANLI_ENV_FILE is a shell file, one "export NAME='value'" per
// variable, sorted by name, each value in single quotes (a quote within
// one closes them, is escaped with a backslash and opens them again; a
// value may span lines), so that ". "$SUANLI_ENV_FILE"" sets them
// exactly and Python's shlex reads it; it has no reserved name
// (SUANLI_*, NVIDIA_VISIBLE_DEVICES and the NVIDIA runtime's other
// switches: ReservedEnvName).
// SUANLI_ONSTART_FILE is the script as the renter wrote it; the workload
// should run it each time it starts, in the renter's environment, as the
// docker launcher does.
//
// On launch it prints one JSON object on stdout:
// {"host":"203.0.113.7","port":22001,"user":"root","command":"ssh -p 22001 root@203.0.113.7"}
// (user defaults to root and command to the ssh line). Stop stops the
// workload and keeps the workspace; delete_volume removes the workspace
// for good (and the rental's workload, if it still runs). Stop and
// delete_volume must succeed when there is nothing to stop or delete. A
// non-zero exit is a failure, and stderr's tail goes into the error.
type ScriptLauncher struct {
	Path string
}

// Name implements Launcher.
func (ScriptLauncher) Name() string { return "script" }

// Launch implements Launcher.
func (s ScriptLauncher) Launch(ctx context.Context, spec LaunchSpec) (*Access, error) {
	var limits Limits
	if spec.Limits != nil {
		limits = *spec.Limits
	}
	gpus, noGPU := spec.GPUUUIDs, "0"
	if spec.NoGPU {
		gpus, noGPU = nil, "1"
	}
	files, cleanup, err := renterFiles(spec.Env, spec.Onstart)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	stdout, err := s.run(ctx, "launch", append(files,
		"SUANLI_RENTAL_ID="+strconv.FormatInt(spec.RentalID, 10),
		"SUANLI_WORKSPACE_ID="+spec.WorkspaceID,
		"SUANLI_GPU_UUIDS="+strings.Join(gpus, ","),
		"SUANLI_SSH_PUBLIC_KEY="+spec.SSHPublicKey,
		"SUANLI_IMAGE="+spec.Image,
		"SUANLI_REGISTRY_AUTH="+spec.RegistryAuth,
		"SUANLI_VOLUME_GB="+strconv.Itoa(spec.VolumeGB),
		"SUANLI_CPUS="+strconv.Itoa(limits.CPUs),
		"SUANLI_MEMORY_MIB="+strconv.FormatInt(limits.MemoryMiB, 10),
		"SUANLI_SHM_MIB="+strconv.FormatInt(limits.ShmMiB, 10),
		"SUANLI_NO_GPU="+noGPU,
		"SUANLI_PULL_ALWAYS="+map[bool]string{true: "1", false: "0"}[spec.PullAlways],
	))
	if err != nil {
		return nil, err
	}
	var out struct {
		Host    string `json:"host"`
		Port    int    `json:"port"`
		User    string `json:"user"`
		Command string `json:"command"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &out); err != nil {
		return nil, fmt.Errorf(`launch script %s: stdout is not the access JSON {"host":…,"port":…}: %v; stdout: %q`,
			s.Path, err, head(stdout))
	}
	if out.Host == "" || out.Port <= 0 || out.Port > 65535 {
		return nil, fmt.Errorf(`launch script %s: access JSON needs "host" and "port" (1-65535); stdout: %q`, s.Path, head(stdout))
	}
	if out.User == "" {
		out.User = "root"
	}
	if out.Command == "" {
		out.Command = SSHCommand(out.User, out.Host, out.Port)
	}
	return &Access{Host: out.Host, Port: out.Port, User: out.User, Command: out.Command}, nil
}

// Stop implements Launcher. The script is expected to succeed when the
// rental is not running; SUANLI_GRACE_SECONDS is how long the workload
// has between its stop signal and being killed (0: at once).
func (s ScriptLauncher) Stop(ctx context.Context, spec StopSpec) error {
	_, err := s.run(ctx, "stop", []string{
		"SUANLI_RENTAL_ID=" + strconv.FormatInt(spec.RentalID, 10),
		"SUANLI_WORKSPACE_ID=" + spec.WorkspaceID,
		"SUANLI_GPU_UUIDS=" + strings.Join(spec.GPUUUIDs, ","),
		"SUANLI_GRACE_SECONDS=" + strconv.Itoa(int(spec.Grace/time.Second)),
	})
	return err
}

// DeleteVolume implements Launcher. The script is expected to succeed
// when the workspace is not there.
func (s ScriptLauncher) DeleteVolume(ctx context.Context, spec VolumeSpec) error {
	_, err := s.run(ctx, TaskDeleteVolume, []string{
		"SUANLI_RENTAL_ID=" + strconv.FormatInt(spec.RentalID, 10),
		"SUANLI_WORKSPACE_ID=" + spec.WorkspaceID,
	})
	return err
}

// run runs the script for action with env added to the agent's own
// environment (so PATH and the like still work) and returns its stdout.
func (s ScriptLauncher) run(ctx context.Context, action string, env []string) ([]byte, error) {
	if s.Path == "" {
		return nil, errors.New("script launcher: Path is not set")
	}
	cmd := exec.CommandContext(ctx, s.Path)
	cmd.Env = append(append(os.Environ(), "SUANLI_ACTION="+action), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A killed script's children may keep its pipes open; do not wait
	// for them forever.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return nil, fmt.Errorf("%s script %s: %w; stderr: %s", action, s.Path, err, tail(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// renterFiles writes the renter's environment and on-start script for a
// launch script into a new private directory, and returns the variables
// that name them and a function that deletes them.
func renterFiles(env map[string]string, onstart string) (vars []string, cleanup func(), err error) {
	// Reserved names (SUANLI_*) are left out: sourcing the file would
	// change the script's own task. The agent logged them already.
	vars, _ = RenterEnv(env)
	cleanup = func() {}
	if len(vars) == 0 && onstart == "" {
		return []string{"SUANLI_ENV_FILE=", "SUANLI_ENV_NAMES=", "SUANLI_ONSTART_FILE="}, cleanup, nil
	}
	dir, err := os.MkdirTemp("", "suanli-launch-")
	if err != nil {
		return nil, cleanup, fmt.Errorf("script launcher: a directory for the renter's environment: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	var sh strings.Builder
	names := make([]string, 0, len(vars))
	for _, kv := range vars {
		name, value, _ := strings.Cut(kv, "=")
		names = append(names, name)
		sh.WriteString("export " + name + "=" + shellQuote(value) + "\n")
	}
	out := []string{"SUANLI_ENV_FILE=", "SUANLI_ENV_NAMES=" + strings.Join(names, ","), "SUANLI_ONSTART_FILE="}
	write := func(i int, file, body string) error {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return fmt.Errorf("script launcher: writing the renter's %s: %w", file, err)
		}
		out[i] += path
		return nil
	}
	if len(vars) > 0 {
		err = write(0, "env.sh", sh.String())
	}
	if err == nil && onstart != "" {
		err = write(2, "onstart", onstart)
	}
	if err != nil {
		cleanup()
		return nil, func() {}, err
	}
	return out, cleanup, nil
}

// shellQuote quotes s for a POSIX shell: in single quotes nothing is
// special but the quote itself, which is closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// head is the start of a script's stdout, enough to see what it printed.
func head(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// tailBytes is how much of a script's stderr goes into an error.
const tailBytes = 2048

// tail is the end of a script's output, where the reason it failed is.
func tail(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > tailBytes {
		s = "…" + s[len(s)-tailBytes:]
	}
	return s
}
