package pages

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"suanli/agent"
	"suanli/pricing"
	"suanli/views"
	"suanli/views/charts"
)

// BenchReport is a stored benchmark report's headline figures (per GPU,
// nil where the load was absent).
type BenchReport struct {
	ID, NodeID                          int64
	GPUs                                int
	Trigger                             string
	Simulated                           bool
	BF16TFLOPS, MemBWGBps, PctOfNominal *float64
	PeakTempC                           *int
	MeasuredAt                          time.Time
	// GPUName is the model's name from the report's nominal snapshot, or
	// its slug.
	GPUName string
	// Status is benchmarks.Status: verified, unverified, disputed,
	// refused or simulated; RefusedReason says why a refused report was.
	Status        string
	RefusedReason string
}

// Refused reports whether the server refused the report.
func (r BenchReport) Refused() bool { return r.Status == "refused" }

// BenchSubject is the node a report is about, with its datacentre and
// provider, named in the reader's language.
type BenchSubject struct {
	NodeID        int64
	NodeName      string
	NodeGPUModel  string
	NodeSimulated bool
	DCSlug        string
	DCName        string
	DCCity        string
	ProviderName  string
}

// BenchmarkVM is the report page's view model: the stored report with its
// nominal snapshot and the agent's run, decoded, and the node it is about.
type BenchmarkVM struct {
	Report  BenchReport
	Nominal agent.Nominal
	Run     agent.BenchmarkReport
	Subject BenchSubject
	// Measured[i] is the measured figure of Run.Loads[i], if it has one.
	Measured []BenchMeasured
	// PeakTempC is the highest GPU temperature sampled during the run
	// (nil: none), on GPU PeakTempGPU.
	PeakTempC   *int
	PeakTempGPU int
}

// BenchMeasured is a load's measured figure: Value when OK.
type BenchMeasured struct {
	Value float64
	OK    bool
}

// NodeBenchmarksVM is a node's report history, newest first.
type NodeBenchmarksVM struct {
	Subject BenchSubject
	Reports []BenchReport
}

// benchMetricOrder is the order loads are shown in; any other metric follows.
var benchMetricOrder = []string{agent.MetricBF16GEMM, agent.MetricFP16GEMM, agent.MetricD2D,
	agent.MetricH2D, agent.MetricD2H, agent.MetricAllReduceBus}

// benchMetric is one load of the run as the page shows it.
type benchMetric struct {
	Load agent.Load
	// Value is the measured figure when there is one (HasValue).
	Value    float64
	HasValue bool
	// Nominal is the snapshot's figure for the metric, when it has one.
	Nominal    float64
	HasNominal bool
	Pct        float64
}

func (m benchMetric) unit() string {
	if strings.HasSuffix(m.Load.Metric, "_tflops") {
		return "TFLOPS"
	}
	return "GB/s"
}

func (m benchMetric) hasPct() bool { return m.HasValue && m.HasNominal }

// nominalFor is the snapshot's figure for a metric (0: none).
func nominalFor(n agent.Nominal, metric string) float64 {
	switch metric {
	case agent.MetricBF16GEMM:
		return n.BF16TFLOPS
	case agent.MetricFP16GEMM:
		return n.FP16TFLOPS
	case agent.MetricD2D:
		return n.MemBWGBps
	}
	return 0
}

// metrics returns the run's loads in page order with their figures.
func (vm BenchmarkVM) metrics() []benchMetric {
	rank := func(m string) int {
		if i := slices.Index(benchMetricOrder, m); i >= 0 {
			return i
		}
		return len(benchMetricOrder)
	}
	out := make([]benchMetric, 0, len(vm.Run.Loads))
	for i, l := range vm.Run.Loads {
		m := benchMetric{Load: l}
		if i < len(vm.Measured) {
			m.Value, m.HasValue = vm.Measured[i].Value, vm.Measured[i].OK
		}
		m.Nominal = nominalFor(vm.Nominal, l.Metric)
		m.HasNominal = m.Nominal > 0
		if m.hasPct() {
			m.Pct = m.Value / m.Nominal * 100
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b benchMetric) int { return rank(a.Load.Metric) - rank(b.Load.Metric) })
	return out
}

