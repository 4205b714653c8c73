package benchmarks

import (
	"testing"

	"suanli/models"
)

func TestStatusOf(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name  string
		facts Facts
		ind   Independent
		want  Status
	}{
		{"agent only", Facts{TFLOPS: f(794)}, Independent{}, StatusUnverified},
		{"no tensor figure", Facts{}, Independent{AuditRuns: 3, AuditMedianTFLOPS: 790}, StatusUnverified},
		{"renters agree", Facts{TFLOPS: f(794)}, Independent{RenterRuns: 4, RenterMedianTFLOPS: 770}, StatusVerified},
		{"audit agrees at the tolerance", Facts{TFLOPS: f(115)}, Independent{AuditRuns: 1, AuditMedianTFLOPS: 100}, StatusVerified},
		{"audit disagrees", Facts{TFLOPS: f(794)}, Independent{AuditRuns: 2, AuditMedianTFLOPS: 600}, StatusDisputed},
		{"one witness disagrees, one agrees", Facts{TFLOPS: f(794)},
			Independent{RenterRuns: 5, RenterMedianTFLOPS: 790, AuditRuns: 1, AuditMedianTFLOPS: 500}, StatusDisputed},
		{"a median without runs is no witness", Facts{TFLOPS: f(794)}, Independent{RenterMedianTFLOPS: 790}, StatusUnverified},
		{"refused whatever witnesses say", Facts{Refused: true}, Independent{AuditRuns: 3, AuditMedianTFLOPS: 790}, StatusRefused},
		{"simulated whatever witnesses say", Facts{Simulated: true, TFLOPS: f(794)}, Independent{AuditRuns: 3, AuditMedianTFLOPS: 794}, StatusSimulated},
	}
	for _, c := range cases {
		if got := StatusOf(c.facts, c.ind); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// A V100 (no BF16) reports FP16; the witnesses measure BF16, which it
	// runs far slower: they neither confirm nor dispute it.
	v := 100.0
	r := &models.ReportHeadline{FP16TFLOPS: &v}
	for _, ind := range []Independent{{AuditRuns: 1, AuditMedianTFLOPS: 101}, {RenterRuns: 3, RenterMedianTFLOPS: 20}} {
		if got := HeadlineStatus("v100-32g-sxm2", r, ind); got != StatusUnverified {
			t.Errorf("V100 with witnesses %+v: %s, want unverified", ind, got)
		}
	}
	if got := HeadlineStatus("h100-sxm", nil, Independent{}); got != "" {
		t.Errorf("no report: %q", got)
	}
}
