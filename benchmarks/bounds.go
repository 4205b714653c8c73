package benchmarks

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"suanli/agent"
	"suanli/catalog"
	"suanli/witness"
)

// The bounds a benchmark report must keep to be accepted. The agent is
// the provider's word (DESIGN.md §8): a report outside them is refused,
// kept as refused with the reason, and flags its node for review.
const (
	// NominalMargin is how far above the catalogue's nominal figure a
	// measured one may be: GPU Boost runs above the clock the datasheet's
	// rate is computed at (an H100 SXM reaches 1980 MHz against the 1830
	// of its 989 TFLOPS, +8 %; GeForce cards boost further), and a copy
	// may round above the published bandwidth by a few percent. The
	// witnesses' results are held to the same margin.
	NominalMargin = witness.NominalMargin
	// ClockMargin is how far a GEMM rate may be above what the highest SM
	// clock sampled during the run gives at the model's per-clock rate
	// (nominal × clock ÷ BoostClockMHz): telemetry is sampled every
	// 100 ms, so a short boost between two samples may go unseen.
	ClockMargin = 1.10
	// MaxClockShare bounds a reported SM clock against the model's boost
	// clock: overclocked GeForce cards run about 20 % above theirs, none
	// half as much again.
	MaxClockShare = 1.5
	// PowerMargin is how far above the board limit (the catalogue's TDP)
	// a power reading may be: NVML averages power (over 1 s on Hopper),
	// boards may be configured above their default limit (A100 SXM up to
	// 500 W of 400, GeForce RTX 4090 boards up to 600 W of 450).
	PowerMargin = 1.35
	// MinTempC is the lowest plausible GPU temperature: below a cold
	// machine room's air. NVML reports whole degrees and 0 is what the
	// agent sends for a sensor it could not read, so 0 is no reading.
	MinTempC = 5
	// MaxTempC is above any GPU's shutdown temperature (about 90–105 °C)
	// and the junction limit of the silicon; a higher reading is not a
	// reading.
	MaxTempC = 125
)

// CheckBounds says why a run is refused ("" when it is within bounds),
// judged against the catalogue's model m and the nominal figures nom the
// server stored with the task; gpus are the GPUs the task named (a run
// may not report others). The first reason found is returned.
func CheckBounds(run agent.BenchmarkReport, nom agent.Nominal, m catalog.GPUModel, gpus []string) string {
	for _, u := range run.GPUUUIDs {
		if len(gpus) > 0 && !slices.Contains(gpus, u) {
			return fmt.Sprintf("the report names GPU %s, which the task did not", u)
		}
	}
	// The highest SM clock sampled, for the per-clock rate; a reading
	// beyond anything the model runs at is refused itself.
	maxClock := 0
	for _, s := range run.Telemetry {
		t := s.T
		switch {
		case t.TemperatureC < 0 || (t.TemperatureC > 0 && t.TemperatureC < MinTempC):
			return fmt.Sprintf("GPU %d read %d °C, below any machine room's air (%d °C)", s.Index, t.TemperatureC, MinTempC)
		case t.TemperatureC > MaxTempC:
			return fmt.Sprintf("GPU %d read %d °C, above any GPU's shutdown temperature (%d °C)", s.Index, t.TemperatureC, MaxTempC)
		case bad(t.PowerW) || bad(t.PowerLimitW):
			return fmt.Sprintf("GPU %d reported a power that is not a number of watts", s.Index)
		case m.TDPW > 0 && t.PowerW > float64(m.TDPW)*PowerMargin:
			return fmt.Sprintf("GPU %d drew %.0f W, above its board limit of %d W (×%.2f)", s.Index, t.PowerW, m.TDPW, PowerMargin)
		case t.SMClockMHz < 0:
			return fmt.Sprintf("GPU %d reported a negative SM clock", s.Index)
		case m.BoostClockMHz > 0 && float64(t.SMClockMHz) > float64(m.BoostClockMHz)*MaxClockShare:
			return fmt.Sprintf("GPU %d reported an SM clock of %d MHz; a %s boosts to %d", s.Index, t.SMClockMHz, m.Name, m.BoostClockMHz)
		}
		maxClock = max(maxClock, t.SMClockMHz)
	}
	for _, l := range run.Loads {
		// Every figure a page may show is judged: the sustained one, the
		// sweep's best and each sweep step (a bus bandwidth for an
		// all-reduce), not only the headline.
		vals := append([]float64{l.Value, l.Best}, l.PerGPU...)
		vals = append(vals, l.BestPerGPU...)
		for _, p := range l.Sweep {
			vals = append(vals, p.Value, p.BusBW)
		}
		for _, v := range vals {
			if bad(v) {
				return fmt.Sprintf("%s: %v is not a measurement", l.Metric, v)
			}
		}
		if l.Status != agent.LoadOK && l.Status != agent.LoadSimulated {
			continue // an absent or failed load has no figure to judge
		}
		top := slices.Max(vals)
		nominal := 0.0
		switch l.Metric {
		case agent.MetricBF16GEMM:
			// A model without BF16 tensor cores (V100) still runs PyTorch's
			// slower BF16 GEMM, never faster than its FP16 one.
			nominal = cmp.Or(nom.BF16TFLOPS, nom.FP16TFLOPS)
		case agent.MetricFP16GEMM:
			nominal = nom.FP16TFLOPS
		case agent.MetricD2D:
			nominal = nom.MemBWGBps
		case agent.MetricAllReduceBus:
			nominal = nom.NVLinkGBps
		}
		if nominal <= 0 {
			continue
		}
		if top > nominal*NominalMargin {
			return fmt.Sprintf("%s: %g, above the nominal %g of a %s (×%.2f)", l.Metric, top, nominal, m.Name, NominalMargin)
		}
		gemm := l.Metric == agent.MetricBF16GEMM || l.Metric == agent.MetricFP16GEMM
		if gemm && m.BoostClockMHz > 0 && maxClock > 0 {
			ceiling := nominal * float64(maxClock) / float64(m.BoostClockMHz)
			if top > ceiling*ClockMargin {
				return fmt.Sprintf("%s: %g TFLOPS, more than a %s gives at the highest SM clock sampled, %d MHz (%.0f TFLOPS ×%.2f)",
					l.Metric, top, m.Name, maxClock, ceiling, ClockMargin)
			}
		}
	}
	return ""
}

// bad is a figure that is not a measurement: negative, NaN or infinite.
func bad(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
