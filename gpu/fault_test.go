package gpu_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"suanli/gpu"
)

// MustInject parses a fault and plays it now, or fails the test.
func MustInject(tb testing.TB, sim *gpu.Sim, spec string) {
	tb.Helper()
	f, err := gpu.ParseFault(spec)
	if err != nil {
		tb.Fatal(err)
	}
	if err := sim.Inject(f); err != nil {
		tb.Fatalf("Inject(%s): %v", spec, err)
	}
}

func TestParseFault(t *testing.T) {
	good := []struct {
		in   string
		want gpu.Fault
	}{
		{"xid:79@2:after=30s", gpu.Fault{Kind: gpu.FaultXID, XID: 79, GPU: 2, After: 30 * time.Second}},
		{"xid:48@0", gpu.Fault{Kind: gpu.FaultXID, XID: 48}},
		{"ecc@0", gpu.Fault{Kind: gpu.FaultECC}},
		{"offbus@7:after=2m", gpu.Fault{Kind: gpu.FaultOffBus, GPU: 7, After: 2 * time.Minute}},
		{"thermal@1", gpu.Fault{Kind: gpu.FaultThermal, GPU: 1}},
		{"silent", gpu.Fault{Kind: gpu.FaultSilent}},
		{"silent:after=1m30s", gpu.Fault{Kind: gpu.FaultSilent, After: 90 * time.Second}},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			f, err := gpu.ParseFault(tc.in)
			if err != nil || f != tc.want {
				t.Fatalf("ParseFault(%q) = %+v, %v; want %+v", tc.in, f, err, tc.want)
			}
			// What String writes, ParseFault reads back the same.
			again, err := gpu.ParseFault(f.String())
			if err != nil || again != f {
				t.Errorf("ParseFault(%q) = %+v, %v; want %+v", f.String(), again, err, f)
			}
		})
	}

	bad := []struct{ in, wantErr string }{
		{"", "unknown kind"},
		{"fire@0", "unknown kind"},
		{"xid@1", "XID number"},
		{"xid:abc@1", "XID number"},
		{"xid:0@1", "XID number"},
		{"ecc", "missing @GPU"},
		{"offbus@", "not an index"},
		{"thermal@x", "not an index"},
		{"ecc@-1", "not an index"},
		{"ecc:3@0", "takes no argument"},
		{"ecc@0:after=soon", "duration"},
		{"ecc@0:after=-5s", "duration"},
		{"silent@0", "names no GPU"},
	}
	for _, tc := range bad {
		t.Run("bad "+tc.in, func(t *testing.T) {
			_, err := gpu.ParseFault(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseFault(%q) error = %v, want one saying %q", tc.in, err, tc.wantErr)
			}
		})
	}
}

// TestFaultsFailExactlyTheirGPU: each fault turns the GPU it names
// unhealthy, for the reason it stands for, and leaves the others healthy.
func TestFaultsFailExactlyTheirGPU(t *testing.T) {
	cases := []struct {
		fault       string
		model       string // catalogue slug; "" for a DGX H100
		wantFailing []string
		wantReason  string
	}{
		{"xid:79@2", "", []string{"xid"}, "XID 79"},
		{"xid:48@2", "", []string{"xid"}, "XID 48 (double-bit ECC error)"},
		{"ecc@2", "", []string{"ecc_uncorrected", "row_remap"}, "1 uncorrected volatile ECC error"},
		{"ecc@2", "v100-32g-sxm2", []string{"ecc_uncorrected", "retired_pages"}, "retired pages pending"},
		{"ecc@2", "rtx-4090", []string{"ecc_uncorrected"}, "uncorrected volatile ECC"},
		{"offbus@2", "", []string{"present", "xid"}, "GPU missing (fallen off the bus?)"},
		{"thermal@2", "", []string{"temperature", "clock_events"}, "slowdown threshold"},
		{"thermal@2", "l40s", []string{"temperature", "clock_events"}, "HW thermal slowdown"},
	}
	for _, tc := range cases {
		t.Run(tc.fault+" "+tc.model, func(t *testing.T) {
			sim := MustSim(t, "dgxh100", 4)
			if tc.model != "" {
				var err error
				if sim, err = gpu.SimulateCatalog(tc.model, 4); err != nil {
					t.Fatal(err)
				}
			}
			r := MustOpen(t, sim, gpu.Options{})
			before := r.Read()
			MustInject(t, sim, tc.fault)

			for _, how := range []string{"Read", "Verify"} {
				verdicts := map[string]gpu.Verdict{}
				if how == "Read" {
					h := r.Read()
					if len(h.GPUs) != 4 {
						t.Fatalf("Read lists %d GPUs after %s, want 4", len(h.GPUs), tc.fault)
					}
					for i, g := range h.GPUs {
						if g.UUID != before.GPUs[i].UUID || g.PCIBusID != before.GPUs[i].PCIBusID || g.Name != before.GPUs[i].Name {
							t.Errorf("GPU %d inventory changed: %s %s %q, was %s %s %q", i,
								g.UUID, g.PCIBusID, g.Name, before.GPUs[i].UUID, before.GPUs[i].PCIBusID, before.GPUs[i].Name)
						}
						verdicts[g.UUID] = g.Health
					}
				} else {
					verdicts = r.Verify(sim.UUIDs())
				}
				for i, u := range sim.UUIDs() {
					v := verdicts[u]
					if i != 2 {
						if !v.Healthy {
							t.Errorf("%s: GPU %d unhealthy after a fault on GPU 2: %v", how, i, v.Reasons)
						}
						continue
					}
					if v.Healthy || !slices.Equal(failing(v), tc.wantFailing) {
						t.Errorf("%s: GPU 2 failing %v, want %v (reasons %q)", how, failing(v), tc.wantFailing, v.Reasons)
					}
					if !strings.Contains(strings.Join(v.Reasons, "\n"), tc.wantReason) {
						t.Errorf("%s: GPU 2 reasons %q, want one containing %q", how, v.Reasons, tc.wantReason)
					}
				}
			}
		})
	}
}

