package docker_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dockertest"
)

// jupyterLauncher is dockerLauncher with the test Jupyter image and a
// namespace of its own, so that no other run on the shared daemon
// collides with its containers.
func jupyterLauncher(tb testing.TB, cli *client.Client, id int64) *docker.Launcher {
	tb.Helper()
	l := dockerLauncher(tb, cli, portBaseFor(tb, id))
	l.Image = dockertest.JupyterImage(tb)
	l.Namespace = fmt.Sprintf("jt%d", uniqueID(tb))
	l.JupyterTimeout = 45 * time.Second
	ws := "t" + strconv.FormatInt(id, 10)
	tb.Cleanup(func() {
		ctx := context.Background()
		_ = cli.ContainerRemove(ctx, l.ContainerName(id), container.RemoveOptions{Force: true, RemoveVolumes: true})
		_ = cli.VolumeRemove(ctx, docker.VolumeName(ws, id), true)
	})
	return l
}

// execIn runs cmd as root in the container with env, and returns its
// combined output and exit status.
func execIn(tb testing.TB, cli *client.Client, ctr string, env []string, cmd ...string) (string, int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := cli.ContainerExecCreate(ctx, ctr, container.ExecOptions{User: "0", Env: env, Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		tb.Fatal(err)
	}
	att, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		tb.Fatal(err)
	}
	ins, err := cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(out.String()), ins.ExitCode
}

// jupyterGETs is a Python script that GETs each path in argv from the
// container's Jupyter, with the token in $TOKEN when the path starts with
// "+", and prints each answer's status, without following redirects.
const jupyterGETs = `
import os, sys, urllib.request, urllib.error
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k): return None
opener = urllib.request.build_opener(NoRedirect)
for p in sys.argv[1:]:
    h = {}
    if p.startswith("+"):
        p = p[1:]
        h["Authorization"] = "token " + os.environ["TOKEN"]
    try:
        code = opener.open(urllib.request.Request("http://127.0.0.1:%d" % JUPYTER_PORT + p, headers=h), timeout=5).status
    except urllib.error.HTTPError as e:
        code = e.code
    except Exception as e:
        code = type(e).__name__
    print(code)
`

// jupyterStatuses GETs paths (see jupyterGETs) in the container and
// returns the statuses, space separated.
func jupyterStatuses(tb testing.TB, cli *client.Client, ctr, token string, paths ...string) string {
	tb.Helper()
	script := strings.ReplaceAll(jupyterGETs, "JUPYTER_PORT", strconv.Itoa(docker.JupyterPort))
	out, code := execIn(tb, cli, ctr, []string{"TOKEN=" + token}, append([]string{"python3", "-c", script}, paths...)...)
	if code != 0 {
		tb.Fatalf("the GETs in the container exited %d: %s", code, out)
	}
	return strings.Join(strings.Fields(out), " ")
}

// waitAnswers waits, up to a minute, until the container's Jupyter
// answers an authenticated GET of path with 200.
func waitAnswers(tb testing.TB, cli *client.Client, ctr, token, path string) {
	tb.Helper()
	dockertest.Eventually(tb, time.Minute, "Jupyter answers "+path+" with 200", func() (bool, string) {
		got := jupyterStatuses(tb, cli, ctr, token, "+"+path)
		return got == "200", got
	})
}

// jupyterPID is the pid (in the container) of the Jupyter server process.
func jupyterPID(tb testing.TB, cli *client.Client, ctr string) string {
	tb.Helper()
	out, code := execIn(tb, cli, ctr, nil, "/bin/sh", "-c",
		`for p in /proc/[0-9]*; do if tr '\0' ' ' < $p/cmdline 2>/dev/null | grep -q '^/usr/bin/python3 /usr/bin/jupyter-notebook '; then echo ${p#/proc/}; fi; done`)
	if code != 0 || len(strings.Fields(out)) != 1 {
		tb.Fatalf("the Jupyter process: status %d, %q; want one pid", code, out)
	}
	return out
}

