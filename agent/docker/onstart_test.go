package docker_test

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"golang.org/x/crypto/ssh"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dockertest"
)

// waitOnstartExit waits until the container's on-start script has ended
// and returns the status the runner recorded.
func waitOnstartExit(tb testing.TB, port int, signer ssh.Signer) string {
	tb.Helper()
	var code string
	dockertest.Eventually(tb, time.Minute, "the onstart's exit status in /.suanli/onstart-exit", func() (bool, string) {
		out, err := sshRun(port, signer, "cat /.suanli/onstart-exit")
		if err != nil {
			return false, out + " " + err.Error()
		}
		code = out
		return true, ""
	})
	return code
}

// A launch's environment reaches the container, login shells and the
// on-start script, quoted as it was given; the script runs beside sshd in
// /workspace on every start of the container, its output in the
// container's log and in /var/log/suanli-onstart.log, and its exit status
// recorded; a failing one stops nothing.
func TestDockerEnvAndOnstart(t *testing.T) {
	cli := dockertest.Client(t)
	id := uniqueID(t)
	ws := "t" + strconv.FormatInt(id, 10)
	cleanupRental(t, cli, id, ws)
	l := dockerLauncher(t, cli, portBaseFor(t, id))
	key, signer := dockertest.RenterKey(t, "renter@test")
	const token = "a b'c$d"
	// A line of it that looks like a variable of the session's must not
	// be cut out of the login shells' file.
	const multi = "line one\nexport HOME=/nowhere\nline \"two\" `three` \\ $HOME\n"
	const pastedPATH = "/opt/conda/bin:$PATH"
	spec := agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key,
		Verify: &agent.Verify{URL: "http://127.0.0.1:1/verify", Token: "launcher-token"},
		Env: map[string]string{"HF_TOKEN": token, "MULTI": multi,
			// A PATH pasted as a shell line, its $ kept literally: no /bin
			// in it, and the init must still find its programs.
			"PATH": pastedPATH,
			// Names the launcher sets itself: skipped.
			"SUANLI_VERIFY_TOKEN": "renter-token", "NVIDIA_VISIBLE_DEVICES": "all"},
		// The sleep left in the background keeps the output pipe open: the
		// exit is recorded all the same.
		Onstart: `echo "$HF_TOKEN" > /workspace/onstart.out
printf %s "$MULTI" > /workspace/onstart.multi
pwd > /workspace/onstart.pwd
echo start >> /workspace/onstart.runs
sleep 600 &
echo hello-onstart
`}
	ctx := context.Background()
	mustLaunch(t, l, spec)
	port := agent.SSHPort(l.PortBase, id)

	if code := waitOnstartExit(t, port, signer); code != "0" {
		t.Errorf("onstart exit = %q, want 0", code)
	}
	t.Run("the onstart ran in /workspace with the renter's environment", func(t *testing.T) {
		if out := mustSSH(t, port, signer, "cat /workspace/onstart.out"); out != token {
			t.Errorf("/workspace/onstart.out = %q, want %q", out, token)
		}
		if out := mustSSH(t, port, signer, "base64 -w0 /workspace/onstart.multi"); out != b64(multi) {
			t.Errorf("/workspace/onstart.multi in base64 = %q, want %q", out, b64(multi))
		}
		if out := mustSSH(t, port, signer, "cat /workspace/onstart.pwd"); out != "/workspace" {
			t.Errorf("onstart ran in %q", out)
		}
	})
	t.Run("a login shell has the renter's environment, quoted as given", func(t *testing.T) {
		if out := mustSSH(t, port, signer, `bash -lc 'echo "$HF_TOKEN"'`); out != token {
			t.Errorf("HF_TOKEN in a login shell = %q, want %q", out, token)
		}
		if out := mustSSH(t, port, signer, `bash -lc 'printf %s "$MULTI" | base64 -w0'`); out != b64(multi) {
			t.Errorf("MULTI in a login shell, in base64 = %q, want %q", out, b64(multi))
		}
		if out := mustSSH(t, port, signer, `sh -lc 'echo "$HF_TOKEN"'`); out != token {
			t.Errorf("HF_TOKEN in sh -l = %q, want %q", out, token)
		}
	})
	t.Run("the renter cannot replace the launcher's own variables", func(t *testing.T) {
		info, err := cli.ContainerInspect(ctx, docker.ContainerName(id))
		if err != nil {
			t.Fatal(err)
		}
		env := info.Config.Env
		for _, want := range []string{"SUANLI_VERIFY_TOKEN=launcher-token", "NVIDIA_VISIBLE_DEVICES=GPU-sim-0", "HF_TOKEN=" + token,
			"PATH=" + pastedPATH, "NVIDIA_NVSWITCH=disabled"} {
			if !slices.Contains(env, want) {
				t.Errorf("container env %q lacks %q", env, want)
			}
		}
		for _, bad := range []string{"SUANLI_VERIFY_TOKEN=renter-token", "NVIDIA_VISIBLE_DEVICES=all"} {
			if slices.Contains(env, bad) {
				t.Errorf("container env has the renter's %q", bad)
			}
		}
		if out := mustSSH(t, port, signer, `bash -lc 'echo "$SUANLI_VERIFY_TOKEN"'`); out != "launcher-token" {
			t.Errorf("SUANLI_VERIFY_TOKEN in a login shell = %q", out)
		}
	})
	t.Run("its output is in the container's log and in /var/log/suanli-onstart.log", func(t *testing.T) {
		// The exit status is recorded before the "exited" line reaches
		// either log.
		var logs string
		dockertest.Eventually(t, 30*time.Second, "the onstart's lines in the container's log", func() (bool, string) {
			logs = containerLog(t, cli, docker.ContainerName(id))
			for _, want := range []string{"suanli-init: onstart started\n", "onstart: hello-onstart\n", "suanli-init: onstart exited 0\n"} {
				if !strings.Contains(logs, want) {
					return false, logs
				}
			}
			return true, ""
		})
		if strings.Contains(logs, token) {
			t.Errorf("the container log shows the token:\n%s", logs)
		}
		want := "suanli-init: onstart started\nhello-onstart\nsuanli-init: onstart exited 0"
		dockertest.Eventually(t, 30*time.Second, "/var/log/suanli-onstart.log", func() (bool, string) {
			out := mustSSH(t, port, signer, "cat /var/log/suanli-onstart.log")
			return out == want, out
		})
	})
	t.Run("the script, the login shells' environment and the log are root's only; the init stays PID 1", func(t *testing.T) {
		const cmd = "stat -c %a /.suanli/onstart /etc/profile.d/00-suanli-env.sh /var/log/suanli-onstart.log; tr '\\0' ' ' < /proc/1/cmdline"
		if out := mustSSH(t, port, signer, cmd); out != "700\n600\n600\n/bin/sh /.suanli/init" {
			t.Errorf("modes and PID 1 = %q", out)
		}
	})

	// Every start of the container runs it: the daemon restarting it, and
	// a launch after a stop (a new container).
	restart := 30
	if err := cli.ContainerRestart(ctx, docker.ContainerName(id), container.StopOptions{Timeout: &restart}); err != nil {
		t.Fatal(err)
	}
	if code := waitOnstartExit(t, port, signer); code != "0" {
		t.Errorf("onstart exit after a restart = %q, want 0", code)
	}
	if err := l.Stop(ctx, agent.StopSpec{RentalID: id, WorkspaceID: ws, Grace: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	mustLaunch(t, l, spec)
	if code := waitOnstartExit(t, port, signer); code != "0" {
		t.Errorf("onstart exit after stop and start = %q, want 0", code)
	}
	t.Run("it runs again on every start", func(t *testing.T) {
		if out := mustSSH(t, port, signer, "cat /workspace/onstart.runs"); out != "start\nstart\nstart" {
			t.Errorf("/workspace/onstart.runs = %q, want three starts (launch, restart, launch after stop)", out)
		}
	})

	t.Run("a failing onstart leaves sshd running and its status recorded", func(t *testing.T) {
		failing := spec
		failing.Onstart = "#!/bin/sh\necho about to fail >&2\nexit 3\n"
		mustLaunch(t, l, failing)
		if code := waitOnstartExit(t, port, signer); code != "3" {
			t.Errorf("onstart exit = %q, want 3", code)
		}
		// sshd logs to the same stream, so its lines may come between.
		dockertest.Eventually(t, 30*time.Second, "the exit in the container's log", func() (bool, string) {
			logs := containerLog(t, cli, docker.ContainerName(id))
			i := strings.Index(logs, "onstart: about to fail\n")
			return i >= 0 && strings.Contains(logs[i:], "\nsuanli-init: onstart exited 3\n"), logs
		})
		if out := mustSSH(t, port, signer, "echo still-here"); out != "still-here" {
			t.Errorf("ssh after a failed onstart: %q", out)
		}
	})

	t.Run("without an onstart nothing runs and nothing is recorded", func(t *testing.T) {
		none := spec
		none.Onstart = ""
		mustLaunch(t, l, none)
		if out := mustSSH(t, port, signer, "for f in /.suanli/onstart /.suanli/onstart-run /.suanli/onstart-exit; do [ ! -e $f ] || echo $f; done; cat /workspace/onstart.runs"); out != "start\nstart\nstart" {
			t.Errorf("files and runs = %q", out)
		}
		if logs := containerLog(t, cli, docker.ContainerName(id)); strings.Contains(logs, "onstart") {
			t.Errorf("container log mentions an onstart:\n%s", logs)
		}
	})
}

// b64 is s in standard base64, as base64 -w0 prints it.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
