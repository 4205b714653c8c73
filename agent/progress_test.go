package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"suanli/agent"
)

// pullingLauncher runs pull, which may report progress as an image pull
// would, before it launches.
type pullingLauncher struct {
	agent.SimulatedLauncher
	pull func(report func(agent.Progress))
}

func (l *pullingLauncher) Launch(ctx context.Context, spec agent.LaunchSpec) (*agent.Access, error) {
	if l.pull != nil && spec.Progress != nil {
		l.pull(spec.Progress)
	}
	return l.SimulatedLauncher.Launch(ctx, spec)
}

func pull(pct int) agent.Progress {
	return agent.Progress{Stage: "pull", Pct: pct, Detail: "suanli/x:1"}
}

func TestLaunchProgressIsPostedAtMostOnceASecond(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	cfg.Launcher = &pullingLauncher{pull: func(report func(agent.Progress)) {
		report(pull(10))
		eventually(t, "the first progress post", func() bool { p, _ := f.progressFor(1); return len(p) == 1 })
		// Within the next second: only the latest of these is sent, once
		// the second is over.
		for _, pct := range []int{10, 20, 35, 50} {
			report(pull(pct))
		}
		eventually(t, "the second progress post", func() bool { p, _ := f.progressFor(1); return len(p) == 2 })
	}}
	mustRun(t, cfg)

	f.tasks <- agent.Task{ID: 1, Kind: agent.TaskLaunch, RentalID: 1, WorkspaceID: "w1", GPUUUIDs: []string{"GPU-a"}, Image: "suanli/x:1"}
	if res := mustResult(t, f, 1); !res.OK {
		t.Fatalf("launch result = %+v", res)
	}
	posts, _ := f.progressFor(1)
	var pcts []int
	for _, p := range posts {
		pcts = append(pcts, p.Pct)
		if p.Stage != "pull" || p.Detail != "suanli/x:1" {
			t.Errorf("progress = %+v, want stage pull for the image", p.Progress)
		}
	}
	if !slices.Equal(pcts, []int{10, 50}) {
		t.Errorf("progress posted = %v, want [10 50]: the first, then the latest a second later", pcts)
	}
	if gap := posts[1].At.Sub(posts[0].At); gap < 900*time.Millisecond {
		t.Errorf("second progress post %v after the first, want about a second", gap)
	}
}

func TestLaunchProgressStopsQuietlyOnAnOlderServer(t *testing.T) {
	f, srv := newFakeServer(t)
	f.noProgress = true
	cfg := testConfig(t, srv)
	cfg.Launcher = &pullingLauncher{pull: func(report func(agent.Progress)) {
		report(pull(10))
		eventually(t, "the progress request", func() bool { _, n := f.progressFor(1); return n == 1 })
		report(pull(60))
	}}
	mustRun(t, cfg)

	f.tasks <- agent.Task{ID: 1, Kind: agent.TaskLaunch, RentalID: 1, WorkspaceID: "w1", GPUUUIDs: []string{"GPU-a"}}
	if res := mustResult(t, f, 1); !res.OK {
		t.Fatalf("launch result = %+v, want the launch to succeed without progress", res)
	}
	if _, n := f.progressFor(1); n != 1 {
		t.Errorf("%d progress requests, want 1: after a 404 the agent sends no more", n)
	}
}

// listingLauncher reports fixed local images and a shared volume root.
type listingLauncher struct {
	agent.SimulatedLauncher
	images []agent.LocalImage
	root   string
}

func (l *listingLauncher) LocalImages(context.Context) ([]agent.LocalImage, error) {
	return l.images, nil
}
func (l *listingLauncher) SharedVolumeRoot() string { return l.root }

func TestHeartbeatCarriesImagesAndVolumeRoot(t *testing.T) {
	f, srv := newFakeServer(t)
	cfg := testConfig(t, srv)
	images := []agent.LocalImage{{Refs: []string{"suanli/pytorch:2.5-cuda12.4"}, ID: "sha256:aa", SizeBytes: 9 << 30, CUDAVersion: "12.4.1"}}
	cfg.Launcher = &listingLauncher{images: images, root: "/mnt/suanli-volumes"}
	mustRun(t, cfg)

	eventually(t, "a heartbeat with images", func() bool { return len(f.heartbeatSeen().Images) > 0 })
	hb := f.heartbeatSeen()
	if !slices.EqualFunc(hb.Images, images, func(a, b agent.LocalImage) bool {
		return slices.Equal(a.Refs, b.Refs) && a.ID == b.ID && a.SizeBytes == b.SizeBytes && a.CUDAVersion == b.CUDAVersion
	}) {
		t.Errorf("heartbeat images = %+v, want %+v", hb.Images, images)
	}
	if hb.VolumeRoot != "/mnt/suanli-volumes" {
		t.Errorf("heartbeat volume root = %q", hb.VolumeRoot)
	}
}
