package picture

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// Series is one line of a chart: a name (its colour, Color) and points,
// and, when Lo and Hi are set (as long as X), a band shaded between them
// around the line (the slowdown model's low and high, say).
type Series struct {
	Name   string
	X, Y   []float64 // NaN y: no point
	Lo, Hi []float64
}

// Chart is a line chart. The y axis spans the data (with a margin), from
// zero only when the data come close to it: a fixed 0-25 axis hid
// differences of a point between policies. Mark, when set, draws a
// dashed vertical line at that x (100% arrived workload, say).
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	Mark                  float64
	HasMark               bool
}

// chart geometry, in SVG units
const (
	chartW      = 300
	chartH      = 210
	chartLeft   = 44
	chartRight  = 12
	chartTop    = 26
	chartBottom = 32
	legendW     = 150 // one legend entry
)

// Panels draws charts in a grid, cols to a row, under one title and one
// legend of every series name.
func Panels(w io.Writer, title string, charts []Chart, cols int) error {
	if cols < 1 {
		cols = 1
	}
	names := seriesNames(charts)
	rows := (len(charts) + cols - 1) / cols
	width := min(cols, max(len(charts), 1)) * chartW
	perRow := max(1, min(6, width/legendW)) // legend entries to a line: as many as the width holds
	legendRows := (len(names) + perRow - 1) / perRow
	legendH := 20 + 16*legendRows
	height := legendH + rows*chartH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="8" y="14" font-size="13" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, n := range names {
		x, y := 8+(i%perRow)*legendW, 30+16*(i/perRow)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/><text x="%d" y="%d">%s</text>`+"\n",
			x, y-4, x+20, y-4, Color(n), dashAttr(n), x+24, y, html.EscapeString(n))
	}
	for i, c := range charts {
		c.draw(&b, (i%cols)*chartW, legendH+(i/cols)*chartH)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// seriesNames lists every series name once, in order of appearance.
func seriesNames(charts []Chart) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range charts {
		for _, s := range c.Series {
			if !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s.Name)
			}
		}
	}
	return out
}

func dashAttr(name string) string {
	if d := Dash(name); d != "" {
		return fmt.Sprintf(` stroke-dasharray="%s"`, d)
	}
	return ""
}

// draw renders the chart with its top left corner at (ox, oy).
func (c Chart) draw(b *strings.Builder, ox, oy int) {
	xlo, xhi := c.bounds(func(s Series) []float64 { return s.X })
	ylo, yhi := c.bounds(func(s Series) []float64 { return slices.Concat(s.Y, s.Lo, s.Hi) })
	ylo, yhi, ystep := YAxis(ylo, yhi)
	xlo, xhi, xstep := Axis(xlo, xhi)
	pw, ph := float64(chartW-chartLeft-chartRight), float64(chartH-chartTop-chartBottom)
	x0, y0 := float64(ox+chartLeft), float64(oy+chartTop)
	px := func(x float64) float64 { return x0 + (x-xlo)/(xhi-xlo)*pw }
	py := func(y float64) float64 { return y0 + ph - (y-ylo)/(yhi-ylo)*ph }
	fmt.Fprintf(b, `<text x="%.1f" y="%d" font-weight="bold">%s</text>`+"\n", x0, oy+chartTop-8, html.EscapeString(c.Title))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", x0, y0, pw, ph)
	for v := ylo; v <= yhi+ystep/1e6; v += ystep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			x0, py(v), x0+pw, py(v), x0-4, py(v)+4, tick(v, ystep))
	}
	for v := xlo; v <= xhi+xstep/1e6; v += xstep {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(v), y0+ph+14, tick(v, xstep))
	}
	if c.HasMark && c.Mark > xlo && c.Mark < xhi {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbb" stroke-dasharray="3,3"/>`+"\n", px(c.Mark), y0, px(c.Mark), y0+ph)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%s</text>`+"\n", x0+pw/2, y0+ph+27, html.EscapeString(c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(%d,%.1f) rotate(-90)" text-anchor="middle" fill="#555">%s</text>`+"\n", ox+11, y0+ph/2, html.EscapeString(c.YLabel))
	for _, s := range c.Series {
		drawBand(b, s, px, py)
	}
	for _, s := range c.Series {
		var pts []string
		for i := range s.X {
			if i < len(s.Y) && !math.IsNaN(s.Y[i]) && !math.IsNaN(s.X[i]) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
			}
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"><title>%s</title></polyline>`+"\n",
			Color(s.Name), dashAttr(s.Name), strings.Join(pts, " "), html.EscapeString(s.Name))
		if len(pts) <= 12 { // few points: each measured one shows
			for _, p := range pts {
				x, y, _ := strings.Cut(p, ",")
				fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.2" fill="%s"/>`+"\n", x, y, Color(s.Name))
			}
		}
	}
}