// compared are the metrics with a measured and a nominal figure (bars).
func (vm BenchmarkVM) compared() []benchMetric {
	var out []benchMetric
	for _, m := range vm.metrics() {
		if m.hasPct() {
			out = append(out, m)
		}
	}
	return out
}

// others are the metrics without a bar: measured without a nominal figure,
// absent, or failed.
func (vm BenchmarkVM) others() []benchMetric {
	var out []benchMetric
	for _, m := range vm.metrics() {
		if !m.hasPct() {
			out = append(out, m)
		}
	}
	return out
}

func (vm BenchmarkVM) barScale() float64 {
	var ps []float64
	for _, m := range vm.compared() {
		ps = append(ps, m.Pct)
	}
	return charts.BarScale(ps...)
}

// benchMetricName is a metric's name in the reader's language.
func benchMetricName(vc views.Ctx, metric string) string {
	return views.LabelOr(vc, "bench.metric."+metric, metric)
}

// benchVsNominal is "BF16 GEMM 794 TFLOPS = 80% of 989".
func benchVsNominal(vc views.Ctx, m benchMetric) string {
	return vc.T("bench.vs_nominal", benchMetricName(vc, m.Load.Metric), benchFig(m.Value), m.unit(), benchPct(m.Pct), benchFig(m.Nominal))
}

func (vm BenchmarkVM) bar(vc views.Ctx, m benchMetric) charts.Bar {
	return charts.Bar{Pct: m.Pct, Scale: vm.barScale(), Label: benchVsNominal(vc, m)}
}

