package fleet

import (
	"encoding/json"
	"fmt"
	"slices"

	"suanli/agent"
	"suanli/gpu"
	"suanli/models"
)

// RequiredChecks are the NVML checks a passing verify result must hold
// for every GPU of the task: the set every agent of this version runs
// (gpu.verdict). An agent may send more (a newer one's added checks);
// fewer is not a pass, whatever it says.
var RequiredChecks = []string{
	gpu.CheckPresent, gpu.CheckXID, gpu.CheckECCUncorrected, gpu.CheckRowRemap,
	gpu.CheckRetiredPages, gpu.CheckTemperature, gpu.CheckClockEvents, gpu.CheckPCIeLink,
}

// RefuseIncompleteVerify turns a verify result of task t that claims a
// pass without its complete checks (VerifyIncomplete) into a failed one,
// saying why, and returns the reason ("" for any other result): the
// rental then moves on as from failed checks.
func RefuseIncompleteVerify(t *models.AgentTask, res *agent.Result) string {
	if t.Kind != agent.TaskVerify || !res.OK {
		return ""
	}
	why := VerifyIncomplete(t, *res)
	if why != "" {
		res.OK, res.Error = false, "refused by the server: "+why
	}
	return why
}

// VerifyIncomplete says why a verify result that claims a pass is not one
// ("" when it is complete): every GPU the task named needs a healthy
// verdict holding each of RequiredChecks, every check passed. The agent
// is the provider's word; a pass without its checks is no pass.
func VerifyIncomplete(t *models.AgentTask, res agent.Result) string {
	var task agent.Task
	if err := json.Unmarshal([]byte(t.Payload), &task); err != nil {
		return "the task's GPUs cannot be read"
	}
	for _, uuid := range task.GPUUUIDs {
		v, ok := res.Verdicts[uuid]
		if !ok {
			return fmt.Sprintf("no verdict for GPU %s", uuid)
		}
		if !v.Healthy {
			return fmt.Sprintf("GPU %s is not healthy, yet the result says the checks passed", uuid)
		}
		for _, name := range RequiredChecks {
			i := slices.IndexFunc(v.Checks, func(c gpu.Check) bool { return c.Name == name })
			if i < 0 {
				return fmt.Sprintf("GPU %s: the %q check is missing", uuid, name)
			}
		}
		for _, c := range v.Checks {
			if !c.OK {
				return fmt.Sprintf("GPU %s: the %q check failed, yet the verdict says healthy", uuid, c.Name)
			}
		}
	}
	return ""
}