// drawBand shades the series' band: a polygon along Hi and back along Lo,
// over the points where both are numbers (one polygon per such run).
func drawBand(b *strings.Builder, s Series, px, py func(float64) float64) {
	if len(s.Lo) != len(s.X) || len(s.Hi) != len(s.X) {
		return
	}
	ok := func(i int) bool { return !math.IsNaN(s.X[i]) && !math.IsNaN(s.Lo[i]) && !math.IsNaN(s.Hi[i]) }
	for i := 0; i < len(s.X); {
		if !ok(i) {
			i++
			continue
		}
		k := i
		for k < len(s.X) && ok(k) {
			k++
		}
		var pts []string
		for j := i; j < k; j++ {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[j]), py(s.Hi[j])))
		}
		for j := k - 1; j >= i; j-- {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[j]), py(s.Lo[j])))
		}
		fmt.Fprintf(b, `<polygon class="band" fill="%s" fill-opacity="0.18" stroke="none" points="%s"><title>%s: low to high</title></polygon>`+"\n",
			Color(s.Name), strings.Join(pts, " "), html.EscapeString(s.Name))
		i = k
	}
}

// bounds is the range of one coordinate over every series (0..1 when
// there is no point).
func (c Chart) bounds(coord func(Series) []float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, v := range coord(s) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo > hi {
		return 0, 1
	}
	return lo, hi
}

// YAxis is the y range a chart draws for data in [lo, hi]: the data with a
// margin of a tenth of their spread, widened to round ticks (about five),
// from zero only when the data start within a spread of it. The step is
// the ticks' distance.
func YAxis(lo, hi float64) (float64, float64, float64) {
	spread, positive := hi-lo, lo >= 0
	if spread <= 0 { // one value: a band around it
		spread = math.Max(math.Abs(hi)/10, 1)
		lo, hi = lo-spread/2, hi+spread/2
	}
	lo, hi = lo-spread/10, hi+spread/10
	if positive && lo < spread {
		lo = 0 // close to zero, or below it only by the margin
	}
	lo, hi, step := Axis(lo, hi)
	if positive && lo < 0 {
		lo = 0
	}
	return lo, hi, step
}

// Axis widens [lo, hi] to multiples of a round step (1, 2 or 5 times a
// power of ten), the one nearest to a fifth of the range: about five
// ticks.
func Axis(lo, hi float64) (float64, float64, float64) {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if math.Abs(math.Log(m*mag/raw)) < math.Abs(math.Log(step/raw)) {
			step = m * mag
		}
	}
	return math.Floor(lo/step+1e-9) * step, math.Ceil(hi/step-1e-9) * step, step
}

// tick writes an axis value with as many decimals as its step needs.
func tick(v, step float64) string {
	d := 0
	for s := step; s < 1-1e-9 && d < 6; s *= 10 {
		d++
	}
	if math.Abs(v) < step/1e6 {
		v = 0
	}
	return fmt.Sprintf("%.*f", d, v)
}