func TestDockerJupyter(t *testing.T) {
	cli := dockertest.Client(t)
	id := uniqueID(t)
	ws := "t" + strconv.FormatInt(id, 10)
	l := jupyterLauncher(t, cli, id)
	key, signer := dockertest.RenterKey(t, "renter@test")
	ctx := context.Background()
	acc := mustLaunch(t, l, agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key})
	ctr := l.ContainerName(id)
	base := agent.JupyterBaseURL(id)
	if want := "/rentals/" + strconv.FormatInt(id, 10) + "/jupyter/"; base != want {
		t.Fatalf("base URL %q, want %q", base, want)
	}

	t.Run("the access details say Jupyter runs, and how to reach it, without the token", func(t *testing.T) {
		want := agent.Jupyter{Port: docker.JupyterPort, Kind: agent.JupyterNotebook}
		if acc.Jupyter == nil || *acc.Jupyter != want {
			t.Fatalf("access.Jupyter = %+v, want %+v", acc.Jupyter, want)
		}
		if out := mustSSH(t, agent.SSHPort(l.PortBase, id), signer, "echo ok"); out != "ok" {
			t.Errorf("ssh beside Jupyter: %q", out)
		}
	})

	token, err := l.JupyterToken(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := hex.DecodeString(token); err != nil || len(b) != 32 {
		t.Fatalf("token %d characters, hex %v; want 32 random bytes in hex", len(token), err)
	}

	t.Run("Jupyter answers with the token and refuses without it", func(t *testing.T) {
		got := jupyterStatuses(t, cli, ctr, token, "+"+base+"api/status", base+"api/status", "+"+base+"api", base+"tree", "+/api/status")
		// /api/status with the token; without it 403; the tree page sends
		// a browser without one to the login; nothing outside the base URL.
		if got != "200 403 200 302 404" {
			t.Errorf("statuses = %q, want 200 403 200 302 404", got)
		}
		if got := jupyterStatuses(t, cli, ctr, "0"+token[1:], "+"+base+"api/status"); got != "403" && token[0] != '0' {
			t.Errorf("a wrong token: %s, want 403", got)
		}
	})

	t.Run("it runs as root in /workspace, reachable from this host only", func(t *testing.T) {
		pid := jupyterPID(t, cli, ctr)
		out, _ := execIn(t, cli, ctr, nil, "/bin/sh", "-c", "readlink /proc/"+pid+"/cwd; awk '/^Uid:/{print $2}' /proc/"+pid+"/status")
		if f := strings.Fields(out); len(f) != 2 || f[0] != "/workspace" || f[1] != "0" {
			t.Errorf("cwd and uid = %q, want /workspace 0", out)
		}
		mustSSH(t, agent.SSHPort(l.PortBase, id), signer, "touch /workspace/marker-file")
		out, _ = execIn(t, cli, ctr, []string{"TOKEN=" + token}, "python3", "-c",
			`import os,urllib.request; print(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:`+strconv.Itoa(docker.JupyterPort)+base+`api/contents", headers={"Authorization": "token "+os.environ["TOKEN"]})).read().decode())`)
		if !strings.Contains(out, `"marker-file"`) {
			t.Errorf("Jupyter's contents do not list /workspace's file: %s", out)
		}
		// This host (the agent's tunnel) reaches it at the container's
		// address on the workloads network, with the token only.
		info, err := cli.ContainerInspect(ctx, ctr)
		if err != nil {
			t.Fatal(err)
		}
		ep := info.NetworkSettings.Networks[docker.DefaultNetwork]
		if ep == nil || ep.IPAddress == "" {
			t.Fatalf("the container is not on %s: %v", docker.DefaultNetwork, info.NetworkSettings.Networks)
		}
		status := func(withToken bool) int {
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+net.JoinHostPort(ep.IPAddress, strconv.Itoa(docker.JupyterPort))+base+"api/status", nil)
			if withToken {
				req.Header.Set("Authorization", "token "+token)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("this host to the container's Jupyter: %v", err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		if with, without := status(true), status(false); with != 200 || without != 403 {
			t.Errorf("from this host: %d with the token, %d without, want 200 and 403", with, without)
		}
		// Another container on the same network cannot reach it.
		other, err := cli.ContainerCreate(ctx, &container.Config{Image: dockertest.Image(t), Cmd: []string{"python3", "-c",
			`import socket,sys; s=socket.socket(); s.settimeout(3)
try:
    s.connect((sys.argv[1], ` + strconv.Itoa(docker.JupyterPort) + `)); print("open")
except OSError as e:
    print("unreachable")`, ep.IPAddress}}, &container.HostConfig{NetworkMode: container.NetworkMode(docker.DefaultNetwork)}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.ContainerRemove(context.Background(), other.ID, container.RemoveOptions{Force: true}) })
		if err := cli.ContainerStart(ctx, other.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		okC, errC := cli.ContainerWait(ctx, other.ID, container.WaitConditionNotRunning)
		select {
		case <-okC:
		case err := <-errC:
			t.Fatal(err)
		}
		if got := strings.TrimSpace(containerLog(t, cli, other.ID)); got != "unreachable" {
			t.Errorf("another container on %s to Jupyter at %s: %q, want unreachable", docker.DefaultNetwork, ep.IPAddress, got)
		}
		if len(info.HostConfig.PortBindings) != 1 || len(info.HostConfig.PortBindings["22/tcp"]) != 1 {
			t.Errorf("port bindings %v, want only SSH's", info.HostConfig.PortBindings)
		}
		for p := range info.NetworkSettings.Ports {
			if p != "22/tcp" {
				t.Errorf("the container publishes %s", p)
			}
		}
	})

	t.Run("the token is in no command line, environment or log", func(t *testing.T) {
		info, err := cli.ContainerInspect(ctx, ctr)
		if err != nil {
			t.Fatal(err)
		}
		inspect := strings.Join(slices.Concat(info.Config.Entrypoint, info.Config.Cmd, info.Config.Env, info.Args, []string{info.Path}), " ")
		if strings.Contains(inspect, token) {
			t.Errorf("docker inspect shows the token: %s", inspect)
		}
		procs, code := execIn(t, cli, ctr, nil, "/bin/sh", "-c", `cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'`)
		if code != 0 || !strings.Contains(procs, "JUPYTER_TOKEN_FILE=") {
			t.Fatalf("the processes' command lines and environments: status %d, %d bytes, no JUPYTER_TOKEN_FILE", code, len(procs))
		}
		if strings.Contains(procs, token) {
			t.Error("a process in the container has the token on its command line or in its environment")
		}
		if logs := containerLog(t, cli, ctr); strings.Contains(logs, token) || !strings.Contains(logs, "Jupyter Notebook") {
			t.Errorf("the container's log has the token, or no Jupyter: %s", logs)
		}
		if out, _ := execIn(t, cli, ctr, nil, "stat", "-c", "%a %u", "/.suanli/jupyter-token"); out != "600 0" {
			t.Errorf("the token file's mode and owner: %q, want 600 0", out)
		}
	})

	t.Run("Jupyter is started again when it exits, with the same token", func(t *testing.T) {
		pid := jupyterPID(t, cli, ctr)
		if out, code := execIn(t, cli, ctr, nil, "kill", "-9", pid); code != 0 {
			t.Fatalf("kill: %s", out)
		}
		waitAnswers(t, cli, ctr, token, base+"api/status")
		if again := jupyterPID(t, cli, ctr); again == pid {
			t.Errorf("the same process %s answers after it was killed", pid)
		}
	})

	t.Run("and when the container restarts", func(t *testing.T) {
		if err := cli.ContainerRestart(ctx, ctr, container.StopOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAnswers(t, cli, ctr, token, base+"api/status")
		if again, err := l.JupyterToken(ctx, id); err != nil || again != token {
			t.Errorf("token after the restart changed (%v)", err)
		}
	})

	t.Run("a launch after a stop has a new token", func(t *testing.T) {
		if err := l.Stop(ctx, agent.StopSpec{RentalID: id, WorkspaceID: ws}); err != nil {
			t.Fatal(err)
		}
		acc := mustLaunch(t, l, agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key})
		if acc.Jupyter == nil {
			t.Fatal("no Jupyter after the second launch")
		}
		fresh, err := l.JupyterToken(ctx, id)
		if err != nil || fresh == token {
			t.Fatalf("token after the relaunch: same %v, err %v", fresh == token, err)
		}
		if got := jupyterStatuses(t, cli, ctr, token, "+"+base+"api/status"); got != "403" {
			t.Errorf("the old token: %s, want 403", got)
		}
		waitAnswers(t, cli, ctr, fresh, base+"api/status")
	})
}

// An image without Jupyter launches as before: no Jupyter in the access
// details, no supervisor running, and the probe says there is none.
func TestDockerNoJupyter(t *testing.T) {
	cli := dockertest.Client(t)
	id := uniqueID(t)
	ws := "t" + strconv.FormatInt(id, 10)
	l := jupyterLauncher(t, cli, id)
	l.Image = dockertest.Image(t)
	key, _ := dockertest.RenterKey(t, "renter@test")
	acc := mustLaunch(t, l, agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key})
	if acc.Jupyter != nil {
		t.Errorf("access.Jupyter = %+v for an image without Jupyter", acc.Jupyter)
	}
	if out, _ := execIn(t, cli, l.ContainerName(id), nil, "/bin/sh", "-c", "grep -l '[s]uanli/jupyter' /proc/[0-9]*/cmdline"); out != "" {
		t.Errorf("processes %s; want no Jupyter supervisor", out)
	}
	if out, code := execIn(t, cli, l.ContainerName(id), nil, "/bin/sh", "/.suanli/jupyter-ready"); code != 3 {
		t.Errorf("the probe: status %d, %q; want 3 (no Jupyter)", code, out)
	}
}

// containerLog is the container's whole log.
func containerLog(tb testing.TB, cli *client.Client, ctr string) string {
	tb.Helper()
	rc, err := cli.ContainerLogs(context.Background(), ctr, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil {
		tb.Fatal(err)
	}
	return out.String()
}

// BenchmarkDockerJupyter measures, with the image cached, a launch of the
// Jupyter image until its Jupyter answers an authenticated GET (the
// launch waits for that). Run with -benchtime=5x; it reports p50 and p90
// in ms.
func BenchmarkDockerJupyter(b *testing.B) {
	cli := dockertest.Client(b)
	key, _ := dockertest.RenterKey(b, "renter@test")
	ctx := context.Background()
	var d []time.Duration
	for b.Loop() {
		id := uniqueID(b)
		ws := "t" + strconv.FormatInt(id, 10)
		l := jupyterLauncher(b, cli, id)
		start := time.Now()
		acc := mustLaunch(b, l, agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key})
		if acc.Jupyter == nil {
			b.Fatal("no Jupyter")
		}
		d = append(d, time.Since(start))
		token, err := l.JupyterToken(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if got := jupyterStatuses(b, cli, l.ContainerName(id), token, "+"+agent.JupyterBaseURL(id)+"api/status"); got != "200" {
			b.Fatalf("status %s", got)
		}
		if err := l.DeleteVolume(ctx, agent.VolumeSpec{RentalID: id, WorkspaceID: ws}); err != nil {
			b.Fatal(err)
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(d[len(d)*9/10].Milliseconds()), "p90-ms")
}

// A Jupyter that keeps exiting does not hold the launch up for the whole
// JupyterTimeout: the launch gives up on it after a few tries and reports
// none; SSH works.
func TestDockerJupyterBroken(t *testing.T) {
	cli := dockertest.Client(t)
	id := uniqueID(t)
	ws := "t" + strconv.FormatInt(id, 10)
	l := jupyterLauncher(t, cli, id)
	l.Image = derivedImage(t, cli, l.Image, []string{"/bin/sh", "-c", `printf '#!/bin/sh\necho broken >&2\nexit 1\n' > /usr/bin/jupyter-notebook`}, container.Config{})
	key, signer := dockertest.RenterKey(t, "renter@test")
	start := time.Now()
	acc := mustLaunch(t, l, agent.LaunchSpec{RentalID: id, WorkspaceID: ws, GPUUUIDs: []string{"GPU-sim-0"}, SSHPublicKey: key})
	took := time.Since(start)
	t.Logf("launch with a broken Jupyter: %s", took)
	if acc.Jupyter != nil {
		t.Errorf("access.Jupyter = %+v for a Jupyter that does not start", acc.Jupyter)
	}
	if took >= l.JupyterTimeout {
		t.Errorf("the launch took %s, the whole Jupyter timeout", took)
	}
	if out := mustSSH(t, agent.SSHPort(l.PortBase, id), signer, "echo ok"); out != "ok" {
		t.Errorf("ssh: %q", out)
	}
	if logs := containerLog(t, cli, l.ContainerName(id)); !strings.Contains(logs, "jupyter notebook exited with status 1") {
		t.Errorf("the container's log does not say Jupyter exited: %s", logs)
	}
}
