package docker

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"suanli/agent"
)

// What the container asks the daemon for GPUs: exactly the rented ones,
// for the device request and for the NVIDIA runtime's environment, or
// none at all. (The daemon's side of it is in docker_test.go.)
func TestContainerConfigGPUs(t *testing.T) {
	mnt := mount.Mount{Type: mount.TypeVolume, Source: "suanli-ws-w1", Target: "/workspace"}
	spec := agent.LaunchSpec{RentalID: 7, GPUUUIDs: []string{"GPU-aaaa", "GPU-bbbb"}}
	tests := []struct {
		name      string
		simulated bool
		gpus      []string
		devices   []container.DeviceRequest
		visible   string
	}{
		{"rented GPUs", false, spec.GPUUUIDs,
			[]container.DeviceRequest{{Driver: "nvidia", DeviceIDs: []string{"GPU-aaaa", "GPU-bbbb"}, Capabilities: [][]string{{"gpu"}}}},
			"GPU-aaaa,GPU-bbbb"},
		{"no GPU (无卡模式)", false, nil, nil, "void"},
		{"simulated GPUs", true, spec.GPUUUIDs, nil, "GPU-aaaa,GPU-bbbb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Launcher{Simulated: tt.simulated}
			cfg, host := d.containerConfig(context.Background(), spec, "img:1", "w1", tt.gpus, 22007, mnt)
			if !equalDevices(host.DeviceRequests, tt.devices) {
				t.Errorf("device requests = %+v, want %+v", host.DeviceRequests, tt.devices)
			}
			if !slices.Contains(cfg.Env, "NVIDIA_VISIBLE_DEVICES="+tt.visible) {
				t.Errorf("env = %v, want NVIDIA_VISIBLE_DEVICES=%s", cfg.Env, tt.visible)
			}
			if got := cfg.Labels[LabelSimulated] == "true"; got != tt.simulated {
				t.Errorf("labels = %v", cfg.Labels)
			}
			if !slices.Equal(cfg.Entrypoint, []string{"/bin/sh", initPath}) {
				t.Errorf("entrypoint = %v", cfg.Entrypoint)
			}
		})
	}
}

// The container's environment keeps the renter's variables but none
// that would widen what the NVIDIA runtime hands it: the launcher's own
// values win, and the runtime's shared-device switches are off whatever
// the renter or the image says.
func TestContainerEnvReservesTheNVIDIARuntimesSwitches(t *testing.T) {
	d := &Launcher{}
	spec := agent.LaunchSpec{RentalID: 7, Env: map[string]string{
		"HF_TOKEN": "hf", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "NVIDIA_REQUIRE_CUDA": "cuda>=12.0",
		"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_NVSWITCH": "enabled", "NVIDIA_MOFED": "enabled",
		"NVIDIA_GDS": "enabled", "NVIDIA_GDRCOPY": "enabled", "NVIDIA_IMEX_CHANNELS": "0", "SUANLI_VERIFY_TOKEN": "mine",
	}}
	env := d.containerEnv(spec, "GPU-aaaa", []string{"GPU-aaaa"})
	for _, want := range []string{
		"HF_TOKEN=hf", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "NVIDIA_REQUIRE_CUDA=cuda>=12.0",
		"NVIDIA_VISIBLE_DEVICES=GPU-aaaa", "NVIDIA_NVSWITCH=disabled", "NVIDIA_MOFED=disabled",
		"NVIDIA_GDS=disabled", "NVIDIA_GDRCOPY=disabled",
	} {
		if !slices.Contains(env, want) {
			t.Errorf("env = %v, want %s in it", env, want)
		}
	}
	seen := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if seen[name] {
			t.Errorf("env = %v: %s twice", env, name)
		}
		seen[name] = true
	}
	for _, bad := range []string{"NVIDIA_IMEX_CHANNELS", "SUANLI_VERIFY_TOKEN"} {
		if seen[bad] {
			t.Errorf("env = %v: the renter's %s passed", env, bad)
		}
	}
}

func equalDevices(a, b []container.DeviceRequest) bool {
	return slices.EqualFunc(a, b, func(x, y container.DeviceRequest) bool {
		return x.Driver == y.Driver && x.Count == y.Count && slices.Equal(x.DeviceIDs, y.DeviceIDs) &&
			slices.EqualFunc(x.Capabilities, y.Capabilities, func(p, q []string) bool { return slices.Equal(p, q) })
	})
}

func TestCUDACompatible(t *testing.T) {
	tests := []struct {
		image, driver string
		ok            bool
	}{
		{"12.4.1", "12.4", true},
		{"12.8", "12.4", false},
		{"12.10", "12.9", false}, // numerically, not as text
		{"12.9", "12.10", true},
		{"11.8.0", "12.4", true},
		{"13.0", "12.9", false},
		{"", "12.4", true}, // no CUDA_VERSION: nothing to check
		{"12.8", "", true}, // no NVML figure
		{"garbage", "12.4", true},
	}
	for _, tt := range tests {
		err := cudaCompatible(tt.image, tt.driver)
		if (err == nil) != tt.ok {
			t.Errorf("cudaCompatible(%q, %q) = %v, want ok %v", tt.image, tt.driver, err, tt.ok)
		}
	}
	err := cudaCompatible("12.8.1", "12.4")
	if err == nil || err.Error() != "image needs CUDA 12.8, this node's driver supports CUDA 12.4" {
		t.Errorf("err = %v", err)
	}
}

// A pull stream as Docker 20.10 sends it, shortened: the percentage
// rises with the bytes downloaded and extracted, never falls, and stays
// below 100 until the stream ends.
func TestPullProgress(t *testing.T) {
	msg := func(id, status string, cur, total int64) pullMessage {
		m := pullMessage{ID: id, Status: status}
		if total > 0 {
			m.Progress = &struct {
				Current int64 `json:"current"`
				Total   int64 `json:"total"`
			}{cur, total}
		}
		return m
	}
	stream := []struct {
		m    pullMessage
		want int
	}{
		{pullMessage{Status: "Pulling from suanli/x"}, 0},
		{msg("a", "Already exists", 0, 0), 0},
		{msg("b", "Pulling fs layer", 0, 0), 0},
		{msg("c", "Pulling fs layer", 0, 0), 0},
		{msg("b", "Downloading", 50, 100), 25},
		{msg("b", "Download complete", 0, 0), 50},
		{msg("c", "Downloading", 100, 300), 50}, // c's size lowers the share: held
		{msg("b", "Extracting", 100, 100), 50},
		{msg("b", "Pull complete", 0, 0), 50},
		{msg("c", "Downloading", 300, 300), 62},
		{msg("c", "Extracting", 300, 300), 99},
		{msg("c", "Pull complete", 0, 0), 99},
	}
	var p pullProgress
	for i, s := range stream {
		if got := p.add(s.m); got != s.want {
			t.Errorf("message %d (%s %s): pct %d, want %d", i, s.m.ID, s.m.Status, got, s.want)
		}
	}
}
