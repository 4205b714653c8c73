package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"suanli/agent"
	"suanli/gpu"
)

func mustSimReader(tb testing.TB, sim *gpu.Sim, opts gpu.Options) *gpu.Reader {
	tb.Helper()
	r, err := gpu.Open(sim, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return r
}

// lastGPU returns GPU i of the last heartbeat, if it had one.
func lastGPU(f *fakeServer, uuid string) (gpu.Info, bool) {
	for _, g := range f.heartbeatSeen().Host.GPUs {
		if g.UUID == uuid {
			return g, true
		}
	}
	return gpu.Info{}, false
}

// Item 6: a critical XID is kept in the state file, restored by a
// restarted agent, and forgotten only by a clear_xids task.
func TestCriticalXIDsSurviveRestartsUntilCleared(t *testing.T) {
	f, srv := newFakeServer(t)
	sim, err := gpu.Simulate("dgxh100", 2)
	if err != nil {
		t.Fatal(err)
	}
	u := sim.UUIDs()[1]
	cfg := testConfig(t, srv)
	cfg.StateFile = filepath.Join(t.TempDir(), "agent.json")

	start := func() (stop func()) {
		r := mustSimReader(t, sim, gpu.Options{})
		cfg.GPUs = r
		stopAgent := mustRun(t, cfg)
		return func() {
			stopAgent()
			if err := r.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	unhealthyWithXID := func() bool {
		g, ok := lastGPU(f, u)
		return ok && !g.Health.Healthy && strings.Contains(strings.Join(g.Health.Reasons, ";"), "XID 48")
	}
	stateHolds := func(s string) bool {
		b, _ := os.ReadFile(cfg.StateFile)
		return strings.Contains(string(b), s)
	}

	stop := start()
	eventually(t, "a registered agent", func() bool { return stateHolds("node-credential") })
	MustInjectAgent(t, sim, "xid:48@1")
	eventually(t, "GPU 1 unhealthy after XID 48", unhealthyWithXID)
	eventually(t, "the XID in the state file", func() bool { return stateHolds(`"critical_xids"`) && stateHolds(u) })
	stop()

	f.mu.Lock()
	f.lastHB = agent.Heartbeat{}
	f.mu.Unlock()
	stop = start()
	eventually(t, "the restarted agent reporting GPU 1 unhealthy", unhealthyWithXID)
	if g, _ := lastGPU(f, sim.UUIDs()[0]); !g.Health.Healthy {
		t.Errorf("GPU 0 unhealthy: %v", g.Health.Reasons)
	}

	f.tasks <- agent.Task{ID: 7, Kind: agent.TaskClearXIDs, GPUUUIDs: []string{u}}
	if res := mustResult(t, f, 7); !res.OK {
		t.Fatalf("clear_xids: %+v", res)
	}
	eventually(t, "GPU 1 healthy after the clear", func() bool { g, ok := lastGPU(f, u); return ok && g.Health.Healthy })
	if stateHolds(`"critical_xids"`) || !stateHolds("node-credential") {
		b, _ := os.ReadFile(cfg.StateFile)
		t.Errorf("state file after the clear: %s", b)
	}
	stop()

	f.mu.Lock()
	f.lastHB = agent.Heartbeat{}
	f.mu.Unlock()
	start()
	eventually(t, "a heartbeat after the second restart", func() bool { _, ok := lastGPU(f, u); return ok })
	if g, _ := lastGPU(f, u); !g.Health.Healthy {
		t.Errorf("a cleared XID came back after a restart: %v", g.Health.Reasons)
	}
}

// MustInjectAgent plays a fault on a simulated host now.
func MustInjectAgent(tb testing.TB, sim *gpu.Sim, spec string) {
	tb.Helper()
	fl, err := gpu.ParseFault(spec)
	if err != nil {
		tb.Fatal(err)
	}
	if err := sim.Inject(fl); err != nil {
		tb.Fatal(err)
	}
}

// Item 7: while nvml.Init fails the heartbeat says "no NVML (retrying)";
// once a retry succeeds the GPUs are reported, without a restart.
func TestHeartbeatSaysNoNVMLWhileInitIsRetried(t *testing.T) {
	f, srv := newFakeServer(t)
	sim, err := gpu.Simulate("dgxh100", 2)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	var driverUp atomic.Bool
	init := sim.InitFunc
	sim.InitFunc = func() nvml.Return {
		if !driverUp.Load() {
			return nvml.ERROR_DRIVER_NOT_LOADED
		}
		return init()
	}
	r, err := gpu.Open(sim, gpu.Options{Now: clock})
	if err == nil {
		t.Fatal("Open succeeded without a driver")
	}
	t.Cleanup(func() { _ = r.Close() })
	cfg := testConfig(t, srv)
	cfg.GPUs = r
	mustRun(t, cfg)

	eventually(t, "a heartbeat saying no NVML (retrying)", func() bool {
		return strings.HasPrefix(f.heartbeatSeen().Host.InitError, "no NVML (retrying): NVML init: ERROR_DRIVER_NOT_LOADED")
	})
	driverUp.Store(true)
	mu.Lock()
	at = at.Add(time.Minute)
	mu.Unlock()
	eventually(t, "a heartbeat with the GPUs", func() bool {
		h := f.heartbeatSeen().Host
		return h.InitError == "" && len(h.GPUs) == 2 && h.GPUs[0].Health.Healthy
	})
}

// Item 1: an agent started while two GPUs answer GPU_IS_LOST and
// NO_PERMISSION reports their slots as unreadable placeholders, never as
// GPUs with UUID "", and the other GPUs as usual.
func TestHeartbeatReportsUnreadableSlotsApart(t *testing.T) {
	f, srv := newFakeServer(t)
	sim, err := gpu.Simulate("dgxh100", 8)
	if err != nil {
		t.Fatal(err)
	}
	byIndex := sim.DeviceGetHandleByIndexFunc
	sim.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		switch i {
		case 2:
			return nil, nvml.ERROR_GPU_IS_LOST
		case 5:
			return nil, nvml.ERROR_NO_PERMISSION
		}
		return byIndex(i)
	}
	r := mustSimReader(t, sim, gpu.Options{})
	t.Cleanup(func() { _ = r.Close() })
	cfg := testConfig(t, srv)
	cfg.GPUs = r
	mustRun(t, cfg)
	eventually(t, "a heartbeat with GPUs", func() bool { return len(f.heartbeatSeen().Host.GPUs) > 0 })
	seen := map[string]bool{}
	for i, g := range f.heartbeatSeen().Host.GPUs {
		if g.UUID == "" || seen[g.UUID] {
			t.Errorf("slot %d: UUID %q empty or repeated", i, g.UUID)
		}
		seen[g.UUID] = true
		if bad := i == 2 || i == 5; bad != g.Unreadable || bad == g.Health.Healthy {
			t.Errorf("slot %d: %s unreadable %v healthy %v", i, g.UUID, g.Unreadable, g.Health.Healthy)
		}
	}
}
