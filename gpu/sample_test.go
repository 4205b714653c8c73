package gpu_test

import (
	"slices"
	"strings"
	"testing"

	"suanli/gpu"
)

func TestSamplerReadsTelemetryOfTheGPUsNamed(t *testing.T) {
	sim := MustSim(t, "dgxh100", 4)
	r := MustOpen(t, sim, gpu.Options{})
	uuids := sim.UUIDs()
	s := r.NewSampler([]string{uuids[2], uuids[1]})
	defer s.Close()

	got := s.Sample()
	if len(got) != 2 || got[0].UUID != uuids[2] || got[1].UUID != uuids[1] || got[0].Index != 2 || got[1].Index != 1 {
		t.Fatalf("readings = %+v, want GPUs 2 and 1 in that order", got)
	}
	for _, rd := range got {
		if rd.Err != "" || rd.T.TemperatureC <= 0 || rd.T.PowerW <= 0 || rd.T.PowerLimitW != 700 ||
			rd.T.SMClockMHz <= 0 || rd.T.MemClockMHz <= 0 || rd.T.MemoryUsedMiB == 0 || len(rd.XIDs) != 0 {
			t.Errorf("GPU %d: %+v", rd.Index, rd)
		}
	}
}

// TestSamplerSeesEveryXIDWhateverReadDrains: the heartbeat's Read drains
// the Reader's own event sets; a benchmark's sampler still sees every XID
// raised while it runs, repeats and application XIDs included.
func TestSamplerSeesEveryXIDWhateverReadDrains(t *testing.T) {
	sim := MustSim(t, "dgxh100", 4)
	r := MustOpen(t, sim, gpu.Options{})
	uuids := sim.UUIDs()
	s := r.NewSampler(uuids[1:3])
	defer s.Close()

	for _, f := range []gpu.Fault{{Kind: gpu.FaultXID, XID: 48, GPU: 1}, {Kind: gpu.FaultXID, XID: 13, GPU: 2}, {Kind: gpu.FaultXID, XID: 48, GPU: 1}} {
		if err := sim.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	if h := r.Read(); h.GPUs[1].Health.Healthy {
		t.Fatalf("GPU 1 healthy after XID 48: %+v", h.GPUs[1].Health)
	}
	got := s.Sample()
	if !slices.Equal(got[0].XIDs, []int{48, 48}) || !slices.Equal(got[1].XIDs, []int{13}) {
		t.Errorf("XIDs = %v and %v, want [48 48] and [13]", got[0].XIDs, got[1].XIDs)
	}
	if again := s.Sample(); len(again[0].XIDs)+len(again[1].XIDs) != 0 {
		t.Errorf("XIDs reported twice: %v, %v", again[0].XIDs, again[1].XIDs)
	}

	if err := sim.Inject(gpu.Fault{Kind: gpu.FaultOffBus, GPU: 2}); err != nil {
		t.Fatal(err)
	}
	got = s.Sample()
	if lost := got[1]; lost.Err == "" || lost.T != (gpu.Telemetry{}) || !slices.Equal(lost.XIDs, []int{79}) || lost.Index != 2 {
		t.Errorf("GPU off the bus read as %+v, want an error, no telemetry and XID 79", lost)
	}
	if got[0].Err != "" {
		t.Errorf("GPU 1 not read: %s", got[0].Err)
	}
}

func TestSamplerOnAMissingGPUAndAfterClose(t *testing.T) {
	sim := MustSim(t, "dgxh100", 2)
	r := MustOpen(t, sim, gpu.Options{})
	s := r.NewSampler([]string{"GPU-nope", sim.UUIDs()[0]})
	got := s.Sample()
	if got[0].Err == "" || got[0].Index != -1 || got[1].Err != "" {
		t.Errorf("readings = %+v, want GPU-nope unreadable and GPU 0 read", got)
	}
	s.Close()
	s.Close()
	for _, rd := range s.Sample() {
		if !strings.Contains(rd.Err, "closed") {
			t.Errorf("after Close: %+v", rd)
		}
	}

	s2 := r.NewSampler(sim.UUIDs())
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, rd := range s2.Sample() {
		if !strings.Contains(rd.Err, "closed") {
			t.Errorf("after the Reader's Close: %+v", rd)
		}
	}
	s2.Close()
}
