package agent_test

import (
	"context"
	"slices"
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
