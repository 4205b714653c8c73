package fleet

import (
	"encoding/json"
	"strings"
	"testing"

	"suanli/agent"
	"suanli/gpu"
	"suanli/models"
)

// A verify result that says the checks passed holds every required check
// of every GPU of the task, all passed; extra checks (a newer agent's)
// are accepted.
func TestVerifyIncomplete(t *testing.T) {
	payload, _ := json.Marshal(agent.Task{Kind: agent.TaskVerify, GPUUUIDs: []string{"GPU-a", "GPU-b"}})
	task := &models.AgentTask{Kind: agent.TaskVerify, Payload: string(payload)}
	full := func() gpu.Verdict {
		v := gpu.Verdict{Healthy: true}
		for _, name := range append(append([]string(nil), RequiredChecks...), "mig") {
			v.Checks = append(v.Checks, gpu.Check{Name: name, OK: true})
		}
		return v
	}
	cases := []struct {
		name   string
		change func(map[string]gpu.Verdict)
		want   string
	}{
		{"complete, with an extra check", func(map[string]gpu.Verdict) {}, ""},
		{"a GPU left out", func(vs map[string]gpu.Verdict) { delete(vs, "GPU-b") }, "no verdict for GPU GPU-b"},
		{"no checks at all", func(vs map[string]gpu.Verdict) { vs["GPU-a"] = gpu.Verdict{Healthy: true} }, `"present" check is missing`},
		{"one check left out", func(vs map[string]gpu.Verdict) {
			v := full()
			v.Checks = v.Checks[:len(v.Checks)-2] // pcie_link and the extra
			vs["GPU-b"] = v
		}, `"pcie_link" check is missing`},
		{"a failed check in a healthy verdict", func(vs map[string]gpu.Verdict) {
			v := full()
			v.Checks[1].OK = false
			vs["GPU-a"] = v
		}, "failed, yet the verdict says healthy"},
		{"an unhealthy verdict in a pass", func(vs map[string]gpu.Verdict) {
			v := full()
			v.Healthy = false
			vs["GPU-a"] = v
		}, "not healthy"},
	}
	for _, c := range cases {
		vs := map[string]gpu.Verdict{"GPU-a": full(), "GPU-b": full()}
		c.change(vs)
		got := VerifyIncomplete(task, agent.Result{OK: true, Verdicts: vs})
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
