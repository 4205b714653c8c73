package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"suanli/agent"
)

// mustScript writes an executable shell script into a temporary directory
// and returns its path.
func mustScript(tb testing.TB, body string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "launch.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		tb.Fatal(err)
	}
	return path
}

// readEnvFile reads the KEY=value lines a test script wrote.
func readEnvFile(tb testing.TB, path string) map[string]string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	env := map[string]string{}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		env[k] = v
	}
	return env
}

func TestScriptLauncher(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "env")
	script := mustScript(t, `
{
  echo "SUANLI_ACTION=$SUANLI_ACTION"
  echo "SUANLI_RENTAL_ID=$SUANLI_RENTAL_ID"
  echo "SUANLI_WORKSPACE_ID=$SUANLI_WORKSPACE_ID"
  echo "SUANLI_GPU_UUIDS=$SUANLI_GPU_UUIDS"
  echo "SUANLI_SSH_PUBLIC_KEY=$SUANLI_SSH_PUBLIC_KEY"
  echo "SUANLI_IMAGE=$SUANLI_IMAGE"
  echo "SUANLI_REGISTRY_AUTH=$SUANLI_REGISTRY_AUTH"
  echo "SUANLI_VOLUME_GB=$SUANLI_VOLUME_GB"
  echo "SUANLI_CPUS=$SUANLI_CPUS"
  echo "SUANLI_MEMORY_MIB=$SUANLI_MEMORY_MIB"
  echo "SUANLI_SHM_MIB=$SUANLI_SHM_MIB"
  echo "SUANLI_NO_GPU=$SUANLI_NO_GPU"
  echo "SUANLI_PULL_ALWAYS=$SUANLI_PULL_ALWAYS"
} > '`+envFile+`'
if [ "$SUANLI_ACTION" = launch ]; then
  printf '{"host":"node7.example","port":%d,"user":"ubuntu","command":"ssh -p %d ubuntu@node7.example","rental":"%s"}\n' \
    $((30000 + SUANLI_RENTAL_ID)) $((30000 + SUANLI_RENTAL_ID)) "$SUANLI_RENTAL_ID"
fi
`)
	l := agent.ScriptLauncher{Path: script}
	ctx := context.Background()

	t.Run("launch parses the access JSON and passes the task in the environment", func(t *testing.T) {
		acc, err := l.Launch(ctx, agent.LaunchSpec{
			RentalID: 12, WorkspaceID: "w9", GPUUUIDs: []string{"GPU-aaaa", "GPU-bbbb"}, SSHPublicKey: "ssh-ed25519 AAAA renter",
			Image: "registry.example.cn/lab/train:3", RegistryAuth: "eyJ1c2VybmFtZSI6ImxhYiJ9", VolumeGB: 50,
			Limits: &agent.Limits{CPUs: 16, MemoryMiB: 65536, ShmMiB: 8192},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := agent.Access{Host: "node7.example", Port: 30012, User: "ubuntu", Command: "ssh -p 30012 ubuntu@node7.example"}
		if *acc != want {
			t.Errorf("access = %+v, want %+v", *acc, want)
		}
		env := readEnvFile(t, envFile)
		for k, v := range map[string]string{
			"SUANLI_ACTION":         "launch",
			"SUANLI_RENTAL_ID":      "12",
			"SUANLI_WORKSPACE_ID":   "w9",
			"SUANLI_GPU_UUIDS":      "GPU-aaaa,GPU-bbbb",
			"SUANLI_SSH_PUBLIC_KEY": "ssh-ed25519 AAAA renter",
			"SUANLI_IMAGE":          "registry.example.cn/lab/train:3",
			"SUANLI_REGISTRY_AUTH":  "eyJ1c2VybmFtZSI6ImxhYiJ9",
			"SUANLI_VOLUME_GB":      "50",
			"SUANLI_CPUS":           "16",
			"SUANLI_MEMORY_MIB":     "65536",
			"SUANLI_SHM_MIB":        "8192",
			"SUANLI_NO_GPU":         "0",
			"SUANLI_PULL_ALWAYS":    "0",
		} {
			if env[k] != v {
				t.Errorf("script saw %s=%q, want %q", k, env[k], v)
			}
		}
	})

	t.Run("stop passes SUANLI_ACTION=stop", func(t *testing.T) {
		if err := l.Stop(ctx, agent.StopSpec{RentalID: 12, WorkspaceID: "w9"}); err != nil {
			t.Fatal(err)
		}
		env := readEnvFile(t, envFile)
		if env["SUANLI_ACTION"] != "stop" || env["SUANLI_RENTAL_ID"] != "12" || env["SUANLI_WORKSPACE_ID"] != "w9" {
			t.Errorf("script saw %v", env)
		}
	})

	t.Run("a no-GPU launch names no GPUs and says so", func(t *testing.T) {
		if _, err := l.Launch(ctx, agent.LaunchSpec{RentalID: 13, WorkspaceID: "w9", GPUUUIDs: []string{"GPU-aaaa"}, NoGPU: true}); err != nil {
			t.Fatal(err)
		}
		env := readEnvFile(t, envFile)
		if env["SUANLI_NO_GPU"] != "1" || env["SUANLI_GPU_UUIDS"] != "" || env["SUANLI_CPUS"] != "0" {
			t.Errorf("script saw %v", env)
		}
	})

	t.Run("delete_volume passes SUANLI_ACTION=delete_volume", func(t *testing.T) {
		if err := l.DeleteVolume(ctx, agent.VolumeSpec{RentalID: 12, WorkspaceID: "w9"}); err != nil {
			t.Fatal(err)
		}
		env := readEnvFile(t, envFile)
		if env["SUANLI_ACTION"] != "delete_volume" || env["SUANLI_RENTAL_ID"] != "12" || env["SUANLI_WORKSPACE_ID"] != "w9" {
			t.Errorf("script saw %v", env)
		}
	})

	t.Run("a failing script's stderr is in the error", func(t *testing.T) {
		bad := agent.ScriptLauncher{Path: mustScript(t, "echo 'starting'\necho 'quota exceeded on pool gpu-a' >&2\nexit 1\n")}
		_, err := bad.Launch(ctx, agent.LaunchSpec{RentalID: 1, GPUUUIDs: []string{"GPU-aaaa"}})
		if err == nil || !strings.Contains(err.Error(), "quota exceeded on pool gpu-a") {
			t.Errorf("err = %v, want the script's stderr", err)
		}
		if err := bad.Stop(ctx, agent.StopSpec{RentalID: 1}); err == nil {
			t.Error("stop with a failing script succeeded")
		}
		if err := bad.DeleteVolume(ctx, agent.VolumeSpec{RentalID: 1, WorkspaceID: "w1"}); err == nil {
			t.Error("delete_volume with a failing script succeeded")
		}
	})

	t.Run("stdout that is not JSON is a clear error", func(t *testing.T) {
		bad := agent.ScriptLauncher{Path: mustScript(t, "echo 'started on port 22001'\n")}
		_, err := bad.Launch(ctx, agent.LaunchSpec{RentalID: 1, GPUUUIDs: []string{"GPU-aaaa"}})
		if err == nil || !strings.Contains(err.Error(), "not the access JSON") || !strings.Contains(err.Error(), "started on port 22001") {
			t.Errorf("err = %v, want one naming the JSON and quoting stdout", err)
		}
	})

	t.Run("JSON without host or port is a clear error", func(t *testing.T) {
		bad := agent.ScriptLauncher{Path: mustScript(t, `echo '{"user":"root"}'`+"\n")}
		_, err := bad.Launch(ctx, agent.LaunchSpec{RentalID: 1, GPUUUIDs: []string{"GPU-aaaa"}})
		if err == nil || !strings.Contains(err.Error(), `needs "host" and "port"`) {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("a cancelled context ends a hung script", func(t *testing.T) {
		hung := agent.ScriptLauncher{Path: mustScript(t, "exec sleep 60\n")}
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := hung.Launch(ctx, agent.LaunchSpec{RentalID: 1, GPUUUIDs: []string{"GPU-aaaa"}}); err == nil {
			t.Error("launch with a cancelled context succeeded")
		}
	})
}

// The renter's environment and on-start script reach the script in two
// private files, quoted so that sourcing the environment gives every
// value back exactly, and are deleted once the script exits.
func TestScriptLauncherEnvAndOnstart(t *testing.T) {
	out := t.TempDir()
	script := mustScript(t, `
set -eu
o='`+out+`'
printf '%s\n' "$SUANLI_ENV_FILE" > "$o/env-path"
printf '%s\n' "$SUANLI_ONSTART_FILE" > "$o/onstart-path"
printf '%s\n' "$SUANLI_ENV_NAMES" > "$o/names"
if [ -n "$SUANLI_ENV_FILE" ]; then
  stat -c %a "$SUANLI_ENV_FILE" "$SUANLI_ONSTART_FILE" "$(dirname "$SUANLI_ENV_FILE")" > "$o/modes"
  cp "$SUANLI_ENV_FILE" "$o/env.sh"
  cp "$SUANLI_ONSTART_FILE" "$o/onstart"
  . "$SUANLI_ENV_FILE"
  printf %s "$HF_TOKEN" > "$o/HF_TOKEN"
  printf %s "$MULTI" > "$o/MULTI"
  printf %s "$SUANLI_ACTION" > "$o/action"
fi
echo '{"host":"node7.example","port":30001}'
`)
	l := agent.ScriptLauncher{Path: script}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const token = "a b'c$d"
	const multi = "line one\nexport X='y'\n\"two\" `three` \\ $HOME '' \n"
	const onstart = "#!/bin/bash\necho \"$HF_TOKEN\" > /workspace/out\n"
	_, err := l.Launch(context.Background(), agent.LaunchSpec{RentalID: 1, GPUUUIDs: []string{"GPU-aaaa"},
		Env:     map[string]string{"HF_TOKEN": token, "MULTI": multi, "SUANLI_ACTION": "stop", "EMPTY": ""},
		Onstart: onstart})
	if err != nil {
		t.Fatal(err)
	}
	if got := read("HF_TOKEN"); got != token {
		t.Errorf("HF_TOKEN after sourcing = %q, want %q", got, token)
	}
	if got := read("MULTI"); got != multi {
		t.Errorf("MULTI after sourcing = %q, want %q", got, multi)
	}
	if got := read("action"); got != "launch" {
		t.Errorf("the renter's SUANLI_ACTION replaced the agent's: %q", got)
	}
	if got := read("names"); got != "EMPTY,HF_TOKEN,MULTI\n" {
		t.Errorf("SUANLI_ENV_NAMES = %q", got)
	}
	if got := read("onstart"); got != onstart {
		t.Errorf("the onstart file = %q, want %q", got, onstart)
	}
	if got := read("modes"); got != "600\n600\n700\n" {
		t.Errorf("modes of the env file, the onstart file and their directory = %q", got)
	}
	if got := read("env.sh"); !strings.HasPrefix(got, "export EMPTY=''\nexport HF_TOKEN='a b'\\''c$d'\n") {
		t.Errorf("env file = %q", got)
	}
	for _, p := range []string{strings.TrimSpace(read("env-path")), strings.TrimSpace(read("onstart-path"))} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the script exited: %v, want it deleted", p, err)
		}
		if _, err := os.Stat(filepath.Dir(p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the script exited: %v, want it deleted", filepath.Dir(p), err)
		}
	}

	t.Run("without either the variables are empty", func(t *testing.T) {
		if _, err := l.Launch(context.Background(), agent.LaunchSpec{RentalID: 2, GPUUUIDs: []string{"GPU-aaaa"}}); err != nil {
			t.Fatal(err)
		}
		if got := read("env-path") + read("onstart-path") + read("names"); got != "\n\n\n" {
			t.Errorf("SUANLI_ENV_FILE, SUANLI_ONSTART_FILE, SUANLI_ENV_NAMES = %q, want empty", got)
		}
	})
}
