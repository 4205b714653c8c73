// Package dockertest gives tests a real Docker daemon: the one at
// SUANLI_TEST_DOCKER_HOST (else DOCKER_HOST), and the locally built
// images the launcher's tests run (scripts/build-test-images.sh). Without
// a daemon a test skips, unless CI=true, where it fails: CI must not pass
// by skipping what it is there to check.
package dockertest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"golang.org/x/crypto/ssh"
)

// DefaultSSHDImage is the test image with OpenSSH's sshd (Debian bookworm
// minbase with openssh-server and python3, no CMD or ENTRYPOINT), built by
// scripts/build-test-images.sh.
const DefaultSSHDImage = "suanli-test/sshd:bookworm"

// DefaultJupyterImage is the test image with Jupyter: the sshd image's
// packages and Debian's jupyter-notebook (the classic Notebook, no
// JupyterLab), built by scripts/build-test-images.sh.
const DefaultJupyterImage = "suanli-test/jupyter:bookworm"

// pingTimeout bounds the check that the daemon answers.
const pingTimeout = 10 * time.Second

// Require returns the URL of the test Docker daemon (SUANLI_TEST_DOCKER_HOST,
// else DOCKER_HOST) once it answers a ping; otherwise the test skips, or
// fails under CI=true.
func Require(t testing.TB) string {
	t.Helper()
	host := os.Getenv("SUANLI_TEST_DOCKER_HOST")
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	if host == "" {
		missing(t, "set SUANLI_TEST_DOCKER_HOST (or DOCKER_HOST) to a Docker daemon's URL, e.g. unix:///tmp/dockerd/docker.sock; .ci/run starts one")
	}
	cli := newClient(t, host)
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		missing(t, "the daemon at "+host+" does not answer: "+err.Error())
	}
	return host
}

// Client is a client of the test daemon (Require's), closed when the test
// ends.
func Client(t testing.TB) *client.Client {
	t.Helper()
	return newClient(t, Require(t))
}

// Image returns the test sshd image's name (SUANLI_TEST_SSHD_IMAGE, else
// DefaultSSHDImage) once the test daemon has it; otherwise the test
// skips, or fails under CI=true.
func Image(t testing.TB) string {
	t.Helper()
	return requireImage(t, "SUANLI_TEST_SSHD_IMAGE", DefaultSSHDImage)
}

// JupyterImage returns the test Jupyter image's name
// (SUANLI_TEST_JUPYTER_IMAGE, else DefaultJupyterImage) once the test
// daemon has it; otherwise the test skips, or fails under CI=true.
func JupyterImage(t testing.TB) string {
	t.Helper()
	return requireImage(t, "SUANLI_TEST_JUPYTER_IMAGE", DefaultJupyterImage)
}

// requireImage is the image named by env, else def, once the test daemon
// has it.
func requireImage(t testing.TB, env, def string) string {
	t.Helper()
	name := os.Getenv(env)
	if name == "" {
		name = def
	}
	cli := Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, name); err != nil {
		missing(t, "the test image "+name+" is not on the daemon (run scripts/build-test-images.sh): "+err.Error())
	}
	return name
}

func newClient(t testing.TB, host string) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		missing(t, "a client for "+host+": "+err.Error())
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// missing skips the test, or fails it under CI=true.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal("Docker is required under CI=true: " + why)
	}
	t.Skip("no Docker for this test: " + why)
}

// RenterKey is a fresh ed25519 key pair as a renter has one: the
// authorized_keys line (with comment) to rent with, and the signer to log
// in with.
func RenterKey(tb testing.TB, comment string) (string, ssh.Signer) {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " " + comment, signer
}

// pollEvery is how often Eventually looks again.
const pollEvery = 100 * time.Millisecond

// Eventually waits until cond holds, looking every 100 ms, and fails the
// test with what and cond's last word once within has passed. For what
// only polling can see (a container's answer, a directory on the volume
// root, a row the workers write): it waits for the condition, never for
// a fixed time.
func Eventually(tb testing.TB, within time.Duration, what string, cond func() (ok bool, last string)) {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case <-deadline.C:
			tb.Fatalf("%s: not within %s (last: %s)", what, within, last)
		case <-tick.C:
		}
	}
}
