package sweep

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// SVG layout: one panel per workload, four to a row, each plotting the
// mean unallocated GPU % of every policy against arrived workload from
// svgFrom% to 130%, where the policies part ways (below, every policy
// places nearly everything and the curves coincide with 100 - arrived).
const (
	svgFrom    = 80
	svgTo      = 130
	panelW     = 300
	panelH     = 210
	panelCols  = 4
	plotLeft   = 42
	plotRight  = 12
	plotTop    = 26
	plotBottom = 30
	legendH    = 34
)

var palette = []string{"#7f7f7f", "#bcbd22", "#17becf", "#9467bd", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#8c564b", "#e377c2"}

// WriteSVG draws the cells as a hand-written SVG (no dependencies): the
// curve a user wants to look at rather than read.
func WriteSVG(w io.Writer, cells []Cell, title string) error {
	workloads, policies := axes(cells)
	rows := (len(workloads) + panelCols - 1) / panelCols
	width, height := panelCols*panelW, legendH+rows*panelH+20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="8" y="14" font-size="13" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, p := range policies {
		x := 8 + i*110
		fmt.Fprintf(&b, `<line x1="%d" y1="27" x2="%d" y2="27" stroke="%s" stroke-width="2.5"/><text x="%d" y="31">%s</text>`+"\n", x, x+18, color(i), x+22, html.EscapeString(p))
	}
	for wi, wl := range workloads {
		ox, oy := (wi%panelCols)*panelW, legendH+(wi/panelCols)*panelH
		panel(&b, cells, wl, policies, ox, oy)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func color(i int) string { return palette[i%len(palette)] }

func axes(cells []Cell) (workloads, policies []string) {
	seenW, seenP := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		if !seenW[c.Workload] {
			seenW[c.Workload] = true
			workloads = append(workloads, c.Workload)
		}
		if !seenP[c.Policy] {
			seenP[c.Policy] = true
			policies = append(policies, c.Policy)
		}
	}
	return workloads, policies
}

// panel draws one workload's axes and curves with its origin at (ox, oy).
func panel(b *strings.Builder, cells []Cell, wl string, policies []string, ox, oy int) {
	ymax := 5.0
	for _, c := range cells {
		if c.Workload == wl {
			for k := svgFrom; k <= svgTo; k++ {
				if v := c.Curve[k]; !math.IsNaN(v) {
					ymax = math.Max(ymax, v)
				}
			}
		}
	}
	ymax = math.Ceil(ymax/5) * 5
	pw, ph := float64(panelW-plotLeft-plotRight), float64(panelH-plotTop-plotBottom)
	x0, y0 := float64(ox+plotLeft), float64(oy+plotTop)
	px := func(k float64) float64 { return x0 + (k-svgFrom)/(svgTo-svgFrom)*pw }
	py := func(v float64) float64 { return y0 + ph - v/ymax*ph }
	fmt.Fprintf(b, `<text x="%.1f" y="%d" font-weight="bold">%s</text>`+"\n", x0, oy+plotTop-8, html.EscapeString(wl))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", x0, y0, pw, ph)
	for v := 0.0; v <= ymax; v += ymax / 5 {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="end">%g</text>`+"\n", x0, py(v), x0+pw, py(v), x0-4, py(v)+4, v)
	}
	for k := svgFrom; k <= svgTo; k += 10 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", px(float64(k)), y0+ph+14, k)
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbb" stroke-dasharray="3,3"/>`+"\n", px(100), y0, px(100), y0+ph)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">arrived GPU %% of capacity</text>`+"\n", x0+pw/2, y0+ph+26)
	fmt.Fprintf(b, `<text transform="translate(%d,%.1f) rotate(-90)" text-anchor="middle" fill="#555">unallocated GPU %%</text>`+"\n", ox+11, y0+ph/2)
	for pi, p := range policies {
		for _, c := range cells {
			if c.Workload == wl && c.Policy == p {
				b.WriteString(polyline(c.Curve[:], px, py, color(pi)))
			}
		}
	}
}

func polyline(curve []float64, px, py func(float64) float64, stroke string) string {
	var pts []string
	for k := svgFrom; k <= svgTo; k++ {
		if v := curve[k]; !math.IsNaN(v) {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(k)), py(v)))
		}
	}
	return fmt.Sprintf(`<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", stroke, strings.Join(pts, " "))
}
