// Package charts draws server-rendered SVG charts: bars of measured
// against nominal figures and line charts over time. The geometry is
// computed here; the templ components write plain SVG markup (no script,
// no style attribute: presentation attributes only, so the CSP holds).
package charts

import (
	"math"
	"strconv"
	"strings"
)

// Palette colours series in order (one per GPU of a node).
var Palette = []string{"#1f6fd6", "#e07b12", "#2e9e5b", "#c2410c", "#7a4fc9", "#0f8a8a", "#b3367a", "#6b7280"}

// Colour returns the palette colour of series i.
func Colour(i int) string { return Palette[((i%len(Palette))+len(Palette))%len(Palette)] }

// Colours of the measured and nominal bars, for legends.
const (
	MeasuredColour = "#1f6fd6"
	NominalColour  = "#c5cad3"
)

// Colours of the axes and marks.
const (
	ink      = "#14171c"
	muted    = "#5d6673"
	gridLine = "#e2e5ea"
)

// Bar is one measured figure against its nominal one: two bars on one
// scale, the nominal one full length (100%), and a mark at 100%.
type Bar struct {
	// Pct is the measured figure as a percentage of the nominal one.
	Pct float64
	// Scale is the percentage at the right edge (at least 100); bars of
	// one report share it so that they compare.
	Scale float64
	// Label is the bar's accessible name, e.g. "BF16 GEMM 794 TFLOPS =
	// 80% of 989".
	Label string
}

const barW = 1000.0

func (b Bar) scale() float64 { return math.Max(b.Scale, 100) }

func (b Bar) measuredW() string { return num(clamp(b.Pct, 0, b.scale()) / b.scale() * barW) }
func (b Bar) nominalW() string  { return num(100 / b.scale() * barW) }

// BarScale is the shared scale of bars with these percentages: 100%, or
// a little beyond the largest.
func BarScale(pcts ...float64) float64 {
	m := 100.0
	for _, p := range pcts {
		if p > m && !math.IsInf(p, 0) {
			m = p
		}
	}
	if m > 100 {
		m = math.Min(m*1.04, 400)
	}
	return m
}

// Point is one point of a series.
type Point struct {
	X, Y float64
	// Hollow draws the point's marker as a ring (a simulated report on a
	// trend, say).
	Hollow bool
	// Note is the marker's tooltip.
	Note string
}

// Series is one line.
type Series struct {
	Name   string
	Colour string
	Points []Point
}

// Tick is one labelled position on an axis.
type Tick struct {
	Pos   float64 // in chart coordinates
	Label string
}

// LineChart is a line chart laid out in a fixed viewBox that scales to
// its container's width.
type LineChart struct {
	// Title is the chart's accessible name.
	Title  string
	Series []Series
	// Markers draws a dot at every point (for sparse series).
	Markers bool
	// Ref, when set, draws a dashed reference line at that Y (100% of
	// nominal) labelled RefLabel.
	Ref      *float64
	RefLabel string
	// YUnit follows the top Y tick label.
	YUnit string

	// w and h are the viewBox's size.
	w, h                   float64
	xMin, xMax, yMin, yMax float64
	xTicks, yTicks         []Tick
}

// The line charts' plot area margins; the viewBox is 640×220 unless
// LineOptions say otherwise (a wider one makes its text smaller).
const (
	lcLeft, lcRight, lcTop, lcBott = 56.0, 14.0, 12.0, 26.0
)

// LineOptions tune NewLineChart.
type LineOptions struct {
	Title    string
	YUnit    string
	Markers  bool
	Ref      *float64
	RefLabel string
	// YFromZero starts the Y axis at zero (else it hugs the data).
	YFromZero bool
	// YAtLeast widens the Y axis to include this value.
	YAtLeast *float64
	// Width and Height set the viewBox (default 640×220).
	Width, Height float64
	// XLabel formats an X tick; XTickCount is how many (default 5). With
	// XNice the ticks fall on round numbers (seconds of a run), else they
	// are spread evenly (dates).
	XLabel     func(float64) string
	XTickCount int
	XNice      bool
}