func TestScheduledFaultsPlayWhenDue(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	sim := MustSim(t, "dgxh100", 4, gpu.WithClock(clock))
	var faults []gpu.Fault
	for _, spec := range []string{"thermal@3:after=30s", "silent:after=1m"} {
		f, err := gpu.ParseFault(spec)
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, f)
	}
	if err := sim.Schedule(faults...); err != nil {
		t.Fatal(err)
	}
	r := MustOpen(t, sim, gpu.Options{Now: clock})

	advance(29 * time.Second)
	if g := r.Read().GPUs[3]; !g.Health.Healthy || sim.Silent() {
		t.Fatalf("at 29 s: GPU 3 healthy %v, silent %v; want healthy, not silent", g.Health.Healthy, sim.Silent())
	}
	advance(2 * time.Second)
	h := r.Read()
	if h.GPUs[3].Health.Healthy || !h.GPUs[2].Health.Healthy || sim.Silent() {
		t.Fatalf("at 31 s: GPU 3 healthy %v, GPU 2 healthy %v, silent %v; want thermal on 3 only, not silent",
			h.GPUs[3].Health.Healthy, h.GPUs[2].Health.Healthy, sim.Silent())
	}
	if !h.At.Equal(now) {
		t.Errorf("host read at %v, want the injected clock's %v", h.At, now)
	}
	advance(30 * time.Second)
	if !sim.Silent() {
		t.Error("not silent at 61 s")
	}
}

func TestInjectRejectsAGPUTheHostLacks(t *testing.T) {
	sim := MustSim(t, "dgxh100", 4)
	for _, f := range []gpu.Fault{
		{Kind: gpu.FaultECC, GPU: 4},
		{Kind: gpu.FaultXID, XID: 79, GPU: -1},
		{Kind: gpu.FaultXID, GPU: 0},
		{Kind: "melt", GPU: 0},
	} {
		if err := sim.Inject(f); err == nil {
			t.Errorf("Inject(%+v) accepted", f)
		}
		if err := sim.Schedule(f); err == nil {
			t.Errorf("Schedule(%+v) accepted", f)
		}
	}
	if err := sim.Inject(gpu.Fault{Kind: gpu.FaultSilent, GPU: 99}); err != nil || !sim.Silent() {
		t.Errorf("silent fault: %v, Silent %v", err, sim.Silent())
	}
}

// TestConcurrentReadsAndFaults is for the race detector: an agent reads
// and verifies from several goroutines while faults fire.
func TestConcurrentReadsAndFaults(t *testing.T) {
	sim := MustSim(t, "dgxh100", 8)
	r := MustOpen(t, sim, gpu.Options{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 20 {
				r.Read()
				r.Verify(sim.UUIDs()[g : g+2])
				sim.Silent()
			}
		})
	}
	for _, spec := range []string{"xid:79@0", "ecc@1", "offbus@2", "thermal@3", "silent"} {
		MustInject(t, sim, spec)
	}
	wg.Wait()
	h := r.Read()
	for i, g := range h.GPUs {
		if g.Health.Healthy != (i >= 4) {
			t.Errorf("GPU %d healthy %v", i, g.Health.Healthy)
		}
	}
}
