package rentalpages

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"suanli/pricing"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/charts"
)

// UsageVM is the rental page's GPU usage section: each GPU's latest
// telemetry and a chart of the rental's history.
type UsageVM struct {
	RentalID int64
	// Simulated: the figures come from simulated GPUs (go-nvml mocks).
	Simulated bool
	// Polling: the section follows the rental (it is not settled):
	// pushed over the rental page's event stream, or polling itself.
	Polling bool
	GPUs    []UsageGPU
}

// UsageGPU is one GPU of the rental and its samples, oldest first.
type UsageGPU struct {
	Idx     int
	UUID    string
	Samples []UsageSample
}

// UsageSample is one telemetry sample.
type UsageSample struct {
	At         time.Time
	UtilPct    int
	MemUsedMiB int64
	PowerW     float64
	TempC      int
	SMClockMHz int
}

// UsagePollEvery is how often the section refreshes itself (htmx) where
// the server cannot push it (no change feed, or a browser without an
// event stream); the readings behind it change about every 30 s.
const UsagePollEvery = "15s"

// Seen names what the section shows: its GPUs, each one's newest sample
// and whether the figures are simulated (a hash, for an attribute). The
// rental page's event stream compares it with the page's
// (data-usage-seen) and sends the section only when it differs.
func (vm UsageVM) Seen() string {
	h := fnv.New64a()
	fmt.Fprint(h, vm.Simulated)
	for _, g := range vm.GPUs {
		fmt.Fprint(h, "|", g.UUID, "|")
		if s := g.Latest(); s != nil {
			fmt.Fprint(h, s.At.UnixNano())
		}
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// Latest is the GPU's newest sample (nil when none yet).
func (g UsageGPU) Latest() *UsageSample {
	if len(g.Samples) == 0 {
		return nil
	}
	return &g.Samples[len(g.Samples)-1]
}

// hasSamples reports whether any GPU has a sample.
func (vm UsageVM) hasSamples() bool {
	for _, g := range vm.GPUs {
		if len(g.Samples) > 0 {
			return true
		}
	}
	return false
}

func (vm UsageVM) url(vc views.Ctx) string {
	return vc.URL(routenames.RentalsUsage, views.I64(vm.RentalID))
}

// usageChartPoints is the most points a chart series draws.
const usageChartPoints = 240

// charts are the history charts: utilisation and memory used, one series
// per GPU, X in Shanghai time.
func (vm UsageVM) charts(vc views.Ctx) []usageChart {
	picks := []struct {
		key, unit string
		val       func(UsageSample) float64
		atLeast   float64
	}{
		{"usage.util", "%", func(s UsageSample) float64 { return float64(s.UtilPct) }, 100},
		{"usage.mem", "GiB", func(s UsageSample) float64 { return float64(s.MemUsedMiB) / 1024 }, 0},
	}
	var out []usageChart
	for _, p := range picks {
		var series []charts.Series
		for i, g := range vm.GPUs {
			pts := make([]charts.Point, 0, len(g.Samples))
			for _, s := range g.Samples {
				pts = append(pts, charts.Point{X: float64(s.At.Unix()), Y: p.val(s)})
			}
			series = append(series, charts.Series{Name: "GPU " + strconv.Itoa(g.Idx), Colour: charts.Colour(i), Points: charts.Downsample(pts, usageChartPoints)})
		}
		title := vc.T(p.key) + " (" + p.unit + ")"
		atLeast := p.atLeast
		out = append(out, usageChart{Key: p.key, Title: title, Chart: charts.NewLineChart(series, charts.LineOptions{
			Title: title, YFromZero: true, YAtLeast: &atLeast, XTickCount: 3,
			XLabel: func(x float64) string { return time.Unix(int64(x), 0).In(pricing.Shanghai).Format("15:04") },
		})})
	}
	return out
}

// usageChart is one history chart.
type usageChart struct {
	Key, Title string
	Chart      charts.LineChart
}

func watts(w float64) string { return strconv.FormatFloat(w, 'f', 0, 64) + " W" }

func gib(mib int64) string { return strconv.FormatFloat(float64(mib)/1024, 'f', 1, 64) + " GiB" }
