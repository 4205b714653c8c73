package catalog

import "testing"

func TestCatalogueMatchesSharedFigures(t *testing.T) {
	ms := GPUModels()
	if len(ms) != 12 {
		t.Fatalf("got %d models, want the 12 in gpus.csv", len(ms))
	}
	h100, ok := GPUModelBySlug("h100-sxm")
	if !ok {
		t.Fatal("h100-sxm missing")
	}
	if h100.VRAMGB != 80 || h100.MemBWGBps != 3350 || h100.BF16TFLOPS != 989 || h100.Source == "" {
		t.Errorf("h100-sxm = %+v", h100)
	}
	v100, _ := GPUModelBySlug("v100-32g-sxm2")
	if v100.BF16TFLOPS != 0 || v100.TensorTFLOPS() != 125 {
		t.Errorf("v100 has no BF16; tensor figure falls back to FP16: %+v", v100)
	}
	for _, m := range ms {
		if m.Source == "" || m.VRAMGB <= 0 || m.MemBWGBps <= 0 || m.TensorTFLOPS() <= 0 {
			t.Errorf("%s: incomplete figures %+v", m.Slug, m)
		}
	}
}

func TestInterconnectMatches(t *testing.T) {
	cases := []struct {
		offer, filter string
		want          bool
	}{
		{InterconnectNVLinkIB, "nvlink", true},
		{InterconnectNVLinkIB, "infiniband", true},
		{InterconnectNVLink, "infiniband", false},
		{InterconnectPCIe, "nvlink", false},
		{InterconnectPCIe, "pcie", true},
		{InterconnectPCIe, "bogus", false},
	}
	for _, c := range cases {
		if got := InterconnectMatches(c.offer, c.filter); got != c.want {
			t.Errorf("InterconnectMatches(%q,%q) = %v", c.offer, c.filter, got)
		}
	}
}
