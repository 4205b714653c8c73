package docker

import (
	_ "embed"
	"strings"

	"suanli/agent"
)

// verifyScript is the verifier (suanli-verify): a Python 3 program with
// no dependency outside the standard library (PyTorch is optional), so
// that it runs in any image that has a python3. The launcher copies it
// into every container at verifyPath.
//
//go:embed verify.py
var verifyScript string

// verifyPath is where the verifier is in a container; the init links it
// as /usr/local/bin/suanli-verify when the image has none of its own
// (the project's test images ship it there; other images get the link).
const verifyPath = initDir + "/verify"

// The container's environment for the verifier (see verify.py).
const (
	envVerifyURL      = "SUANLI_VERIFY_URL"
	envVerifyToken    = "SUANLI_VERIFY_TOKEN"
	envVerifyAtStart  = "SUANLI_VERIFY_AT_START"
	envVerifySimUUIDs = "SUANLI_VERIFY_SIMULATED_UUIDS"
	envVerifySimName  = "SUANLI_VERIFY_SIMULATED_NAME"
)

// verifyEnv is the verifier's environment for a launch: its endpoint and
// rental-scoped credential, whether to run at start, and, on a simulated
// agent (no GPU and no NVML in the container), the GPUs it stands for,
// so that the verifier reports them as simulated instead of pretending.
func verifyEnv(spec agent.LaunchSpec, simulated bool, gpus []string) []string {
	v := spec.Verify
	if v == nil || v.URL == "" || v.Token == "" {
		return nil
	}
	env := []string{envVerifyURL + "=" + v.URL, envVerifyToken + "=" + v.Token}
	if v.AtStart && len(gpus) > 0 {
		env = append(env, envVerifyAtStart+"=1")
	}
	if simulated && len(gpus) > 0 {
		env = append(env, envVerifySimUUIDs+"="+strings.Join(gpus, ","), envVerifySimName+"="+v.GPUName)
	}
	return env
}