// benchFig writes a measured or nominal figure: whole numbers from 100
// up (with thousands separators), else one decimal.
func benchFig(v float64) string {
	if math.Abs(v) >= 100 {
		return views.Int(int(math.Round(v)))
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// benchPct writes a percentage of nominal, whole.
func benchPct(p float64) string { return strconv.Itoa(int(math.Round(p))) }

func benchPctPtr(p *float64) string {
	if p == nil {
		return "—"
	}
	return benchPct(*p) + "%"
}

func benchFigPtr(v *float64) string {
	if v == nil {
		return "—"
	}
	return benchFig(*v)
}

// benchPerGPU lists per-GPU figures: "793 · 795 · …".
func benchPerGPU(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = benchFig(v)
	}
	return strings.Join(parts, " · ")
}

// benchStatus says why a load has no figure.
func benchStatus(vc views.Ctx, l agent.Load) string {
	switch l.Status {
	case agent.LoadAbsent:
		return vc.T("bench.load.absent")
	case agent.LoadFailed:
		return vc.T("bench.load.failed")
	}
	return vc.T("bench.load.no_figure", l.Status)
}

// benchStatusDetail is benchStatus with the agent's reason.
func benchStatusDetail(vc views.Ctx, l agent.Load) string {
	if l.Detail == "" {
		return benchStatus(vc, l)
	}
	return vc.T("bench.load.with_reason", benchStatus(vc, l), l.DetailText(vc.Lang))
}

// tools lists the load generators with their versions, once each.
func (vm BenchmarkVM) tools() []string {
	var out []string
	for _, l := range vm.Run.Loads {
		if l.Tool == "" || l.Status == agent.LoadAbsent {
			continue
		}
		s := l.Tool
		if l.Version != "" {
			s += " " + l.Version
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// absentTools lists the load generators the host does not have.
func (vm BenchmarkVM) absentTools() []string {
	var out []string
	for _, l := range vm.Run.Loads {
		if l.Status == agent.LoadAbsent && l.Tool != "" && !slices.Contains(out, l.Tool) {
			out = append(out, l.Tool)
		}
	}
	return out
}

// benchWhen writes a time in Asia/Shanghai with the zone.
func benchWhen(t time.Time) string {
	return t.In(pricing.Shanghai).Format("2006-01-02 15:04") + " (UTC+8)"
}

func (vm BenchmarkVM) duration() string {
	if vm.Run.StartedAt.IsZero() || vm.Run.FinishedAt.Before(vm.Run.StartedAt) {
		return ""
	}
	d := vm.Run.FinishedAt.Sub(vm.Run.StartedAt).Round(time.Second)
	return d.String()
}

func (vm BenchmarkVM) simFactor() string {
	return strconv.FormatFloat(vm.Run.SimFactor, 'f', -1, 64)
}

// pcieLink writes a GPU's PCIe link: "Gen 5 x16 (max Gen 5 x16)".
func pcieLink(g benchGPU) string {
	if g.PCIeGen == 0 && g.PCIeWidth == 0 {
		return "—"
	}
	s := fmt.Sprintf("Gen %d x%d", g.PCIeGen, g.PCIeWidth)
	if g.PCIeGenMax != g.PCIeGen || g.PCIeWidthMax != g.PCIeWidth {
		s += fmt.Sprintf(" (max Gen %d x%d)", g.PCIeGenMax, g.PCIeWidthMax)
	}
	return s
}

// benchGPU is one GPU of the host snapshot.
type benchGPU struct {
	Index                                        int
	Name, UUID                                   string
	MemoryGiB                                    float64
	PCIeGen, PCIeGenMax, PCIeWidth, PCIeWidthMax int
	NVLinksUp                                    int
	// InRun is true when the GPU was benchmarked.
	InRun bool
}

// gpus are the host's GPUs from the snapshot before the run.
func (vm BenchmarkVM) gpus() []benchGPU {
	out := make([]benchGPU, 0, len(vm.Run.Host.GPUs))
	for _, g := range vm.Run.Host.GPUs {
		out = append(out, benchGPU{Index: g.Index, Name: g.Name, UUID: g.UUID, MemoryGiB: float64(g.MemoryTotalMiB) / 1024,
			PCIeGen: g.PCIeGen, PCIeGenMax: g.PCIeGenMax, PCIeWidth: g.PCIeWidth, PCIeWidthMax: g.PCIeWidthMax,
			NVLinksUp: g.NVLinksUp, InRun: len(vm.Run.GPUUUIDs) == 0 || slices.Contains(vm.Run.GPUUUIDs, g.UUID)})
	}
	return out
}

// telemetryChart is one of the run's telemetry charts.
type telemetryChart struct {
	TitleKey string
	Title    string // with the unit
	Chart    charts.LineChart
}

// benchChartPoints is how many points a telemetry line keeps.
const benchChartPoints = 240

// telemetry lays out the SM clock, temperature and power of every GPU
// over the run.
func (vm BenchmarkVM) telemetry(vc views.Ctx) []telemetryChart {
	if len(vm.Run.Telemetry) == 0 {
		return nil
	}
	idx := vm.telemetryGPUs()
	type pick struct {
		key, unit string
		val       func(agent.Sample) float64
		fromZero  bool
	}
	picks := []pick{
		{"bench.chart.sm_clock", "MHz", func(s agent.Sample) float64 { return float64(s.T.SMClockMHz) }, true},
		{"bench.chart.temperature", "°C", func(s agent.Sample) float64 { return float64(s.T.TemperatureC) }, true},
		{"bench.chart.power", "W", func(s agent.Sample) float64 { return s.T.PowerW }, true},
	}
	var out []telemetryChart
	for _, p := range picks {
		var series []charts.Series
		for i, g := range idx {
			var pts []charts.Point
			for _, s := range vm.Run.Telemetry {
				if s.Index == g {
					pts = append(pts, charts.Point{X: float64(s.AtMS) / 1000, Y: p.val(s)})
				}
			}
			series = append(series, charts.Series{Name: "GPU " + strconv.Itoa(g), Colour: charts.Colour(i), Points: charts.Downsample(pts, benchChartPoints)})
		}
		title := vc.T(p.key) + " (" + p.unit + ")"
		out = append(out, telemetryChart{TitleKey: p.key, Title: title, Chart: charts.NewLineChart(series, charts.LineOptions{
			Title: title, YFromZero: p.fromZero, XNice: true,
			XLabel: func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) + " s" },
		})})
	}
	return out
}

// telemetryGPUs are the GPU indexes sampled, in order.
func (vm BenchmarkVM) telemetryGPUs() []int {
	var idx []int
	for _, s := range vm.Run.Telemetry {
		if !slices.Contains(idx, s.Index) {
			idx = append(idx, s.Index)
		}
	}
	slices.Sort(idx)
	return idx
}

// clockReasons are the NVML clock-event reasons that slow a GPU down,
// with their message keys (the bits of nvmlClocksEventReasons).
var clockReasons = []struct {
	bit uint64
	key string
}{
	{0x4, "bench.clock.sw_power_cap"},
	{0x8, "bench.clock.hw_slowdown"},
	{0x20, "bench.clock.sw_thermal"},
	{0x40, "bench.clock.hw_thermal"},
	{0x80, "bench.clock.hw_power_brake"},
}

// runEvent is a slowdown reason or an XID seen during the run, with the
// GPUs it was seen on.
type runEvent struct {
	Label string
	GPUs  []int
}

func (e runEvent) gpus() string {
	parts := make([]string, len(e.GPUs))
	for i, g := range e.GPUs {
		parts[i] = strconv.Itoa(g)
	}
	return strings.Join(parts, ", ")
}

// events are the clock slowdowns and XIDs seen in the telemetry.
func (vm BenchmarkVM) events(vc views.Ctx) []runEvent {
	var out []runEvent
	add := func(label string, gpu int) {
		for i := range out {
			if out[i].Label == label {
				if !slices.Contains(out[i].GPUs, gpu) {
					out[i].GPUs = append(out[i].GPUs, gpu)
					slices.Sort(out[i].GPUs)
				}
				return
			}
		}
		out = append(out, runEvent{Label: label, GPUs: []int{gpu}})
	}
	for _, s := range vm.Run.Telemetry {
		for _, r := range clockReasons {
			if s.T.ClockEventReasons&r.bit != 0 {
				add(vc.T(r.key), s.Index)
			}
		}
		for _, x := range s.XIDs {
			add("XID "+strconv.Itoa(x), s.Index)
		}
	}
	return out
}

// trend lays out BF16 (or FP16) percent of nominal over the reports,
// oldest first; simulated reports are rings.
func (vm NodeBenchmarksVM) trend(vc views.Ctx) (charts.LineChart, bool) {
	var pts []charts.Point
	for i := len(vm.Reports) - 1; i >= 0; i-- {
		r := vm.Reports[i]
		if r.PctOfNominal == nil {
			continue
		}
		note := benchWhen(r.MeasuredAt) + " · " + benchPct(*r.PctOfNominal) + "%"
		if r.Simulated {
			note += " · " + vc.T("bench.simulated")
		}
		pts = append(pts, charts.Point{X: float64(r.MeasuredAt.Unix()), Y: *r.PctOfNominal, Hollow: r.Simulated, Note: note})
	}
	if len(pts) == 0 {
		return charts.LineChart{}, false
	}
	hundred := 100.0
	zero := 0.0
	n := min(len(pts), 4)
	layout := "2006-01-02"
	if pts[len(pts)-1].X-pts[0].X < 3*86400 {
		layout = "01-02 15:04"
	}
	return charts.NewLineChart([]charts.Series{{Name: vc.T("bench.trend.series"), Colour: charts.Colour(0), Points: pts}}, charts.LineOptions{
		Title: vc.T("bench.trend.title"), YUnit: "%", Markers: true, Ref: &hundred, RefLabel: vc.T("bench.trend.nominal"),
		YAtLeast: &zero, XTickCount: n, Width: 960, Height: 260,
		XLabel: func(x float64) string { return time.Unix(int64(x), 0).In(pricing.Shanghai).Format(layout) },
	}), true
}

// benchTrigger names why a report was run.
func benchTrigger(vc views.Ctx, trigger string) string {
	return views.LabelOr(vc, "bench.trigger."+trigger, trigger)
}

func benchNodeTitle(vc views.Ctx, s BenchSubject, gpuName string, gpus int) string {
	return vc.T("bench.node_title", gpuName, gpus, s.NodeName)
}

func (vm NodeBenchmarksVM) gpuName() string {
	if len(vm.Reports) > 0 {
		return vm.Reports[0].GPUName
	}
	return vm.Subject.NodeGPUModel
}

func benchTempPtr(t *int) string {
	if t == nil {
		return "—"
	}
	return strconv.Itoa(*t) + " °C"
}

// loadTool names the tool that measured a load: the simulated agent's in
// the reader's language, a real tool by its own name.
func loadTool(vc views.Ctx, tool string) string {
	if tool == agent.LoadSimulated {
		return vc.T("bench.simulated")
	}
	return tool
}
