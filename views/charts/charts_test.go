package charts

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestPercentBarIsPlainSVG(t *testing.T) {
	var b bytes.Buffer
	bar := Bar{Pct: 80, Scale: BarScale(80, 88), Label: `BF16 GEMM 794 TFLOPS = 80% of 989 <script>`}
	if err := PercentBar(bar).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`<svg`, `width="800"`, `width="1000"`, `&lt;script&gt;`} {
		if !strings.Contains(out, want) {
			t.Errorf("bar %s: no %q", out, want)
		}
	}
	if strings.Contains(out, "<script") || strings.Contains(out, "style=") {
		t.Errorf("bar has script or style: %s", out)
	}
}

func TestBarScaleLeavesRoomAboveNominal(t *testing.T) {
	if s := BarScale(80, 95); s != 100 {
		t.Errorf("scale of bars under nominal: %v, want 100", s)
	}
	if s := BarScale(80, 110); s <= 110 {
		t.Errorf("scale of a bar over nominal: %v, want beyond 110", s)
	}
}

func TestLineChart(t *testing.T) {
	pts := make([]Point, 1000)
	for i := range pts {
		pts[i] = Point{X: float64(i) / 10, Y: float64(i % 50)}
	}
	ds := Downsample(pts, 100)
	if len(ds) != 100 || ds[0].X != 0.45 || ds[99].X != 99.45 {
		t.Fatalf("downsampled: %d points, first %v, last %v", len(ds), ds[0], ds[len(ds)-1])
	}
	c := NewLineChart([]Series{{Name: `GPU <0>`, Colour: Colour(0), Points: ds}}, LineOptions{Title: "SM clock (MHz)", YFromZero: true, XNice: true})
	if c.yMin != 0 || c.yMax < 49 || len(c.yTicks) < 3 || len(c.xTicks) < 3 {
		t.Errorf("axes: y %v..%v, %d y ticks, %d x ticks", c.yMin, c.yMax, len(c.yTicks), len(c.xTicks))
	}
	var b bytes.Buffer
	if err := Line(c).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "<polyline") || !strings.Contains(out, "GPU &lt;0&gt;") || strings.Contains(out, "NaN") {
		t.Errorf("line chart: %.500s", out)
	}
	// No points at all still draws axes, never NaN.
	b.Reset()
	if err := Line(NewLineChart(nil, LineOptions{})).Render(context.Background(), &b); err != nil || strings.Contains(b.String(), "NaN") {
		t.Errorf("empty chart: %v %s", err, b.String())
	}
}
