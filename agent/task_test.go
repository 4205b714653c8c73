package agent_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"suanli/agent"
)

// recordingLauncher remembers the specs it was asked to launch.
type recordingLauncher struct {
	agent.SimulatedLauncher
	mu    sync.Mutex
	specs []agent.LaunchSpec
}

func (l *recordingLauncher) Launch(ctx context.Context, spec agent.LaunchSpec) (*agent.Access, error) {
	l.mu.Lock()
	l.specs = append(l.specs, spec)
	l.mu.Unlock()
	return l.SimulatedLauncher.Launch(ctx, spec)
}

func (l *recordingLauncher) launched() []agent.LaunchSpec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.specs)
}

func TestLaunchTaskPassesImageLimitsAndNoGPU(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	l := &recordingLauncher{}
	cfg.Launcher = l
	mustRun(t, cfg)

	limits := &agent.Limits{CPUs: 8, MemoryMiB: 32768, ShmMiB: 4096}
	f.tasks <- agent.Task{ID: 1, Kind: agent.TaskLaunch, RentalID: 5, WorkspaceID: "w5", NoGPU: true,
		Image: "suanli/pytorch:2.5", RegistryAuth: "e30", VolumeGB: 50, Limits: limits}
	if res := mustResult(t, f, 1); !res.OK {
		t.Fatalf("a no-GPU launch failed: %+v", res)
	}
	got := l.launched()[0]
	if !got.NoGPU || len(got.GPUUUIDs) != 0 || got.Image != "suanli/pytorch:2.5" || got.RegistryAuth != "e30" ||
		got.VolumeGB != 50 || got.Limits == nil || *got.Limits != *limits || got.Progress == nil {
		t.Errorf("launch spec = %+v", got)
	}

	f.tasks <- agent.Task{ID: 2, Kind: agent.TaskLaunch, RentalID: 6, WorkspaceID: "w6"}
	if res := mustResult(t, f, 2); res.OK {
		t.Error("a launch naming no GPUs, without no_gpu, succeeded")
	}
}

func TestDeleteVolumeTask(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	l := &agent.SimulatedLauncher{}
	cfg.Launcher = l
	mustRun(t, cfg)

	f.tasks <- agent.Task{ID: 1, Kind: agent.TaskLaunch, RentalID: 4, WorkspaceID: "w4", GPUUUIDs: []string{"GPU-a"}}
	mustResult(t, f, 1)
	f.tasks <- agent.Task{ID: 2, Kind: agent.TaskDeleteVolume, RentalID: 4, WorkspaceID: "w4"}
	if res := mustResult(t, f, 2); !res.OK {
		t.Fatalf("delete_volume result = %+v", res)
	}
	if got := l.DeletedVolumes(); !slices.Equal(got, []string{"w4"}) || len(l.Running()) != 0 {
		t.Errorf("deleted %v, running %v; want w4 deleted and nothing running", got, l.Running())
	}
	f.tasks <- agent.Task{ID: 3, Kind: agent.TaskDeleteVolume}
	if res := mustResult(t, f, 3); res.OK {
		t.Error("a delete_volume naming nothing succeeded")
	}
}

// A launch task's environment and on-start script reach the launcher,
// less the names launchers set themselves; absurd sizes and names that
// are no variable's fail the task, naming what is wrong.
func TestLaunchTaskPassesEnvAndOnstart(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	l := &recordingLauncher{}
	cfg.Launcher = l
	mustRun(t, cfg)

	f.tasks <- agent.Task{ID: 1, Kind: agent.TaskLaunch, RentalID: 5, WorkspaceID: "w5", GPUUUIDs: []string{"GPU-a"},
		Env:     map[string]string{"HF_TOKEN": "a b'c$d", "SUANLI_VERIFY_TOKEN": "mine", "NVIDIA_VISIBLE_DEVICES": "all"},
		Onstart: "pip install -r requirements.txt\n"}
	res := mustResult(t, f, 1)
	if !res.OK || res.Access == nil || !res.Access.Simulated {
		t.Fatalf("launch result = %+v, want a simulated success", res)
	}
	got := l.launched()[0]
	if !maps.Equal(got.Env, map[string]string{"HF_TOKEN": "a b'c$d"}) || got.Onstart != "pip install -r requirements.txt\n" {
		t.Errorf("launch spec env %v, onstart %q", got.Env, got.Onstart)
	}
	t.Run("the simulated launcher records them and runs nothing", func(t *testing.T) {
		spec, ok := l.Launched(5)
		if !ok || spec.Env["HF_TOKEN"] != "a b'c$d" || spec.Onstart != got.Onstart {
			t.Errorf("recorded %v %+v", ok, spec)
		}
	})

	for i, tc := range []struct {
		name    string
		env     map[string]string
		onstart string
		want    string
	}{
		{"an onstart over 64 KiB", nil, strings.Repeat("x", agent.MaxOnstartBytes+1), "onstart is 65537 bytes, more than the 65536"},
		{"an env over 64 KiB", map[string]string{"A": strings.Repeat("x", agent.MaxEnvBytes/2), "B": strings.Repeat("x", agent.MaxEnvBytes/2)}, "", "env is 65538 bytes"},
		{"a name with =", map[string]string{"A=B": "x"}, "", `env name "A=B" is not a variable name`},
		{"a name starting with a digit", map[string]string{"1A": "x"}, "", `env name "1A"`},
		{"a value with a NUL", map[string]string{"A": "x\x00y"}, "", "env A: the value holds a NUL byte"},
	} {
		t.Run(tc.name+" fails the task", func(t *testing.T) {
			id := int64(10 + i)
			f.tasks <- agent.Task{ID: id, Kind: agent.TaskLaunch, RentalID: id, GPUUUIDs: []string{"GPU-a"}, Env: tc.env, Onstart: tc.onstart}
			res := mustResult(t, f, id)
			if res.OK || !strings.Contains(res.Error, tc.want) {
				t.Errorf("result = %+v, want an error with %q", res, tc.want)
			}
		})
	}
	if n := len(l.launched()); n != 1 {
		t.Errorf("the launcher was asked %d times, want once", n)
	}
}

// A renter may set no SUANLI_* variable and no NVIDIA_* variable that
// widens what the NVIDIA runtime hands the container (its GPUs, its
// NVSwitch and InfiniBand switches, names it may read later), only the
// ones that narrow it.
func TestReservedEnvName(t *testing.T) {
	for _, name := range []string{
		"SUANLI_VERIFY_TOKEN", "SUANLI_ANYTHING", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES",
		"NVIDIA_IMEX_CHANNELS", "NVIDIA_NVSWITCH", "NVIDIA_MOFED", "NVIDIA_GDS", "NVIDIA_GDRCOPY", "NVIDIA_SOMETHING_NEW",
	} {
		if !agent.ReservedEnvName(name) {
			t.Errorf("ReservedEnvName(%s) = false, want true", name)
		}
	}
	for _, name := range []string{
		"HF_TOKEN", "PATH", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA", "NVIDIA_REQUIRE_DRIVER",
		"NVIDIA_DISABLE_REQUIRE", "NVIDIA", "suanli_lower", "CUDA_VISIBLE_DEVICES",
	} {
		if agent.ReservedEnvName(name) {
			t.Errorf("ReservedEnvName(%s) = true, want false", name)
		}
	}
}
