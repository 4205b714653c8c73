package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/mount"

	"suanli/agent"
)

// The verifier's environment: its endpoint and the rental's credential;
// a run at start only where the server asked for one; and on a simulated
// agent the GPUs it stands for, which a real agent never passes (its
// verifier reads NVML in the container).
func TestContainerConfigVerifier(t *testing.T) {
	mnt := mount.Mount{Type: mount.TypeVolume, Source: "suanli-ws-w1", Target: "/workspace"}
	v := &agent.Verify{URL: "https://suanli.example/witness/v1/rentals/7/results", Token: "svf_abc", AtStart: true, GPUName: "NVIDIA GeForce RTX 4090"}
	gpus := []string{"GPU-aaaa", "GPU-bbbb"}
	env := func(simulated bool, spec agent.LaunchSpec, gpus []string) []string {
		cfg, _ := (&Launcher{Simulated: simulated}).containerConfig(context.Background(), spec, "img:1", "w1", gpus, 22007, mnt)
		return cfg.Env
	}
	real := env(false, agent.LaunchSpec{RentalID: 7, GPUUUIDs: gpus, Verify: v}, gpus)
	for _, want := range []string{"SUANLI_VERIFY_URL=" + v.URL, "SUANLI_VERIFY_TOKEN=svf_abc", "SUANLI_VERIFY_AT_START=1"} {
		if !slices.Contains(real, want) {
			t.Errorf("real node: env %v lacks %s", real, want)
		}
	}
	if strings.Contains(strings.Join(real, "\n"), "SIMULATED") {
		t.Errorf("a real node's container is told of simulated GPUs: %v", real)
	}
	sim := env(true, agent.LaunchSpec{RentalID: 7, GPUUUIDs: gpus, Verify: v}, gpus)
	for _, want := range []string{"SUANLI_VERIFY_SIMULATED_UUIDS=GPU-aaaa,GPU-bbbb", "SUANLI_VERIFY_SIMULATED_NAME=NVIDIA GeForce RTX 4090"} {
		if !slices.Contains(sim, want) {
			t.Errorf("simulated node: env %v lacks %s", sim, want)
		}
	}
	noStart := *v
	noStart.AtStart = false
	if e := env(false, agent.LaunchSpec{RentalID: 7, GPUUUIDs: gpus, Verify: &noStart}, gpus); slices.Contains(e, "SUANLI_VERIFY_AT_START=1") {
		t.Errorf("a run at start nobody asked for: %v", e)
	}
	if e := env(false, agent.LaunchSpec{RentalID: 7, NoGPU: true, Verify: v}, nil); slices.Contains(e, "SUANLI_VERIFY_AT_START=1") {
		t.Errorf("a no-GPU container runs the verifier at start: %v", e)
	}
	if e := env(false, agent.LaunchSpec{RentalID: 7, GPUUUIDs: gpus}, gpus); strings.Contains(strings.Join(e, "\n"), "SUANLI_VERIFY") {
		t.Errorf("a launch without a verify spec: %v", e)
	}
}

// Every container gets the verifier beside the init.
func TestInitArchiveHasTheVerifier(t *testing.T) {
	b, err := initArchive("ssh-ed25519 AAAA k", jupyterConf{}, "")
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("no %s in the init archive", verifyPath)
		}
		if err != nil {
			t.Fatal(err)
		}
		if "/"+h.Name == verifyPath {
			body, _ := io.ReadAll(tr)
			if h.Mode != 0o755 || !strings.HasPrefix(string(body), "#!/usr/bin/env python3") {
				t.Fatalf("%s: mode %o, begins %q", verifyPath, h.Mode, body[:min(40, len(body))])
			}
			return
		}
	}
}
