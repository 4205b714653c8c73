package fleet

import (
	"strings"
	"testing"
	"time"

	"suanli/catalog"
	"suanli/gpu"
	"suanli/models"
)

func TestNodeHealthOf(t *testing.T) {
	if h := nodeHealthOf(gpu.Host{}); h != models.NodeHealthy {
		t.Errorf("NVML read: %s", h)
	}
	if h := nodeHealthOf(gpu.Host{InitError: "libnvidia-ml.so not found"}); h != models.NodeNoNVML {
		t.Errorf("NVML unreadable: %s", h)
	}
}

func TestGPUVerdict(t *testing.T) {
	m, ok := catalog.GPUModelBySlug("h100-sxm")
	if !ok {
		t.Fatal("no h100-sxm in the catalogue")
	}
	name := "NVIDIA " + m.NVMLNameContains + " 80GB HBM3"
	healthy := gpu.Info{Name: name, Health: gpu.Verdict{Healthy: true}}
	if h, r, msg := gpuVerdict(healthy, m.Slug); h != models.GPUHealthy || r != "" || msg.Key != "" {
		t.Errorf("healthy: %s %q %v", h, r, msg)
	}
	failing := gpu.Info{Name: name, Health: gpu.Verdict{Reasons: []string{"xid 79", "ecc"},
		Checks: []gpu.Check{{Name: "xid", Detail: "xid 79"}, {Name: "ecc_uncorrected", Detail: "ecc"}, {Name: "temperature", OK: true}}}}
	if h, r, msg := gpuVerdict(failing, m.Slug); h != models.GPUFailing || r != "xid 79\necc" || msg.Key == "" {
		t.Errorf("failing: %s %q %v", h, r, msg)
	}
	gone := gpu.Info{Name: name, Health: gpu.Verdict{Checks: []gpu.Check{{Name: "present", Detail: "fallen off the bus"}}}}
	if h, _, _ := gpuVerdict(gone, m.Slug); h != models.GPUMissing {
		t.Errorf("not present: %s", h)
	}
	// Another model than the node lists fails, whatever NVML says of it.
	other := gpu.Info{Name: "NVIDIA GeForce GT 710", Health: gpu.Verdict{Healthy: true}}
	h, r, msg := gpuVerdict(other, m.Slug)
	if h != models.GPUFailing || !strings.Contains(r, "GT 710") || !strings.Contains(r, m.Name) || msg.Key == "" {
		t.Errorf("model mismatch: %s %q %v", h, r, msg)
	}
	// A node whose model is not known yet checks nothing more.
	if h, _, _ := gpuVerdict(other, ""); h != models.GPUHealthy {
		t.Errorf("node without a model: %s", h)
	}
}

func TestReadingStale(t *testing.T) {
	now := time.Now()
	recent := now.Add(-10 * time.Second)
	old := now.Add(-30 * time.Second)
	g := gpu.Info{UUID: "GPU-1", Name: "H100"}
	cur := &models.GPU{UUID: "GPU-1", Name: "H100", Health: models.GPUHealthy, CheckedAt: &recent}
	if readingStale(cur, g, models.GPUHealthy, "", now) {
		t.Error("an unchanged reading 10 s old is rewritten")
	}
	if !readingStale(cur, g, models.GPUFailing, "", now) || !readingStale(cur, g, models.GPUHealthy, "xid", now) {
		t.Error("a changed verdict waits")
	}
	if !readingStale(cur, gpu.Info{UUID: "GPU-2", Name: "H100"}, models.GPUHealthy, "", now) ||
		!readingStale(cur, gpu.Info{UUID: "GPU-1", Name: "H200"}, models.GPUHealthy, "", now) {
		t.Error("a changed identity waits")
	}
	cur.CheckedAt = &old
	if !readingStale(cur, g, models.GPUHealthy, "", now) {
		t.Error("a reading 30 s old is kept")
	}
	cur.CheckedAt = nil
	if !readingStale(cur, g, models.GPUHealthy, "", now) {
		t.Error("a GPU never checked is not written")
	}
}

func TestHealthMoveOf(t *testing.T) {
	for _, c := range []struct {
		health  models.GPUHealth
		state   models.GPUState
		verdict models.GPUHealth
		want    healthMove
	}{
		{models.GPUHealthy, models.GPUFree, models.GPUHealthy, healthMove{}},
		{models.GPUFailing, models.GPUUnhealthy, models.GPUHealthy, healthMove{closeIncident: true, release: true}},
		{models.GPUMissing, models.GPUBusy, models.GPUHealthy, healthMove{closeIncident: true}},
		{models.GPUHealthUnknown, models.GPUUnhealthy, models.GPUHealthy, healthMove{release: true}},
		{models.GPUHealthy, models.GPUFree, models.GPUFailing, healthMove{failing: true}},
		{models.GPUFailing, models.GPUBusy, models.GPUMissing, healthMove{failing: true}},
	} {
		if got := healthMoveOf(&models.GPU{Health: c.health, State: c.state}, c.verdict); got != c.want {
			t.Errorf("%s/%s → %s: %+v, want %+v", c.health, c.state, c.verdict, got, c.want)
		}
	}
}

func TestInventoryOf(t *testing.T) {
	n := &models.Node{GPUModel: "h100-sxm"}
	inv := inventoryOf(n, []models.GPU{
		{Name: "NVIDIA H100", GPUModel: "h100-sxm", Health: models.GPUHealthy},
		{Name: "NVIDIA H100 b", GPUModel: "h100-sxm", Health: models.GPUFailing},
		{Name: "other", GPUModel: "a100-80g-sxm", Health: models.GPUHealthy},
	})
	if inv != (NodeInventory{GPUs: 3, Healthy: 1, Name: "NVIDIA H100"}) {
		t.Errorf("inventory %+v", inv)
	}
}
