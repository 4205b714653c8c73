package pages

import (
	"strconv"
	"strings"

	"suanli/agent"
	"suanli/views"
)

// benchPlateauFrom is the message size from which an all-reduce sweep
// has reached its plateau on the nodes the platform lists (the agent's
// own rule: the plateau is the best of the sizes from 256 MiB).
const benchPlateauFrom = 256 << 20

// benchMethod says how a measured load's figure was taken: a GEMM's
// sustained run (the figure) beside its sweep's best, an all-reduce's
// sweep of message sizes; "" for other loads and for simulated ones (their
// detail says where the figure came from).
func benchMethod(vc views.Ctx, l agent.Load) string {
	if l.Status != agent.LoadOK {
		return ""
	}
	switch {
	case strings.HasSuffix(l.Metric, "_gemm_tflops"):
		if l.Best <= 0 {
			return vc.T("bench.gemm_burst")
		}
		// Only a run as long as the agent's default is called sustained:
		// the duration is the agent's word, a shorter one is a burst.
		if need := agent.DefaultSustain.Seconds(); l.SustainedS < need {
			return vc.T("bench.gemm_short", strconv.FormatFloat(l.SustainedS, 'f', 1, 64), strconv.FormatFloat(need, 'f', 0, 64))
		}
		secs := strconv.FormatFloat(l.SustainedS, 'f', 0, 64)
		if n := len(l.PerGPU); l.Concurrent && n > 1 {
			return vc.T("bench.gemm_method", secs, n, benchFig(l.Best), "TFLOPS")
		}
		return vc.T("bench.gemm_method_one", secs, benchFig(l.Best), "TFLOPS")
	case l.Metric == agent.MetricAllReduceBus && len(l.Sweep) > 0:
		first, last := l.Sweep[0].Bytes, l.Sweep[len(l.Sweep)-1].Bytes
		s := vc.T("bench.sweep_plateau", len(l.Sweep), benchBytes(first), benchBytes(last))
		if last < benchPlateauFrom {
			s += "; " + vc.T("bench.sweep_short", benchBytes(last))
		}
		return s
	}
	return ""
}

// benchBytes writes a message size: "1 MiB", "1 GiB".
func benchBytes(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return strconv.FormatInt(b>>30, 10) + " GiB"
	case b >= 1<<20 && b%(1<<20) == 0:
		return strconv.FormatInt(b>>20, 10) + " MiB"
	case b >= 1<<10 && b%(1<<10) == 0:
		return strconv.FormatInt(b>>10, 10) + " KiB"
	}
	return strconv.FormatInt(b, 10) + " B"
}

// powerNote says which power reading the run's telemetry holds (NVML's
// instantaneous one, or its 1-s average, which lags a load) and how often
// it was sampled; "" without telemetry.
func (vm BenchmarkVM) powerNote(vc views.Ctx) string {
	instant, averaged := false, false
	for _, s := range vm.Run.Telemetry {
		if s.T.PowerW <= 0 {
			continue
		}
		if s.T.PowerInstant {
			instant = true
		} else {
			averaged = true
		}
	}
	var parts []string
	switch {
	case averaged:
		parts = append(parts, vc.T("bench.power_averaged"))
	case instant:
		parts = append(parts, vc.T("bench.power_instant"))
	}
	if vm.Run.SampleEveryMS > 0 {
		parts = append(parts, vc.T("bench.sample_every", strconv.FormatInt(vm.Run.SampleEveryMS, 10)))
	}
	return strings.Join(parts, " ")
}