// NewLineChart lays the series out.
func NewLineChart(series []Series, o LineOptions) LineChart {
	c := LineChart{Title: o.Title, Series: series, Markers: o.Markers, Ref: o.Ref, RefLabel: o.RefLabel, YUnit: o.YUnit,
		w: o.Width, h: o.Height}
	if c.w < 200 || c.h < 100 {
		c.w, c.h = 640, 220
	}
	c.xMin, c.xMax = math.Inf(1), math.Inf(-1)
	c.yMin, c.yMax = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			c.xMin, c.xMax = math.Min(c.xMin, p.X), math.Max(c.xMax, p.X)
			c.yMin, c.yMax = math.Min(c.yMin, p.Y), math.Max(c.yMax, p.Y)
		}
	}
	if math.IsInf(c.xMin, 0) {
		c.xMin, c.xMax, c.yMin, c.yMax = 0, 1, 0, 1
	}
	if o.YFromZero {
		c.yMin = math.Min(c.yMin, 0)
	}
	if o.YAtLeast != nil {
		c.yMin, c.yMax = math.Min(c.yMin, *o.YAtLeast), math.Max(c.yMax, *o.YAtLeast)
	}
	if o.Ref != nil {
		c.yMin, c.yMax = math.Min(c.yMin, *o.Ref), math.Max(c.yMax, *o.Ref)
	}
	if c.xMax == c.xMin {
		c.xMin, c.xMax = c.xMin-1, c.xMax+1
	}
	if c.yMax == c.yMin {
		c.yMin, c.yMax = c.yMin-1, c.yMax+1
	}
	var ys []float64
	c.yMin, c.yMax, ys = niceRange(c.yMin, c.yMax, 4)
	for _, y := range ys {
		c.yTicks = append(c.yTicks, Tick{Pos: c.y(y), Label: trim(y)})
	}
	if len(c.yTicks) > 0 && c.YUnit != "" {
		c.yTicks[len(c.yTicks)-1].Label += " " + c.YUnit
	}
	n := o.XTickCount
	if n == 0 {
		n = 5
	}
	label := o.XLabel
	if label == nil {
		label = trim
	}
	if o.XNice {
		_, _, xs := niceRange(c.xMin, c.xMax, n)
		for _, x := range xs {
			if x >= c.xMin && x <= c.xMax {
				c.xTicks = append(c.xTicks, Tick{Pos: c.x(x), Label: label(x)})
			}
		}
	} else if n == 1 || c.xMin == c.xMax {
		c.xTicks = []Tick{{Pos: c.x(c.xMin), Label: label(c.xMin)}}
	} else {
		for i := 0; i < n; i++ {
			x := c.xMin + (c.xMax-c.xMin)*float64(i)/float64(n-1)
			c.xTicks = append(c.xTicks, Tick{Pos: c.x(x), Label: label(x)})
		}
	}
	return c
}

func (c LineChart) x(v float64) float64 {
	return lcLeft + (v-c.xMin)/(c.xMax-c.xMin)*(c.w-lcLeft-lcRight)
}

func (c LineChart) y(v float64) float64 {
	return c.h - lcBott - (v-c.yMin)/(c.yMax-c.yMin)*(c.h-lcTop-lcBott)
}

// points is a series' polyline.
func (c LineChart) points(s Series) string {
	var b strings.Builder
	for i, p := range s.Points {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(c.x(p.X)))
		b.WriteByte(',')
		b.WriteString(num(c.y(p.Y)))
	}
	return b.String()
}

func (c LineChart) refY() string { return num(c.y(*c.Ref)) }

func (c LineChart) viewBox() string { return "0 0 " + num(c.w) + " " + num(c.h) }

// right and bottom are the plot area's right edge and baseline.
func (c LineChart) right() float64  { return c.w - lcRight }
func (c LineChart) bottom() float64 { return c.h - lcBott }

// niceRange widens [lo, hi] to round numbers and returns about n ticks
// between them.
func niceRange(lo, hi float64, n int) (float64, float64, []float64) {
	step := niceStep((hi - lo) / float64(max(n, 1)))
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step) * step
	var ticks []float64
	for v := lo; v <= hi+step/2; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return lo, hi, ticks
}

func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// Downsample keeps at most n points of a series in time order, averaging
// each run of neighbours (a run's peaks are reported apart from the chart).
func Downsample(ps []Point, n int) []Point {
	if n <= 0 || len(ps) <= n {
		return ps
	}
	out := make([]Point, 0, n)
	for i := 0; i < n; i++ {
		from, to := i*len(ps)/n, (i+1)*len(ps)/n
		var x, y float64
		for _, p := range ps[from:to] {
			x += p.X
			y += p.Y
		}
		k := float64(to - from)
		out = append(out, Point{X: x / k, Y: y / k})
	}
	return out
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// num writes a coordinate with one decimal.
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}

func trim(f float64) string { return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) }

func ftoa(f float64) string { return num(f) }
