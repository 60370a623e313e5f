package sweep

import (
	"io"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/picture"
)

// The plot shows, per workload, the mean unallocated GPU % of every policy
// against arrived workload from svgFrom% to svgTo%, where the policies
// part ways (below, every policy places nearly everything and the curves
// coincide with 100 - arrived; from 80%, the 20 points of that slope set
// the y axis and a point between policies was a pixel). Drawn by package
// picture: each policy in its own colour whatever the order of -p, the y
// axis spanning the curves.
const (
	svgFrom   = 95
	svgTo     = 130
	panelCols = 4
)

// WriteSVG draws the cells as a hand-written SVG (no dependencies): the
// curve a user wants to look at rather than read.
func WriteSVG(w io.Writer, cells []Cell, title string) error {
	workloads, policies := axes(cells)
	var charts []picture.Chart
	for _, wl := range workloads {
		ch := picture.Chart{Title: wl, XLabel: "arrived GPU % of capacity", YLabel: "unallocated GPU %", Mark: 100, HasMark: true}
		for _, p := range policies {
			for _, c := range cells {
				if c.Workload == wl && c.Policy == p {
					ch.Series = append(ch.Series, curveSeries(p, c.Curve[:]))
				}
			}
		}
		charts = append(charts, ch)
	}
	return picture.Panels(w, title, charts, panelCols)
}

// curveSeries is a policy's curve between svgFrom and svgTo.
func curveSeries(name string, curve []float64) picture.Series {
	s := picture.Series{Name: name}
	for k := svgFrom; k <= svgTo && k < len(curve); k++ {
		s.X, s.Y = append(s.X, float64(k)), append(s.Y, curve[k])
	}
	return s
}

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
