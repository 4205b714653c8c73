package gpu

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// fieldPowerInstant is NVML_FI_DEV_POWER_INSTANT: "Current GPU power,
// supported on all architectures" (nvml.h), in milliwatts.
const fieldPowerInstant = nvml.FI_DEV_POWER_INSTANT

// readInstantPower puts NVML's instantaneous power into t, where the
// driver offers it, and marks it so. Without it t keeps
// nvmlDeviceGetPowerUsage's figure, "averaged over 1 sec interval" on
// Ampere (except GA100) and newer: sampled every 100 ms during a
// benchmark, that lags a load by up to a second and smooths its spikes.
func readInstantPower(dev nvml.Device, p *probe, t *Telemetry) {
	v := []nvml.FieldValue{{FieldId: fieldPowerInstant}}
	if !p.ok(dev.GetFieldValues(v)) || !p.ok(nvml.Return(v[0].NvmlReturn)) {
		return
	}
	if mw := fieldUint(v[0]); mw > 0 {
		t.PowerW, t.PowerInstant = float64(mw)/1000, true
	}
}
